// Pods in the emulator's fake API server, for the extender tests: alloxd binds and deletes real
// API objects there (a binding needs the pod and its uid, as kube-apiserver does), so a test
// creates the pods kube-scheduler would send and reads back where they were bound.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kubesim/fake_api_server.h"

namespace allox::extender::testing {

// Options for a fake API server that requires `token`.
emulator::FakeApiServerOptions api_options(const std::string& token);

// The stored pod (with the uid the API server gave it): created from `pod` (its uid dropped),
// or the one already stored under that namespace/name. Fails the test on any other error.
nlohmann::json pod_in_api(emulator::FakeApiServer& api, nlohmann::json pod);

bool pod_exists(emulator::FakeApiServer& api, const std::string& namespace_name,
                const std::string& name);

struct BoundPod {
  std::string namespace_name, name, node;
};
// Every pod with spec.nodeName set, in key order.
std::vector<BoundPod> bound_pods(emulator::FakeApiServer& api);

}  // namespace allox::extender::testing
