// What a v1.Node says about who may go there (kube/node_fit.h `node_facts`, alloxd's
// `node_inventory` and `closed_because`) on arbitrary JSON, then every fixed pod's placement
// (kube::PodPlacement) asked about it. The input is read as a node, and so is each node inside
// it that alloxd meets: a watch event's `object`, a NodeList's `items`, an ExtenderArgs body's
// `Nodes.items` (the first few of each). Nothing may throw or crash, and:
//   - node_inventory's facts are node_facts of the node; closed is closed_because of them, and a
//     closed node offers no machine;
//   - refuses() answers the same twice, is its three filters in kube-scheduler's order, and
//     NodeAffinity reads the node's JSON labels as it reads node_facts' labels;
//   - a pod that states nothing is refused only for a cordon or a NoSchedule/NoExecute taint,
//     and a pod tolerating everything (`operator: Exists`, no key) with no affinity never is.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "alloxd/config.h"
#include "alloxd/control/cluster_api.h"
#include "extender_api/wire.h"
#include "kube/node_fit.h"

namespace {

using namespace allox;
using nlohmann::json;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_node: %s\n", what);
  std::abort();
}

// Pods as tenants write them: nothing; tolerating everything; a dedicated team's toleration; a
// GPU pod's; one that tolerates the cordon; a nodeSelector; required affinity with every
// operator and matchFields; and affinity that names nodes (the PreFilter's list).
const std::vector<kube::PodPlacement>& fixed_pods() {
  static const std::vector<kube::PodPlacement> pods = [] {
    const char* specs[] = {
        R"({})",
        R"({"tolerations":[{"operator":"Exists"}]})",
        R"({"tolerations":[{"key":"dedicated","operator":"Equal","value":"team-a","effect":"NoSchedule"},
            {"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute",
             "tolerationSeconds":300}]})",
        R"({"tolerations":[{"key":"nvidia.com/gpu","operator":"Exists"}],
            "nodeSelector":{"nvidia.com/gpu.product":"NVIDIA-A100-SXM4-80GB"}})",
        R"({"tolerations":[{"key":"node.kubernetes.io/unschedulable","operator":"Exists",
            "effect":"NoSchedule"}]})",
        R"({"nodeSelector":{"kubernetes.io/os":"linux","pool":"gpu"}})",
        R"({"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms":[
              {"matchExpressions":[{"key":"zone","operator":"In","values":["a","b"]},
                                   {"key":"spot","operator":"DoesNotExist"}]},
              {"matchExpressions":[{"key":"gpus","operator":"Gt","values":["3"]},
                                   {"key":"gen","operator":"Lt","values":["-1"]},
                                   {"key":"pool","operator":"NotIn","values":["cpu"]},
                                   {"key":"kubernetes.io/os","operator":"Exists"}]},
              {"matchFields":[{"key":"metadata.name","operator":"NotIn","values":["node-a"]}],
               "matchExpressions":[{"key":"team","operator":"In","values":["a"]}]}]}}},
            "tolerations":[{"operator":"Exists","effect":"NoSchedule"}]})",
        R"({"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms":[
              {"matchFields":[{"key":"metadata.name","operator":"In","values":["node-a"]}]},
              {"matchFields":[{"key":"metadata.name","operator":"In","values":["gpu-1"]}]}]}}}})",
        R"({"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms":[]}}}})",
    };
    std::vector<kube::PodPlacement> out;
    for (const char* spec : specs) out.emplace_back(json{{"spec", json::parse(spec)}});
    return out;
  }();
  return pods;
}

const extender::DeviceMapping& mapping() {
  static const extender::DeviceMapping m = [] {
    extender::DeviceMapping d;
    d.resources = {{"nvidia.com/gpu",
                    "gpu",
                    {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB", "a100"},
                     {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3", "h100"},
                     {"cloud.google.com/gke-accelerator", "nvidia-tesla-t4", "t4"}}},
                   {"google.com/tpu", "tpu", {}}};
    return d;
  }();
  return m;
}

void check_placement(const kube::PodPlacement& pod, const kube::NodeFacts& facts,
                     const json& node) {
  const std::optional<std::string> first = pod.refuses(facts);
  if (pod.refuses(facts) != first) fail("refuses() answered twice differently");
  // refuses() is the three filters in order.
  std::optional<std::string> expected;
  if (facts.unschedulable && !pod.tolerates_unschedulable()) {
    expected = std::string(kube::kUnschedulableReason);
  } else if (const kube::Taint* taint = pod.untolerated(facts.taints)) {
    if (!kube::blocks_scheduling(*taint)) fail("untolerated() gave a taint that does not block");
    expected = kube::untolerated_taint_reason(*taint);
  } else if (pod.affinity().any() && !pod.affinity().matches(facts.labels, facts.name)) {
    expected = std::string(kube::kNodeAffinityReason);
  }
  if (first != expected) fail("refuses() is not its three filters in order");
  // The JSON overload reads the same labels.
  if (pod.affinity().matches(&node, facts.name) != pod.affinity().matches(facts.labels, facts.name))
    fail("NodeAffinity::matches reads the node's JSON and its facts differently");
}

void read_node(const json& node) {
  const kube::NodeFacts facts = kube::node_facts(node);
  if (!(kube::node_facts(node) == facts)) fail("node_facts answered twice differently");
  const std::string closed = extender::closed_because(facts);
  if (!facts.unschedulable && closed.starts_with("cordoned")) fail("closed as cordoned");
  auto inventory = extender::node_inventory(node, mapping());
  if (inventory) {
    if (!(inventory->facts == facts)) fail("node_inventory's facts are not node_facts'");
    if (inventory->closed != closed) fail("node_inventory's closed is not closed_because");
    if (!inventory->closed.empty() && !inventory->machines.empty())
      fail("a closed node offers machines");
    if (inventory->name.empty()) fail("an accepted node without a name");
    for (const auto& [device, count] : inventory->machines) {
      if (device.empty() || count < 1 || count > 4096) fail("machine count out of range");
    }
  } else if (inventory.message().empty()) {
    fail("node_inventory's error says nothing");
  }
  const std::vector<kube::PodPlacement>& pods = fixed_pods();
  for (const kube::PodPlacement& pod : pods) check_placement(pod, facts, node);
  // Nothing stated: only the cordon and blocking taints refuse.
  bool blocking = false;
  for (const kube::Taint& taint : facts.taints)
    blocking = blocking || kube::blocks_scheduling(taint);
  if (pods[0].refuses(facts).has_value() != (facts.unschedulable || blocking))
    fail("a pod stating nothing was refused for something else, or let through a taint");
  if (pods[1].refuses(facts).has_value()) fail("a pod tolerating everything was refused");
}

// The first few nodes of a list (a hostile list must not make one input slow).
void read_list(const json* list) {
  if (list == nullptr || !list->is_array()) return;
  std::size_t n = 0;
  for (const json& node : *list) {
    if (++n > 8) break;
    read_node(node);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto value = extender::parse_json_body(text);
  if (!value) return 0;
  read_node(*value);
  if (!value->is_object()) return 0;
  if (const json* object = extender::find_key(*value, "object")) read_node(*object);
  read_list(extender::find_key(*value, "items"));
  if (const json* nodes = extender::find_key(*value, "Nodes"); nodes && nodes->is_object())
    read_list(extender::find_key(*nodes, "items"));
  return 0;
}
