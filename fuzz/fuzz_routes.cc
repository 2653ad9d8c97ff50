// alloxd's HTTP routes (alloxd/http/routes.h route()) with a live service, on arbitrary requests.
// An input is "METHOD PATH\nBODY" (seeds: the real kube-scheduler bodies under their verbs), sent
// with the admin token so the admin endpoints are reached too. No request may get a 5xx: a bad
// body is the client's fault (4xx naming the field), and an exception escaping route() is what
// the HTTP server would answer with 500. The service runs the fifo policy on a small in-memory
// cluster and is re-created every few thousand inputs, so its book stays small and fast. Every
// other input is routed as with real-time request threads, whose per-call caps (at most 4
// candidate nodes here) must answer 413, never more work.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

#include "alloxd/http/routes.h"
#include "alloxd/service.h"
#include "core/thread_priority.h"
#include "extender_api/wire.h"
#include "fairness/policy.h"

namespace {

using namespace allox::extender;

constexpr const char* kToken = "fuzz-token";
constexpr int kInputsPerService = 5000;

std::unique_ptr<ExtenderService> make_service() {
  ExtenderConfig config;
  config.database = ":memory:";
  config.policy = "fifo";
  config.admin_token = kToken;
  config.limits.realtime_node_names = 4;
  config.devices.resources = {{"nvidia.com/gpu", "gpu"}};
  config.nodes = {{"gpu-node-1", {{"gpu", 2}}},
                  {"gpu-node-2", {{"gpu", 1}, {"cpu", 1}}},
                  {"cpu-node-1", {{"cpu", 1}}}};
  auto policy = allox::make_policy(config.policy, allox::PolicyOptions{});
  if (!policy) {
    std::fprintf(stderr, "fuzz_routes: %s\n", policy.message().c_str());
    std::abort();
  }
  ServiceOptions options;
  options.first_plan_wait = std::chrono::milliseconds(0);  // answer from the plan at hand
  auto service = ExtenderService::create(config, std::move(*policy), nullptr, options);
  if (!service) {
    std::fprintf(stderr, "fuzz_routes: %s\n", service.message().c_str());
    std::abort();
  }
  (*service)->start();
  (*service)->solve_now();
  return std::move(*service);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static std::unique_ptr<ExtenderService> service;
  static int served = 0;
  if (!service || served++ == kInputsPerService) {
    service.reset();
    service = make_service();
    served = 0;
  }

  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::size_t line_end = input.find('\n');
  const std::string line = input.substr(0, line_end);
  const std::size_t space = line.find(' ');
  HttpRequest request;
  request.method = space == std::string::npos ? "POST" : line.substr(0, space);
  request.path = space == std::string::npos ? line : line.substr(space + 1);
  request.authorization = std::string("Bearer ") + kToken;
  request.body = line_end == std::string::npos ? "" : input.substr(line_end + 1);

  const bool realtime = size % 2 == 1;
  allox::set_request_class(realtime ? allox::RequestClass::kRealtime : allox::RequestClass::kNormal);
  HttpReply reply;
  try {
    reply = route(*service, request);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_routes: %s %s threw (HTTP 500): %s\n", request.method.c_str(),
                 request.path.c_str(), e.what());
    std::abort();
  }
  if (realtime && (request.path == "/filter" || request.path == "/prioritize") &&
      reply.status == 200) {
    auto args = parse_extender_args(request.body, PodFields::kRead);
    if (args && args->candidates().size() > 4) {
      std::fprintf(stderr, "fuzz_routes: a real-time %s of %zu nodes was served\n",
                   request.path.c_str(), args->candidates().size());
      std::abort();
    }
  }
  if (reply.status >= 500) {
    std::fprintf(stderr, "fuzz_routes: %s %s answered %d: %s\n", request.method.c_str(),
                 request.path.c_str(), reply.status, reply.body.c_str());
    std::abort();
  }
  return 0;
}
