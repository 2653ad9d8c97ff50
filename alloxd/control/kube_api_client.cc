// ClusterApi over kube::KubeClient (see cluster_api.h).
#include <cmath>

#include "alloxd/control/cluster_api.h"
#include "alloxd/model/pod.h"
#include "kube/quantity.h"

namespace allox::extender {
namespace {

using nlohmann::json;

class KubeBinder final : public ClusterApi {
 public:
  explicit KubeBinder(kube::KubeClient& client) : client_(client) {}

  Status bind(const BindingArgs& binding) override {
    const std::string namespace_name =
        binding.pod_namespace.empty() ? "default" : binding.pod_namespace;
    json body = {
        {"apiVersion", "v1"},
        {"kind", "Binding"},
        {"metadata",
         {{"name", binding.pod_name}, {"namespace", namespace_name}, {"uid", binding.pod_uid}}},
        {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", binding.node}}}};
    const std::string what =
        "binding " + namespace_name + "/" + binding.pod_name + " to " + binding.node;
    auto reply = client_.call("POST",
                              "/api/v1/namespaces/" + kube::escape(namespace_name) + "/pods/" +
                                  kube::escape(binding.pod_name) + "/binding",
                              body.dump());
    if (!reply) return Error{what + ": " + reply.message()};
    if (reply->status != 201 && reply->status != 200) {
      return Error{what + ": API server answered " + std::to_string(reply->status) + ": " +
                   reply->body.substr(0, 300)};
    }
    return OkStatus();
  }

  Expected<std::optional<json>> pod(const std::string& namespace_name,
                                    const std::string& name) override {
    const std::string what = "reading pod " + namespace_name + "/" + name;
    auto reply = client_.call("GET", "/api/v1/namespaces/" + kube::escape(namespace_name) +
                                         "/pods/" + kube::escape(name));
    if (!reply) return Error{what + ": " + reply.message()};
    if (reply->status == 404) return std::optional<json>{};
    if (reply->status != 200) {
      return Error{what + ": API server answered " + std::to_string(reply->status) + ": " +
                   reply->body.substr(0, 300)};
    }
    json pod = json::parse(reply->body, nullptr, false);
    if (!pod.is_object()) return Error{what + ": the reply is not a JSON object"};
    return std::optional<json>{std::move(pod)};
  }

 private:
  kube::KubeClient& client_;
};

}  // namespace

std::unique_ptr<ClusterApi> make_kube_binder(kube::KubeClient& client) {
  return std::make_unique<KubeBinder>(client);
}

std::string closed_because(const kube::NodeFacts& node) {
  if (node.unschedulable) return "cordoned (spec.unschedulable)";
  // Kubernetes' own taints (the node lifecycle controller's, the kubelet's, the cloud
  // provider's) say the node is not ready, unreachable, out of service or not initialised: no
  // job pod tolerates them in practice. Any other taint is a matter of each pod's tolerations.
  for (const kube::Taint& taint : node.taints) {
    if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") continue;
    if (taint.key.starts_with("node.kubernetes.io/") ||
        taint.key.starts_with("node.cloudprovider.kubernetes.io/")) {
      return "tainted " + taint.key + ":" + taint.effect;
    }
  }
  return "";
}

// More machines of one type than any node has: a status claiming more (`nvidia.com/gpu: 1Ti`)
// is refused, so one node's status cannot fill the book with slots.
constexpr int kMaxNodeMachines = 4096;

Expected<NodeInventory> node_inventory(const json& node, const DeviceMapping& devices) {
  if (!node.is_object()) return Error{"node: expected an object"};
  NodeInventory inventory;
  const json* metadata = find_key(node, "metadata");
  const json* name =
      metadata != nullptr && metadata->is_object() ? find_key(*metadata, "name") : nullptr;
  if (name == nullptr || !name->is_string()) return Error{"node: metadata.name missing"};
  inventory.name = name->get<std::string>();
  // Its labels say which model its devices are (DeviceMapping::node_device); non-string values
  // are no label a rule could match.
  inventory.facts = kube::node_facts(node);
  const std::map<std::string, std::string>& labels = inventory.facts.labels;
  inventory.closed = closed_because(inventory.facts);
  const json* status = find_key(node, "status");
  const json* allocatable =
      status != nullptr && status->is_object() ? find_key(*status, "allocatable") : nullptr;
  if (allocatable == nullptr || !allocatable->is_object()) return inventory;
  for (const auto& [resource, quantity] : allocatable->items()) {
    if (!quantity.is_string()) continue;
    auto amount = kube::parse_quantity(quantity.get<std::string>());
    if (!amount) return Error{"node " + inventory.name + ": " + resource + ": " + amount.message()};
    DeviceType type = devices.cpu_device;
    double machines = std::floor(*amount / devices.cores_per_machine);
    if (resource != "cpu") {
      auto device = devices.node_device(resource, labels);
      if (!device) return Error{"node " + inventory.name + ": " + device.message()};
      if (!*device) continue;  // not a device (memory, pods, ...), whatever its size
      type = **device;
      machines = std::floor(*amount);
    }
    // Compared as a double: a count past int's range does not convert.
    if (machines > kMaxNodeMachines) {
      return Error{"node " + inventory.name + ": status.allocatable." + resource + ": " +
                   quantity.get<std::string>() + " makes more than " +
                   std::to_string(kMaxNodeMachines) + " machines of one type on one node"};
    }
    if (machines >= 1) inventory.machines[type] += static_cast<int>(machines);
  }
  // Checked whole first (a malformed count is an error whether or not the node is open).
  if (!inventory.closed.empty()) inventory.machines.clear();
  return inventory;
}

}  // namespace allox::extender
