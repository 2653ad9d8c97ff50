// What the extender needs from the Kubernetes API server, behind a small interface so the
// service can run against a real API server (KubeApiClient), a test double, or none at all (the
// inventory comes from the config file and binds are only recorded).
//
//   bind        POST a v1.Binding to /api/v1/namespaces/{ns}/pods/{name}/binding
//   list_nodes  GET /api/v1/nodes, turning allocatable resources into machine slots
//   pod_phase   GET /api/v1/namespaces/{ns}/pods/{name}: its status.phase; "Gone" when 404
//   get_pod     GET /api/v1/namespaces/{ns}/pods/{name}: where it is bound (spec.nodeName)
//   delete_pod  DELETE a pod (an unused device variant once its job is bound)
//
// Implementations must be thread-safe; calls may block for a network round trip.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "extender/config.h"
#include "extender/wire.h"

namespace allox::extender {

// A pod as the API server shows it.
struct ObservedPod {
  PodIdentity pod;
  bool exists = true;     // false: the API server answered 404
  std::string node_name;  // spec.nodeName; empty while unbound
  std::string phase;      // status.phase
};

class ClusterApi {
 public:
  virtual ~ClusterApi() = default;
  virtual Status bind(const BindingArgs& binding) = 0;
  virtual Expected<std::vector<NodeInventory>> list_nodes(const DeviceMapping& devices) = 0;
  virtual Expected<std::string> pod_phase(const std::string& namespace_name,
                                          const std::string& name) = 0;
  virtual Expected<ObservedPod> get_pod(const std::string& namespace_name,
                                        const std::string& name) = 0;
  virtual Status delete_pod(const std::string& namespace_name, const std::string& name) = 0;
};

// Talks to the API server at config.url with a bearer token; https URLs verify the server with
// config.ca_file when it is given. Requests time out after 10 s.
std::unique_ptr<ClusterApi> make_kube_api_client(const ApiServerConfig& config);

// Machine slots of a v1.Node from its status.allocatable: one per unit of each mapped resource,
// and floor(cpu / cores_per_machine) CPU machines. Errors name the malformed field.
Expected<NodeInventory> node_inventory(const nlohmann::json& node, const DeviceMapping& devices);

}  // namespace allox::extender
