#include "alloxd/model/pod_placement.h"

#include <algorithm>

#include "alloxd/model/pod.h"
#include "kube/pods.h"

namespace allox::extender {
namespace {

using nlohmann::json;

const json* present(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

// spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution, or null.
const json* required_affinity(const json& spec) {
  const json* affinity = present(spec, "affinity");
  const json* node_affinity = affinity != nullptr ? present(*affinity, "nodeAffinity") : nullptr;
  return node_affinity != nullptr
             ? present(*node_affinity, "requiredDuringSchedulingIgnoredDuringExecution")
             : nullptr;
}

Status over_bound(const char* field, std::size_t count, const char* what) {
  return Error{std::string(field) + ": " + std::to_string(count) + " " + what + ", over the " +
               std::to_string(kMaxPodConstraints) + " alloxd reads"};
}

}  // namespace

Status check_pod_constraints(const json& pod) {
  const json* spec = present(pod, "spec");
  if (spec == nullptr || !spec->is_object()) return OkStatus();
  if (const json* selector = present(*spec, "nodeSelector");
      selector != nullptr && selector->is_object() && selector->size() > kMaxPodConstraints) {
    return over_bound("Pod.spec.nodeSelector", selector->size(), "labels");
  }
  if (const json* tolerations = present(*spec, "tolerations");
      tolerations != nullptr && tolerations->is_array() &&
      tolerations->size() > kMaxPodConstraints) {
    return over_bound("Pod.spec.tolerations", tolerations->size(), "tolerations");
  }
  const json* required = required_affinity(*spec);
  const json* terms = required != nullptr ? present(*required, "nodeSelectorTerms") : nullptr;
  if (terms == nullptr || !terms->is_array()) return OkStatus();
  std::size_t requirements = 0;
  for (const json& term : *terms) {
    std::size_t in_term = 0;
    for (const char* list : {"matchExpressions", "matchFields"}) {
      const json* items = present(term, list);
      if (items != nullptr && items->is_array()) in_term += items->size();
    }
    requirements += std::max<std::size_t>(1, in_term);  // 10,000 empty terms cost as much
  }
  if (requirements > kMaxPodConstraints) {
    return over_bound(
        "Pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
        requirements, "node selector requirements");
  }
  return OkStatus();
}

PodConstraints read_pod_constraints(const json& pod) {
  const json* spec = present(pod, "spec");
  if (spec == nullptr || !spec->is_object()) return {};
  json pod_kept = {{"spec", json::object()}};  // what the placement reads, built in place
  json& kept = pod_kept["spec"];
  if (const json* selector = present(*spec, "nodeSelector");
      selector != nullptr && selector->is_object() && !selector->empty()) {
    kept["nodeSelector"] = *selector;
  }
  const json* required = required_affinity(*spec);
  if (required != nullptr && kube::pinned_node(pod).empty()) {
    kept["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = *required;
  }
  if (const json* tolerations = present(*spec, "tolerations");
      tolerations != nullptr && tolerations->is_array() && !tolerations->empty()) {
    kept["tolerations"] = *tolerations;
  }
  if (kept.empty()) return {};
  PodConstraints constraints;
  constraints.key = kept.dump();
  constraints.placement = std::make_shared<const kube::PodPlacement>(pod_kept);
  return constraints;
}

std::optional<std::string> JobVariant::refusal(const kube::NodeFacts& node) const {
  if (placement != nullptr) return placement->refuses(node);
  if (node.taints.empty() && !node.unschedulable) return std::nullopt;
  static const kube::PodPlacement kStatesNothing;
  return kStatesNothing.refuses(node);
}

bool JobVariant::may_go_to(const kube::NodeFacts& node) const {
  return !refusal(node).has_value();
}

}  // namespace allox::extender
