// The pod reader (alloxd/model/pod.h) on arbitrary JSON: the whole document, or its `Pod` member
// when it is an ExtenderArgs body, is read as a job variant, and the raw bytes as a quantity.
// Nothing may throw or crash (UBSan aborts on an out-of-range conversion too), and an accepted
// variant holds what the scheduler assumes: a name, a job id, a user, a device, and hints and
// iterations that are positive and finite.
// Each pod's constraints on nodes (alloxd/model/pod_placement.h `read_pod_constraints`) are asked
// about fixed nodes (plain, tainted, cordoned, not ready, labelled): a placement exactly when
// there is a key; the key reads back as itself; refuses() answers the same twice, is its three
// filters in kube-scheduler's order, and is what the whole pod's kube::PodPlacement answers
// (alloxd's own pin aside); NodeAffinity reads a node's JSON labels as it reads its facts; and
// JobVariant::may_go_to is "not refused".
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "alloxd/config.h"
#include "alloxd/model/pod.h"
#include "alloxd/model/pod_placement.h"
#include "extender_api/wire.h"
#include "kube/node_fit.h"
#include "kube/pods.h"
#include "kube/quantity.h"

namespace {

using namespace allox::extender;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_pod: %s\n", what);
  std::abort();
}

using nlohmann::json;

struct FixedNode {
  json object;
  allox::kube::NodeFacts facts;
};

const std::vector<FixedNode>& fixed_nodes() {
  static const std::vector<FixedNode> nodes = [] {
    const char* objects[] = {
        R"({"metadata":{"name":"node-a","labels":{"kubernetes.io/hostname":"node-a",
            "kubernetes.io/os":"linux"}}})",
        R"({"metadata":{"name":"gpu-1","labels":{"kubernetes.io/os":"linux","pool":"gpu",
            "nvidia.com/gpu.product":"NVIDIA-A100-SXM4-80GB","zone":"a","gpus":"8","gen":"-3"}},
            "spec":{"taints":[{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"},
            {"key":"spot","effect":"PreferNoSchedule"}]}})",
        R"({"metadata":{"name":"team-a-1","labels":{"team":"a","dedicated":"team-a"}},
            "spec":{"taints":[{"key":"dedicated","value":"team-a","effect":"NoSchedule"},
            {"key":"dedicated","value":"team-a","effect":"NoExecute"}]}})",
        R"({"metadata":{"name":"cordoned","labels":{"kubernetes.io/os":"linux"}},
            "spec":{"unschedulable":true,"taints":[{"key":"node.kubernetes.io/unschedulable",
            "effect":"NoSchedule","timeAdded":"2024-01-01T00:00:00Z"}]}})",
        R"({"metadata":{"name":"not-ready"},"spec":{"taints":[
            {"key":"node.kubernetes.io/not-ready","effect":"NoExecute"},
            {"key":"node.kubernetes.io/not-ready","effect":"NoSchedule"}]}})",
        R"({"metadata":{"name":""}})",
    };
    std::vector<FixedNode> out;
    for (const char* object : objects) {
      json node = json::parse(object);
      allox::kube::NodeFacts facts = allox::kube::node_facts(node);
      out.push_back({std::move(node), std::move(facts)});
    }
    return out;
  }();
  return nodes;
}

void check_refuses(const allox::kube::PodPlacement& pod, const FixedNode& node) {
  const allox::kube::NodeFacts& facts = node.facts;
  const std::optional<std::string> first = pod.refuses(facts);
  if (pod.refuses(facts) != first) fail("refuses() answered twice differently");
  std::optional<std::string> expected;
  if (facts.unschedulable && !pod.tolerates_unschedulable()) {
    expected = std::string(allox::kube::kUnschedulableReason);
  } else if (const allox::kube::Taint* taint = pod.untolerated(facts.taints)) {
    expected = allox::kube::untolerated_taint_reason(*taint);
  } else if (pod.affinity().any() && !pod.affinity().matches(facts.labels, facts.name)) {
    expected = std::string(allox::kube::kNodeAffinityReason);
  }
  if (first != expected) fail("refuses() is not its three filters in order");
  if (pod.affinity().matches(&node.object, facts.name) !=
      pod.affinity().matches(facts.labels, facts.name)) {
    fail("NodeAffinity::matches reads a node's JSON and its facts differently");
  }
}

void read_constraints(const json& pod) {
  const PodConstraints constraints = read_pod_constraints(pod);
  if ((constraints.placement == nullptr) != constraints.key.empty())
    fail("a placement without a key, or a key without a placement");
  static const allox::kube::PodPlacement kStatesNothing;
  const allox::kube::PodPlacement& placement =
      constraints.placement != nullptr ? *constraints.placement : kStatesNothing;
  if (!constraints.key.empty()) {
    const json kept = json::parse(constraints.key, nullptr, /*allow_exceptions=*/false);
    if (!kept.is_object()) fail("the key is not a JSON object");
    if (read_pod_constraints(json{{"spec", kept}}).key != constraints.key)
      fail("the key does not read back as itself");
  }
  // The whole pod, as kube-scheduler reads it, unless alloxd's own pin was left out.
  const bool pinned = !allox::kube::pinned_node(pod).empty();
  const allox::kube::PodPlacement whole(pod);
  JobVariant variant;
  variant.placement = constraints.placement;
  for (const FixedNode& node : fixed_nodes()) {
    check_refuses(placement, node);
    check_refuses(whole, node);
    const auto refused = placement.refuses(node.facts);
    if (!pinned && refused != whole.refuses(node.facts))
      fail("the kept constraints refuse otherwise than the whole pod");
    if (variant.may_go_to(node.facts) == refused.has_value())
      fail("may_go_to is not \"not refused\"");
  }
}

void read(const nlohmann::json& pod, const DeviceMapping& mapping) {
  (void)pod_identity(pod);
  read_constraints(pod);
  auto variant = read_job_variant(pod, mapping);
  if (!variant) return;
  if (variant->pod.name.empty()) fail("accepted variant: empty pod name");
  if (variant->pod.namespace_name.empty()) fail("accepted variant: empty namespace");
  if (variant->job_id.empty()) fail("accepted variant: empty job id");
  if (variant->user.empty()) fail("accepted variant: empty user");
  if (variant->device.empty()) fail("accepted variant: empty device");
  if (variant->iterations && *variant->iterations < 1) fail("accepted variant: iterations < 1");
  for (const auto& [device, seconds] : variant->time_hints) {
    if (!(seconds > 0) || !std::isfinite(seconds))
      fail("accepted variant: time hint not positive and finite");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (size <= 64) {
    auto quantity = allox::kube::parse_quantity(text);
    if (quantity && !(*quantity >= 0)) fail("quantity: negative or NaN");
  }
  static const DeviceMapping mapping = [] {
    DeviceMapping m;
    m.resources = {{"nvidia.com/gpu", "gpu"}, {"google.com/tpu", "tpu"}};
    return m;
  }();
  auto value = parse_json_body(text);
  if (!value) return 0;
  read(*value, mapping);
  if (value->is_object()) {
    if (const nlohmann::json* pod = find_key(*value, "Pod")) read(*pod, mapping);
  }
  return 0;
}
