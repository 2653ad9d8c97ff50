#include "tests/alloxd/testing/api_pods.h"

#include <gtest/gtest.h>

namespace allox::extender::testing {

using nlohmann::json;

emulator::FakeApiServerOptions api_options(const std::string& token) {
  emulator::FakeApiServerOptions options;
  options.token = token;
  return options;
}

json pod_in_api(emulator::FakeApiServer& api, json pod) {
  const json& meta = pod["metadata"];
  const std::string ns = meta.value("namespace", ""), name = meta.value("name", "");
  auto stored = api.objects().get(emulator::pods_resource(), ns, name);
  if (!emulator::failed(stored)) return *std::get<emulator::ObjectPtr>(stored);
  pod["metadata"].erase("uid");
  auto created = api.objects().create(emulator::pods_resource(), ns, std::move(pod));
  if (emulator::failed(created)) {
    ADD_FAILURE() << "creating pod " << ns << "/" << name << ": "
                  << std::get<emulator::ApiError>(created).message;
    return json::object();
  }
  return *std::get<emulator::ObjectPtr>(created);
}

bool pod_exists(emulator::FakeApiServer& api, const std::string& namespace_name,
                const std::string& name) {
  return !emulator::failed(api.objects().get(emulator::pods_resource(), namespace_name, name));
}

std::vector<BoundPod> bound_pods(emulator::FakeApiServer& api) {
  std::vector<BoundPod> bound;
  for (const emulator::ObjectPtr& pod : api.objects().objects(emulator::pods_resource())) {
    const json spec = pod->value("spec", json::object());
    const std::string node = spec.value("nodeName", "");
    if (node.empty()) continue;
    const json& meta = (*pod)["metadata"];
    bound.push_back({meta.value("namespace", ""), meta.value("name", ""), node});
  }
  return bound;
}

}  // namespace allox::extender::testing
