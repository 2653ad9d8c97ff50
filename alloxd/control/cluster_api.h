// How alloxd binds a pod, behind a small interface so the verbs can run against the API server
// (make_kube_binder), a test double, or none at all (binds are then only recorded):
//
//   bind   POST a v1.Binding to /api/v1/namespaces/{ns}/pods/{name}/binding
//   pod    GET /api/v1/namespaces/{ns}/pods/{name}: whose pod a /bind names when neither the
//          book nor the watch knows it (verbs.h), never to decide anything else
//
// and how a v1.Node reads as machine slots. Everything else alloxd does on the cluster (the
// watch, gates, deletions, events, the Lease) lives in kube/ and the controller.
//
// Implementations must be thread-safe; bind may block for one bounded API call.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "alloxd/config.h"
#include "core/result.h"
#include "extender_api/wire.h"
#include "kube/client.h"

namespace allox::extender {

// Where the API server shows a pod bound: what settles a bind intent (Planner::reconcile_binds).
struct PodPlacement {
  PodIdentity pod;
  bool exists = true;     // false: the API server answered 404
  std::string node_name;  // spec.nodeName; empty while unbound
  std::string phase;      // status.phase
};

class ClusterApi {
 public:
  virtual ~ClusterApi() = default;
  virtual Status bind(const BindingArgs& binding) = 0;
  // The pod as the API server holds it now; std::nullopt when it does not exist (404).
  virtual Expected<std::optional<nlohmann::json>> pod(const std::string& namespace_name,
                                                      const std::string& name) = 0;
};

// Binds through `client`, which must outlive the binder.
std::unique_ptr<ClusterApi> make_kube_binder(kube::KubeClient& client);

// Machine slots of a v1.Node from its status.allocatable: one per unit of each mapped resource,
// of the type its metadata.labels give it (DeviceMapping::node_device: a GPU model's type, else
// the resource's plain type), and floor(cpu / cores_per_machine) CPU machines. Errors name the
// malformed field, a count of more than 4,096 machines of one type, or the two labels that give
// the node two types. The node's facts (labels, taints, cordon) come along; a closed node
// (closed_because) offers no machine, once its counts have been checked.
Expected<NodeInventory> node_inventory(const nlohmann::json& node, const DeviceMapping& devices);

// Why a node takes no new job whatever the pod: cordoned (spec.unschedulable), or a NoSchedule or
// NoExecute taint of Kubernetes' own (`node.kubernetes.io/...`: not ready, unreachable, out of
// service; `node.cloudprovider.kubernetes.io/uninitialized`). Empty when it may take some pod;
// other taints are weighed against each pod's tolerations (JobVariant::placement).
std::string closed_because(const kube::NodeFacts& node);

}  // namespace allox::extender
