#include "alloxd/model/pod_placement.h"

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

}  // namespace

PodConstraints read_pod_constraints(const json& pod) {
  const json* spec = present(pod, "spec");
  if (spec == nullptr || !spec->is_object()) return {};
  json kept = json::object();
  if (const json* selector = present(*spec, "nodeSelector");
      selector != nullptr && selector->is_object() && !selector->empty()) {
    kept["nodeSelector"] = *selector;
  }
  const json* affinity = present(*spec, "affinity");
  const json* node_affinity = affinity != nullptr ? present(*affinity, "nodeAffinity") : nullptr;
  const json* required =
      node_affinity != nullptr
          ? present(*node_affinity, "requiredDuringSchedulingIgnoredDuringExecution")
          : nullptr;
  if (required != nullptr && kube::pinned_node(pod).empty()) {
    kept["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = *required;
  }
  if (const json* tolerations = present(*spec, "tolerations");
      tolerations != nullptr && tolerations->is_array() && !tolerations->empty()) {
    kept["tolerations"] = *tolerations;
  }
  if (kept.empty()) return {};
  PodConstraints constraints;
  constraints.placement = std::make_shared<const kube::PodPlacement>(json{{"spec", kept}});
  constraints.key = kept.dump();
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
