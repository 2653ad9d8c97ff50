// extender/service.h with an API server: the queue comes from the watch, the controller acts,
// bind goes through the binding subresource, completions come from watch events. The API
// server is scripted (tests/extender/kube/scripted_server.h) and speaks the real protocol.
#include <gtest/gtest.h>

#include <condition_variable>

#include "extender/http_server.h"
#include "extender/service.h"
#include "tests/extender/kube/scripted_server.h"
#include "tests/extender/test_support.h"

namespace allox::extender {
namespace {

using kube::testing::LineChannel;
using kube::testing::ScriptedReply;
using kube::testing::ScriptedRequest;
using kube::testing::ScriptedServer;
using nlohmann::json;
using testing::make_pod;

// Lists nodes and pods, holds their watches open on channels the test feeds, answers
// bindings with `bind_status`, and everything else (deletes, patches, events) with success.
struct ApiScript {
  std::mutex mu;
  int bind_status = 201;
  std::shared_ptr<LineChannel> pods = std::make_shared<LineChannel>();
  std::shared_ptr<LineChannel> nodes = std::make_shared<LineChannel>();

  ScriptedReply handle(const ScriptedRequest& r) {
    if (r.authorization != "Bearer sa-token") return {401, "{}", nullptr};
    const bool watch = r.target.find("watch=1") != std::string::npos;
    if (r.method == "GET" && r.target.rfind("/api/v1/nodes", 0) == 0) {
      if (watch) return {200, "", nodes};
      json node = {{"metadata", {{"name", "node-1"}, {"resourceVersion", "3"}}},
                   {"status", {{"allocatable", {{"cpu", "64"}, {"nvidia.com/gpu", "2"}}}}}};
      return {
          200,
          json{{"kind", "NodeList"}, {"metadata", {{"resourceVersion", "5"}}}, {"items", {node}}}
              .dump(),
          nullptr};
    }
    if (r.method == "GET" && r.target.rfind("/api/v1/pods", 0) == 0) {
      if (watch) return {200, "", pods};
      return {200, R"({"kind":"PodList","metadata":{"resourceVersion":"5"},"items":[]})", nullptr};
    }
    if (r.method == "POST" && r.target.ends_with("/binding")) {
      std::lock_guard lock(mu);
      return {bind_status, "{}", nullptr};
    }
    return {r.method == "POST" ? 201 : 200, "{}", nullptr};
  }
};

template <typename Done>
bool eventually(Done done) {
  for (int i = 0; i < 2000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::string watch_event(const std::string& type, json object, int rv) {
  object["metadata"]["resourceVersion"] = std::to_string(rv);
  return json{{"type", type}, {"object", object}}.dump();
}

TEST(ServiceApiTest, QueueFromTheWatchActionsInTheBackgroundCompletionsFromEvents) {
  ApiScript script;
  ScriptedServer server([&](const ScriptedRequest& r) { return script.handle(r); });
  testing::ScratchDir dir;
  auto config = testing::make_config({}, dir.file("state.db"));
  config.scheduler_name = "allox-scheduler";
  config.apiserver = ApiServerConfig{server.url(), "sa-token", "", std::nullopt};
  auto service =
      ExtenderService::create(config, make_policy("fifo", PolicyOptions{}).value(), nullptr);
  ASSERT_TRUE(service.ok()) << service.message();
  (*service)->start();
  ASSERT_TRUE(eventually([&] { return (*service)->ready(); }));
  EXPECT_EQ(4, (*service)->queue().machines);  // 2 GPUs + 64 cores / 32

  // Two variants of one job arrive through the watch, never through /filter.
  std::map<std::string, std::string> annotations = {
      {"allox.io/job", "bert"}, {"allox.io/time.gpu", "10"}, {"allox.io/time.cpu", "1000"}};
  json gpu_pod = make_pod("lab", "bert-gpu", "nvidia.com/gpu", annotations);
  json cpu_pod = make_pod("lab", "bert-cpu", "cpu", annotations);
  script.pods->push(watch_event("ADDED", cpu_pod, 6));
  script.pods->push(watch_event("ADDED", gpu_pod, 7));
  ASSERT_TRUE(eventually([&] { return (*service)->job("bert").ok(); }));

  // The plan starts it on the GPU: the controller deletes the CPU variant and nudges the
  // ungated GPU pod, in the background.
  ASSERT_TRUE(eventually(
      [&] { return server.count("DELETE", "/api/v1/namespaces/lab/pods/bert-cpu") == 1; }));
  ASSERT_TRUE(eventually(
      [&] { return server.count("PATCH", "/api/v1/namespaces/lab/pods/bert-gpu") >= 1; }));

  // /filter confirms at once (the pod is known from the watch) and bind goes to the API server.
  auto args = parse_extender_args(testing::filter_body(gpu_pod, {"node-1"}));
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(std::vector<std::string>{"node-1"}, *(*service)->filter(*args).node_names);
  {
    std::lock_guard lock(script.mu);
    script.bind_status = 500;
  }
  BindingArgs bind{"bert-gpu", "lab", "uid-bert-gpu", "node-1"};
  BindingResult failed = (*service)->bind(bind);
  EXPECT_NE(std::string::npos, failed.error.find("API server answered 500")) << failed.error;
  EXPECT_EQ(JobPhase::kQueued, (*service)->job("bert")->record.phase);
  {
    std::lock_guard lock(script.mu);
    script.bind_status = 201;
  }
  ASSERT_EQ("", (*service)->bind(bind).error);
  EXPECT_EQ(2, server.count("POST", "/api/v1/namespaces/lab/pods/bert-gpu/binding"));
  EXPECT_EQ(JobPhase::kRunning, (*service)->job("bert")->record.phase);

  // Its pod succeeds: the watch says so, no polling.
  gpu_pod["spec"]["nodeName"] = "node-1";
  gpu_pod["status"]["phase"] = "Succeeded";
  script.pods->push(watch_event("MODIFIED", gpu_pod, 9));
  ASSERT_TRUE(eventually([&] { return (*service)->job("bert")->record.phase == JobPhase::kDone; }));

  // Another scheduler's pod passes through untouched: every node, nothing recorded.
  json other = make_pod("lab", "web", "cpu");
  other["spec"]["schedulerName"] = "default-scheduler";
  auto other_args = parse_extender_args(testing::filter_body(other, {"node-1", "node-2"}));
  EXPECT_EQ((std::vector<std::string>{"node-1", "node-2"}),
            *(*service)->filter(*other_args).node_names);
  EXPECT_FALSE((*service)->job("lab/web").ok());
  script.pods->close();
  script.nodes->close();
  (*service)->stop();
}

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
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE((*service)->ready());
  auto args = parse_extender_args(testing::filter_body(make_pod("a", "b", "cpu"), {"ignored"}));
  FilterResult r = (*service)->filter(*args);
  EXPECT_NE(std::string::npos, r.error.find("not ready"));
  auto begin = std::chrono::steady_clock::now();
  (*service)->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(5));
}

}  // namespace
}  // namespace allox::extender
