// A small fake Kubernetes API server for the extender tests (not a real API server: only the
// four calls alloxd makes). It listens on a free loopback port and
//   - records every POST .../pods/{name}/binding (answering 201, 409 for a pod already bound, or
//     the status set with fail_binds_with()),
//   - serves GET /api/v1/nodes from the nodes given to it (status.allocatable),
//   - serves GET .../pods/{name} for bound pods (spec.nodeName, phase Running) and pods given a
//     phase by set_pod_phase(); 404 for others,
//   - records DELETE .../pods/{name}.
// It checks the bearer token it was given. Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace allox::extender::testing {

class FakeApiServer {
 public:
  struct Binding {
    std::string namespace_name, pod, node;
  };

  // allocatable: per node, resource name -> quantity (e.g. {"cpu": "64", "nvidia.com/gpu": "4"}).
  FakeApiServer(std::map<std::string, std::map<std::string, std::string>> allocatable,
                std::string token);
  ~FakeApiServer();

  std::string url() const { return url_; }
  std::vector<Binding> bindings() const;
  std::vector<std::string> deleted_pods() const;  // "namespace/name"
  int unauthorized_requests() const;
  void fail_binds_with(int status);  // 0: succeed again
  void set_pod_phase(const std::string& namespace_name, const std::string& name,
                     const std::string& phase);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string url_;
};

}  // namespace allox::extender::testing
