// alloxd/service.h with an API server: the queue comes from the watch, the controller acts,
// bind goes through the binding subresource, completions come from watch events. The API
// server is the emulator's faithful fake (kubesim/fake_api_server.h): real list and
// watch, binding rules (uid, gates), deletions and events.
#include <gtest/gtest.h>

#include "alloxd/http/http_server.h"
#include "alloxd/service.h"
#include "kube/pods.h"
#include "kubesim/fake_api_server.h"
#include "tests/alloxd/testing/api_pods.h"
#include "tests/alloxd/testing/changes.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

using nlohmann::json;
using testing::make_pod;

// The service against `api`, its plans and watch changes reported to `changes`.
std::unique_ptr<ExtenderService> start_against(emulator::FakeApiServer& api,
                                               const testing::ScratchDir& dir,
                                               testing::Changes& changes) {
  auto config = testing::make_config({}, dir.file("state.db"));
  config.scheduler_name = "allox-scheduler";
  config.apiserver = ApiServerConfig{api.url(), "sa-token", "", std::nullopt};
  changes.watch(api);
  ServiceOptions options;
  options.on_change = changes.notifier();
  auto service = ExtenderService::create(config, make_policy("fifo", PolicyOptions{}).value(),
                                         nullptr, options);
  EXPECT_TRUE(service.ok()) << service.message();
  if (!service) return nullptr;
  (*service)->start();
  return std::move(*service);
}

// Reasons of the events the API server holds for one pod.
std::vector<std::string> event_reasons(emulator::FakeApiServer& api, const std::string& pod) {
  std::vector<std::string> reasons;
  for (const auto& event : api.objects().objects(emulator::events_resource())) {
    if (event->value("involvedObject", json::object()).value("name", "") == pod) {
      reasons.push_back(event->value("reason", ""));
    }
  }
  return reasons;
}

bool has(const std::vector<std::string>& all, const std::string& one) {
  return std::find(all.begin(), all.end(), one) != all.end();
}

TEST(ServiceApiTest, QueueFromTheWatchActionsInTheBackgroundCompletionsFromEvents) {
  emulator::FakeApiServer api(testing::api_options("sa-token"));
  api.add_node("node-1", {{"cpu", "64"}, {"nvidia.com/gpu", "2"}});
  testing::ScratchDir dir;
  testing::Changes changes;
  auto service = start_against(api, dir, changes);
  ASSERT_NE(nullptr, service);
  ASSERT_TRUE(changes.until([&] { return service->ready(); }));
  EXPECT_EQ(4, service->queue().machines);  // 2 GPUs + 64 cores / 32

  // Two variants of one job are created in the API server; alloxd learns of them from the
  // watch, never through /filter.
  std::map<std::string, std::string> annotations = {
      {"allox.io/job", "bert"}, {"allox.io/time.gpu", "10"}, {"allox.io/time.cpu", "1000"}};
  json cpu_pod = testing::pod_in_api(api, make_pod("lab", "bert-cpu", "cpu", annotations));
  json gpu_pod =
      testing::pod_in_api(api, make_pod("lab", "bert-gpu", "nvidia.com/gpu", annotations));
  ASSERT_TRUE(changes.until([&] { return service->job("lab/bert").ok(); }));

  // The plan starts it (on either device: both fit now): the controller deletes the other
  // variant, in the background, with events saying why. The ungated chosen one is not nudged:
  // no scheduler has turned it away (it waits in the active queue).
  ASSERT_TRUE(changes.until([&] {
    return testing::pod_exists(api, "lab", "bert-cpu") !=
           testing::pod_exists(api, "lab", "bert-gpu");
  }));
  const bool on_gpu = testing::pod_exists(api, "lab", "bert-gpu");
  const json& chosen = on_gpu ? gpu_pod : cpu_pod;
  const std::string chosen_name = chosen["metadata"]["name"];
  const std::string other_name = on_gpu ? "bert-cpu" : "bert-gpu";
  ASSERT_TRUE(changes.until([&] { return has(event_reasons(api, chosen_name), "Admitted"); }));
  ASSERT_TRUE(changes.until([&] { return has(event_reasons(api, other_name), "Deleted"); }));
  {
    auto pod = api.objects().get(emulator::pods_resource(), "lab", chosen_name);
    ASSERT_FALSE(emulator::failed(pod));
    const json& meta = (*std::get<emulator::ObjectPtr>(pod))["metadata"];
    EXPECT_FALSE(meta.contains("annotations") &&
                 meta["annotations"].contains(std::string(kube::kNudgeAnnotation)))
        << "a pod no scheduler turned away is not nudged";
  }

  // /filter confirms at once (the pod is known from the watch) and bind goes to the API server.
  auto args = parse_extender_args(testing::filter_body(chosen, {"node-1"}));
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(std::vector<std::string>{"node-1"}, service->filter(*args).node_names->strings());
  const BindingArgs bind{chosen_name, "lab", chosen["metadata"]["uid"], "node-1"};
  api.fail_requests({"POST", "/binding", 500, 1});
  BindingResult failed = service->bind(bind);
  EXPECT_NE(std::string::npos, failed.error.find("API server answered 500")) << failed.error;
  EXPECT_EQ(JobPhase::kQueued, service->job("lab/bert")->record.phase);
  ASSERT_EQ("", service->bind(bind).error);
  EXPECT_EQ(JobPhase::kRunning, service->job("lab/bert")->record.phase);
  auto bound = api.objects().get(emulator::pods_resource(), "lab", chosen_name);
  ASSERT_FALSE(emulator::failed(bound));
  EXPECT_EQ("node-1", (*std::get<emulator::ObjectPtr>(bound))["spec"]["nodeName"]);

  // Its pod succeeds: the watch says so, and the service hears it from the watch.
  ASSERT_FALSE(emulator::failed(api.objects().patch(
      emulator::pods_resource(), "lab", chosen_name, emulator::PatchType::kMerge,
      R"({"status":{"phase":"Succeeded"}})", /*status_only=*/true)));
  ASSERT_TRUE(
      changes.until([&] { return service->job("lab/bert")->record.phase == JobPhase::kDone; }));

  // Another scheduler's pod passes through untouched: every node, nothing recorded.
  json other = make_pod("lab", "web", "cpu");
  other["spec"]["schedulerName"] = "default-scheduler";
  auto other_args = parse_extender_args(testing::filter_body(other, {"node-1", "node-2"}));
  EXPECT_EQ((std::vector<std::string>{"node-1", "node-2"}),
            service->filter(*other_args).node_names->strings());
  EXPECT_FALSE(service->job("lab/web").ok());
  EXPECT_EQ(0, api.unauthorized_requests());
  service->stop();
}

// Nothing can make the service ready here (every connection is refused), so there is no moment
// to wait for: it refuses filters as not ready from the start, and stop() ends the informer's
// back-off at once.
TEST(ServiceApiTest, NotReadyWhileTheApiServerIsUnreachableAndStopIsPrompt) {
  testing::ScratchDir dir;
  auto config = testing::make_config({{"ignored", {{"gpu", 1}}}}, dir.file("state.db"));
  auto port = pick_free_port("127.0.0.1");
  ASSERT_TRUE(port.ok());
  config.scheduler_name = "allox-scheduler";
  config.apiserver =
      ApiServerConfig{"http://127.0.0.1:" + std::to_string(*port), "t", "", std::nullopt};
  auto service =
      ExtenderService::create(config, make_policy("fifo", PolicyOptions{}).value(), nullptr);
  ASSERT_TRUE(service.ok());
  (*service)->start();
  EXPECT_FALSE((*service)->ready());
  auto args = parse_extender_args(testing::filter_body(make_pod("a", "b", "cpu"), {"ignored"}));
  FilterResult r = (*service)->filter(*args);
  EXPECT_NE(std::string::npos, r.error.find("not ready"));
  auto begin = std::chrono::steady_clock::now();
  (*service)->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(5));
}

// /readyz stays false until the first list of pods is in, even once the nodes are listed and the
// planner has published a plan (the moment a readiness that forgot the pods would turn true);
// once the API server answers, alloxd becomes ready.
TEST(ServiceApiTest, NotReadyUntilTheFirstListIsIn) {
  emulator::FakeApiServer api(testing::api_options("sa-token"));
  api.add_node("node-1", {{"nvidia.com/gpu", "1"}});
  api.fail_requests({"GET", "/api/v1/pods", 503, -1});
  testing::ScratchDir dir;
  testing::Changes changes;
  auto service = start_against(api, dir, changes);
  ASSERT_NE(nullptr, service);
  ASSERT_TRUE(changes.until([&] { return service->plan()->solved_at > 0; }))
      << "no plan from the listed nodes";
  EXPECT_EQ(1, service->queue().machines);
  EXPECT_FALSE(service->ready()) << "ready before the pods were listed";
  api.clear_faults();
  EXPECT_TRUE(changes.until([&] { return service->ready(); }));
  service->stop();
}

// An API server that refuses the Job list (alloxd's role without batch/v1 jobs, as before
// Jobs were read) does not hold the pod watch back: alloxd gets ready and releases a bare pod.
TEST(ServiceApiTest, AJobListRefusedLeavesThePodsWatched) {
  emulator::FakeApiServer api(testing::api_options("sa-token"));
  api.add_node("node-1", {{"cpu", "64"}, {"nvidia.com/gpu", "2"}});
  api.fail_requests({"GET", "/apis/batch/v1/jobs", 403, -1});
  testing::ScratchDir dir;
  testing::Changes changes;
  auto service = start_against(api, dir, changes);
  ASSERT_NE(nullptr, service);
  ASSERT_TRUE(changes.until([&] { return service->ready(); }));
  json pod = make_pod("lab", "solo", "nvidia.com/gpu",
                      {{"allox.io/job", "solo"}, {"allox.io/time.gpu", "10"}});
  pod["spec"]["schedulingGates"] = json::array({{{"name", "allox.io/queue"}}});
  testing::pod_in_api(api, pod);
  EXPECT_TRUE(changes.until([&] {
    auto got = api.objects().get(emulator::pods_resource(), "lab", "solo");
    return !emulator::failed(got) &&
           !(*std::get<emulator::ObjectPtr>(got))["spec"].contains("schedulingGates");
  })) << "the bare pod was not released";
  service->stop();
}

// One job's variants must not block every bind: 3,000 variants of one job, and an API server
// that takes 50 ms per DELETE (2.5 minutes of deletions). The deletions run in the background
// behind every admission: another job's gate comes off, and both jobs bind, while they go on.
TEST(ServiceApiTest, AJobWithThousandsOfVariantsHoldsUpNoOtherJob) {
  emulator::FakeApiServer api(testing::api_options("sa-token"));
  api.add_node("node-1", {{"cpu", "64"}, {"nvidia.com/gpu", "2"}});
  api.fail_requests({"DELETE", "/pods/", 0, -1, std::chrono::milliseconds(50)});
  testing::ScratchDir dir;
  testing::Changes changes;
  auto service = start_against(api, dir, changes);
  ASSERT_NE(nullptr, service);
  ASSERT_TRUE(changes.until([&] { return service->ready(); }));

  constexpr int kVariants = 3000;
  const std::map<std::string, std::string> big = {{"allox.io/job", "big"},
                                                  {"allox.io/time.cpu", "1000"}};
  for (int i = 0; i < kVariants; ++i) {
    testing::pod_in_api(api, make_pod("lab", "big-" + std::to_string(i), "cpu", big));
  }
  auto big_pods = [&] {
    int n = 0;
    for (const auto& pod : api.objects().objects(emulator::pods_resource())) {
      n += (*pod)["metadata"]["name"].get<std::string>().rfind("big-", 0) == 0;
    }
    return n;
  };
  // The job starts as one variant; the deletions of the others have begun.
  ASSERT_TRUE(changes.until([&] { return big_pods() < kVariants; }));

  json small = make_pod("lab", "small", "nvidia.com/gpu",
                        {{"allox.io/job", "small"}, {"allox.io/time.gpu", "10"}});
  small["spec"]["schedulingGates"] = json::array({{{"name", "allox.io/queue"}}});
  small = testing::pod_in_api(api, small);
  auto gated = [&] {
    auto pod = api.objects().get(emulator::pods_resource(), "lab", "small");
    if (emulator::failed(pod)) return true;
    const json& spec = (*std::get<emulator::ObjectPtr>(pod))["spec"];
    return spec.contains("schedulingGates") && !spec["schedulingGates"].empty();
  };
  const auto released_from = std::chrono::steady_clock::now();
  ASSERT_TRUE(changes.until([&] { return !gated(); }));
  const auto release = std::chrono::steady_clock::now() - released_from;
  EXPECT_LT(release, std::chrono::seconds(10)) << "the gate waited behind the deletions";

  auto bind_timed = [&](const json& pod) {
    const BindingArgs bind{pod["metadata"]["name"], "lab", pod["metadata"]["uid"], "node-1"};
    const auto begin = std::chrono::steady_clock::now();
    BindingResult result = service->bind(bind);
    EXPECT_EQ("", result.error) << pod["metadata"]["name"];
    return std::chrono::steady_clock::now() - begin;
  };
  EXPECT_LT(bind_timed(small), std::chrono::seconds(2));
  // The variant the job runs as is the one alloxd admitted.
  json chosen;
  ASSERT_TRUE(changes.until([&] {
    for (const auto& pod : api.objects().objects(emulator::pods_resource())) {
      const std::string name = (*pod)["metadata"]["name"];
      if (name.rfind("big-", 0) == 0 && has(event_reasons(api, name), "Admitted")) {
        chosen = *pod;
        return true;
      }
    }
    return false;
  }));
  EXPECT_LT(bind_timed(chosen), std::chrono::seconds(2));
  EXPECT_EQ(JobPhase::kRunning, service->job("lab/big")->record.phase);
  EXPECT_EQ(JobPhase::kRunning, service->job("lab/small")->record.phase);
  EXPECT_GT(big_pods(), kVariants / 2) << "the deletions were meant to still be running";
  api.clear_faults();
  service->stop();
}

}  // namespace
}  // namespace allox::extender
