// kubesim/kube_scheduler.h against a scripted extender over HTTP: the behaviours of
// the real kube-scheduler v1.28 that data/kube-extender/real-v1.28/README.md lists. The clock
// runs 1,000x faster than the wall clock, so the 5-minute unschedulable timeout is 0.3 s.
#include "kubesim/kube_scheduler.h"

// cpprestsdk defines a U() macro that breaks gtest and Boost headers included after it.
#define _TURN_OFF_PLATFORM_STRING

#include <cpprest/http_listener.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>

#include "kubesim/fake_api_server.h"
#include "kubesim/replay.h"
#include "alloxd/http/http_server.h"
#include "tests/alloxd/testing/changes.h"

namespace allox::emulator {
namespace {

using nlohmann::json;

constexpr double kSpeedup = 1000;

// An extender on a free port. Each call is recorded with the simulated time it arrived; the
// answer comes from `decide` (default: admit every node, score 10, bind through the API).
class ScriptedExtender {
 public:
  struct Call {
    std::string verb;
    json body;
    double at;
  };
  using Decide = std::function<std::optional<json>(const std::string& verb, const json& body)>;

  // `on_call` runs after each call is recorded (an event for tests to wait on).
  ScriptedExtender(ApiObjects& objects, const SimClock& clock, std::function<void()> on_call)
      : objects_(objects), clock_(clock), on_call_(std::move(on_call)) {
    auto port = extender::pick_free_port("127.0.0.1");
    url_ = "http://127.0.0.1:" + std::to_string(*port);
    listener_ = std::make_unique<web::http::experimental::listener::http_listener>(url_);
    listener_->support([this](web::http::http_request request) {
      const std::string verb = request.relative_uri().path().substr(1);
      json body = json::parse(request.extract_utf8string(true).get());
      Decide decide;
      {
        std::lock_guard lock(mu_);
        calls_.push_back({verb, body, clock_.now()});
        decide = decide_;
      }
      on_call_();
      std::optional<json> answer = decide ? decide(verb, body) : std::nullopt;
      request.reply(200, (answer ? *answer : standard(verb, body)).dump(), "application/json");
    });
    listener_->open().wait();
  }
  ~ScriptedExtender() { listener_->close().wait(); }

  const std::string& url() const { return url_; }
  void set(Decide decide) {
    std::lock_guard lock(mu_);
    decide_ = std::move(decide);
  }
  std::vector<Call> calls(const std::string& verb) const {
    std::lock_guard lock(mu_);
    std::vector<Call> out;
    for (const Call& c : calls_)
      if (c.verb == verb) out.push_back(c);
    return out;
  }

  json standard(const std::string& verb, const json& body) {
    if (verb == "filter") {
      return {{"Nodes", nullptr},
              {"NodeNames", body["NodeNames"]},
              {"FailedNodes", json::object()},
              {"FailedAndUnresolvableNodes", nullptr},
              {"Error", ""}};
    }
    if (verb == "prioritize") {
      json out = json::array();
      for (const json& n : body["NodeNames"]) out.push_back({{"Host", n}, {"Score", 10}});
      return out;
    }
    if (verb == "bind") {
      auto bound = objects_.bind(
          body["PodNamespace"], body["PodName"],
          {{"metadata", {{"uid", body["PodUID"]}}}, {"target", {{"name", body["Node"]}}}});
      if (auto* e = std::get_if<ApiError>(&bound)) return {{"Error", e->message}};
      return {{"Error", ""}};
    }
    if (verb == "preempt") {
      return {{"NodeNameToMetaVictims", body["NodeNameToMetaVictims"]}};
    }
    return json::object();
  }

 private:
  ApiObjects& objects_;
  const SimClock& clock_;
  std::function<void()> on_call_;
  std::string url_;
  std::unique_ptr<web::http::experimental::listener::http_listener> listener_;
  mutable std::mutex mu_;
  std::vector<Call> calls_;
  Decide decide_;
};

json gpu_pod(const std::string& name, int priority = 0, bool gated = false,
             const std::string& scheduler = "allox-scheduler") {
  json spec = {{"schedulerName", scheduler},
               {"priority", priority},
               {"containers", json::array({{{"name", "main"},
                                            {"image", "train:1"},
                                            {"resources",
                                             {{"requests", {{"cpu", "1"}, {"nvidia.com/gpu", "1"}}},
                                              {"limits", {{"nvidia.com/gpu", "1"}}}}}}})}};
  if (gated) spec["schedulingGates"] = json::array({{{"name", "allox.io/queue"}}});
  return {{"metadata", {{"name", name}}}, {"spec", spec}};
}

json cpu_pod(const std::string& name) {
  return {{"metadata", {{"name", name}}},
          {"spec",
           {{"schedulerName", "allox-scheduler"},
            {"containers",
             json::array({{{"name", "main"}, {"resources", {{"requests", {{"cpu", "32"}}}}}}})}}}};
}

// The cluster a test schedules on, with a free-running clock (kSpeedup times the wall clock) or a
// stepped one that only a test moves (for timings that must not depend on the machine's load).
class SchedulerFixture : public ::testing::Test {
 protected:
  explicit SchedulerFixture(bool stepped)
      : owned_clock(stepped ? std::make_unique<SimClock>(SimClock::Stepped{})
                            : std::make_unique<SimClock>(kSpeedup)) {
    changes.watch(objects);
  }

  std::unique_ptr<SimClock> owned_clock;
  SimClock& clock = *owned_clock;
  ApiObjects objects{[this] { return clock.now(); }};
  // Every event a test may wait on: a stored object changed, the extender was called, the
  // scheduler reported something or went idle (after updating stats and queue sizes).
  extender::testing::Changes changes;
  ScriptedExtender extender{objects, clock, changes.notifier()};
  std::mutex events_mu;
  std::vector<SchedulerEvent> events;
  // Declared after what its thread writes to, so it is stopped and destroyed first (ASan saw
  // the scheduling loop push an event into the already destroyed vector).
  std::unique_ptr<KubeScheduler> scheduler;

  void add_node(const std::string& name, const std::string& gpus, const std::string& cpus = "8") {
    json node = {
        {"metadata", {{"name", name}}},
        {"status",
         {{"allocatable",
           {{"cpu", cpus}, {"memory", "64Gi"}, {"nvidia.com/gpu", gpus}, {"pods", "110"}}}}}};
    ASSERT_FALSE(failed(objects.create(nodes_resource(), "", node)));
  }
  ExtenderStanza stanza(bool node_cache = true) {
    ExtenderStanza e;
    e.url_prefix = extender.url();
    e.filter_verb = "filter";
    e.prioritize_verb = "prioritize";
    e.bind_verb = "bind";
    e.preempt_verb = "preempt";
    e.weight = 5;
    e.node_cache_capable = node_cache;
    return e;
  }
  void start(SchedulerConfiguration config) {
    KubeSchedulerOptions options;
    options.config = std::move(config);
    options.observer = [this](const SchedulerEvent& e) {
      {
        std::lock_guard lock(events_mu);
        events.push_back(e);
      }
      changes.notify();
    };
    options.on_idle = changes.notifier();
    scheduler = std::make_unique<KubeScheduler>(objects, clock, options);
    scheduler->start();
  }
  void start() {
    SchedulerConfiguration config;
    config.scheduler_names = {"allox-scheduler"};
    config.percentage_of_nodes_to_score = 100;
    config.extenders = {stanza()};
    start(config);
  }
  void create(const json& pod) {
    ASSERT_FALSE(failed(objects.create(pods_resource(), "lab", pod)));
  }
  json get(const std::string& name) {
    auto pod = objects.get(pods_resource(), "lab", name);
    return failed(pod) ? json() : *std::get<ObjectPtr>(pod);
  }
  std::string node_of(const std::string& name) {
    json pod = get(name);
    return pod.is_null() ? "" : pod["spec"].value("nodeName", "");
  }
  // Waits until pred holds, re-checked after each event (the emulator runs on its own thread);
  // false if it still does not hold after `wall`.
  bool eventually(const std::function<bool()>& pred,
                  std::chrono::milliseconds wall = std::chrono::seconds(10)) {
    return changes.until(pred, wall);
  }
  // Stepped clock: lets simulated time pass as replay's driver does. Each time the scheduler has
  // done all it can (idle), the clock jumps to its next timer (a back-off ending, the 30 s
  // flush), until `done` holds; false once the next timer lies beyond `limit` simulated seconds.
  bool step_until(const std::function<bool()>& done, double limit) {
    const double give_up = clock.now() + limit;
    while (true) {
      if (!eventually([&] { return done() || scheduler->idle(); })) return false;
      if (done()) return true;
      const double due = scheduler->next_due();
      if (due > give_up) return false;
      clock.advance_to(due);
    }
  }
  // Stepped clock: `seconds` of simulated time pass with no event the test makes.
  void let_pass(double seconds) {
    const double until = clock.now() + seconds;
    step_until([&] { return scheduler->next_due() > until; }, seconds);
    clock.advance_to(until);
    ASSERT_TRUE(eventually([&] { return scheduler->idle(); }));
  }
  void succeed(const std::string& name) {
    ASSERT_FALSE(failed(objects.patch(pods_resource(), "lab", name, PatchType::kMerge,
                                      R"({"status":{"phase":"Succeeded"}})", true)));
  }
  int count(SchedulerEvent::Kind kind, const std::string& message_part = "") {
    std::lock_guard lock(events_mu);
    return static_cast<int>(std::count_if(events.begin(), events.end(), [&](const auto& e) {
      return e.kind == kind && e.message.find(message_part) != std::string::npos;
    }));
  }
};

class KubeSchedulerTest : public SchedulerFixture {
 protected:
  KubeSchedulerTest() : SchedulerFixture(/*stepped=*/false) {}
};

class SteppedSchedulerTest : public SchedulerFixture {
 protected:
  SteppedSchedulerTest() : SchedulerFixture(/*stepped=*/true) {}
};

json reject_all(const json& body, const std::string& reason) {
  json failed = json::object();
  for (const json& n : body["NodeNames"]) failed[n.get<std::string>()] = reason;
  return {{"Nodes", nullptr},
          {"NodeNames", json::array()},
          {"FailedNodes", failed},
          {"FailedAndUnresolvableNodes", nullptr},
          {"Error", ""}};
}

TEST_F(KubeSchedulerTest, APodNoNodeFitsByResourcesNeverReachesTheExtender) {
  add_node("node-a", "1");
  start();
  create(gpu_pod("running"));
  ASSERT_TRUE(eventually([&] { return node_of("running") == "node-a"; }));
  const std::size_t filters = extender.calls("filter").size();
  create(gpu_pod("waiting"));
  ASSERT_TRUE(eventually([&] { return count(SchedulerEvent::Kind::kUnschedulable) > 0; }));
  EXPECT_EQ(filters, extender.calls("filter").size());
  EXPECT_EQ(1, count(SchedulerEvent::Kind::kUnschedulable,
                     "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."));
  EXPECT_EQ("Unschedulable", get("waiting")["status"]["conditions"][0]["reason"]);
  // The running pod finishes: AssignedPodDelete moves the waiting pod, which now fits.
  succeed("running");
  ASSERT_TRUE(eventually([&] { return node_of("waiting") == "node-a"; }));
  EXPECT_EQ(filters + 1, extender.calls("filter").size());
}

TEST_F(KubeSchedulerTest, InitContainersAndOverheadCountTowardThePodsRequests) {
  // NodeResourcesFit's requests: the largest init container (limits standing in for missing
  // requests) when it needs more than the containers, plus spec.overhead.
  add_node("node-a", "2", "8");
  start();
  json warm = gpu_pod("warm");  // one GPU, but its init container needs three
  warm["spec"]["initContainers"] = json::array(
      {{{"name", "init"},
        {"image", "warm:1"},
        {"resources", {{"limits", {{"nvidia.com/gpu", "3"}}}}}}});
  create(warm);
  json heavy = gpu_pod("heavy");  // one core, and 7.5 of the runtime's
  heavy["spec"]["overhead"] = {{"cpu", "7500m"}};
  create(heavy);
  ASSERT_TRUE(eventually([&] {
    return count(SchedulerEvent::Kind::kUnschedulable,
                 "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.") > 0 &&
           count(SchedulerEvent::Kind::kUnschedulable,
                 "0/1 nodes are available: 1 Insufficient cpu.") > 0;
  }));
  EXPECT_EQ("", node_of("warm"));
  EXPECT_EQ("", node_of("heavy"));
  // Without them both would fit: a plain pod of the same containers binds.
  create(gpu_pod("plain"));
  ASSERT_TRUE(eventually([&] { return node_of("plain") == "node-a"; }));
}

TEST_F(KubeSchedulerTest, AnUnschedulablePodCarriesTheRealFitErrorAndPreemptionMessage) {
  // As a real v1.28.7 prints it (scheduler-log-excerpts.txt): the filters' histogram sorted as
  // "count reason" strings, then DefaultPreemption's own FitError over every node.
  add_node("node-a", "1");
  add_node("node-b", "0");
  json cordoned = {{"metadata", {{"name", "node-c"}}},
                   {"spec", {{"unschedulable", true}}},
                   {"status", {{"allocatable", {{"cpu", "8"}, {"nvidia.com/gpu", "1"}}}}}};
  ASSERT_FALSE(failed(objects.create(nodes_resource(), "", cordoned)));
  extender.set([](const std::string& verb, const json& body) -> std::optional<json> {
    if (verb == "filter") return reject_all(body, "queued: position 1 of 1");
    return std::nullopt;
  });
  start();
  create(gpu_pod("g"));
  ASSERT_TRUE(eventually([&] { return count(SchedulerEvent::Kind::kUnschedulable) > 0; }));
  const std::string message =
      "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) were unschedulable, 1 "
      "queued: position 1 of 1. preemption: 0/3 nodes are available: 1 Preemption is not "
      "helpful for scheduling, 2 No preemption victims found for incoming pod..";
  EXPECT_EQ(1, count(SchedulerEvent::Kind::kUnschedulable, message));
  ASSERT_TRUE(eventually(
      [&] { return get("g")["status"]["conditions"][0].value("message", "") == message; }));
  EXPECT_EQ(0u, extender.calls("preempt").size());  // no node had a candidate
}

TEST_F(KubeSchedulerTest, PrioritizeIsSkippedWhenOneNodeIsLeft) {
  add_node("gpu-node", "2");
  add_node("cpu-node", "0", "64");
  start();
  create(gpu_pod("g"));
  ASSERT_TRUE(eventually([&] { return node_of("g") == "gpu-node"; }));
  EXPECT_EQ(0u, extender.calls("prioritize").size());
  EXPECT_EQ(json({"gpu-node"}), extender.calls("filter").back().body["NodeNames"]);
  create(cpu_pod("c"));  // fits both nodes by cpu? gpu-node has 8 cores: only cpu-node
  ASSERT_TRUE(eventually([&] { return node_of("c") == "cpu-node"; }));
  EXPECT_EQ(0u, extender.calls("prioritize").size());
  // A second GPU node before g2 is created (the scheduler sees changes in order; after it,
  // g2 could be scheduled on gpu-node alone): g2 fits both GPU nodes, so it is prioritized;
  // g3 fits only what is left.
  add_node("gpu-node-2", "1");
  create(gpu_pod("g2"));
  ASSERT_TRUE(eventually([&] { return !node_of("g2").empty(); }));
  create(gpu_pod("g3"));
  ASSERT_TRUE(eventually([&] { return !node_of("g3").empty(); }));
  const auto prioritized = extender.calls("prioritize");
  ASSERT_EQ(1u, prioritized.size());
  EXPECT_EQ(2u, prioritized.front().body["NodeNames"].size());
}

// findNodesThatPassExtenders (v1.28): the extender's NodeNames become the feasible list; a sent
// node the answer neither keeps nor names in a failed map is simply dropped, with no status.
TEST_F(KubeSchedulerTest, AnAnswerNamingOnlyTheKeptNodeBindsThereAndDropsTheRest) {
  add_node("node-a", "1");
  add_node("node-b", "1");
  add_node("node-c", "1");
  extender.set([](const std::string& verb, const json&) -> std::optional<json> {
    if (verb != "filter") return std::nullopt;
    return json{{"Nodes", nullptr},
                {"NodeNames", {"node-b"}},
                {"FailedNodes", nullptr},
                {"FailedAndUnresolvableNodes", nullptr},
                {"Error", ""}};
  });
  start();
  create(gpu_pod("g"));
  ASSERT_TRUE(eventually([&] { return node_of("g") == "node-b"; }));
  EXPECT_EQ(3u, extender.calls("filter").front().body["NodeNames"].size());
  EXPECT_EQ(0u, extender.calls("prioritize").size()) << "one node left: not prioritized";
  EXPECT_EQ(0, count(SchedulerEvent::Kind::kUnschedulable));
}

// ...and when no node is left, only the nodes the answer named count in the FitError: node-b
// and node-c have no status (and so stay preemption candidates), as in v1.28.
TEST_F(KubeSchedulerTest, AFitErrorCountsOnlyTheNodesTheAnswerNamed) {
  add_node("node-a", "1");
  add_node("node-b", "1");
  add_node("node-c", "1");
  extender.set([](const std::string& verb, const json&) -> std::optional<json> {
    if (verb != "filter") return std::nullopt;
    return json{{"Nodes", nullptr},
                {"NodeNames", json::array()},
                {"FailedNodes", {{"node-a", "queued: position 1 of 1"}}},
                {"FailedAndUnresolvableNodes", nullptr},
                {"Error", ""}};
  });
  start();
  create(gpu_pod("g"));
  ASSERT_TRUE(eventually([&] { return count(SchedulerEvent::Kind::kUnschedulable) > 0; }));
  EXPECT_EQ(1, count(SchedulerEvent::Kind::kUnschedulable,
                     "0/3 nodes are available: 1 queued: position 1 of 1. preemption: 0/3 nodes "
                     "are available: 3 No preemption victims found for incoming pod.."));
}

// HTTPExtender.Filter: a nodeCacheCapable extender keeping a node it was not sent is an error
// (not a silently smaller list); the pod goes back to the queue with it.
TEST_F(KubeSchedulerTest, ANodeCacheAnswerKeepingANodeNotSentIsAnExtenderError) {
  add_node("node-a", "1");
  extender.set([](const std::string& verb, const json&) -> std::optional<json> {
    if (verb != "filter") return std::nullopt;
    return json{{"Nodes", nullptr},
                {"NodeNames", {"node-a", "ghost"}},
                {"FailedNodes", nullptr},
                {"FailedAndUnresolvableNodes", nullptr},
                {"Error", ""}};
  });
  start();
  create(gpu_pod("g"));
  ASSERT_TRUE(eventually([&] { return count(SchedulerEvent::Kind::kError) > 0; }));
  const std::string want = "extender \"" + extender.url() +
                           "\" claims a filtered node \"ghost\" which is not found in the input "
                           "node list";
  {
    std::lock_guard lock(events_mu);
    for (const SchedulerEvent& e : events) {
      if (e.kind == SchedulerEvent::Kind::kError) {
        EXPECT_NE(std::string::npos, e.message.find(want)) << e.message;
      }
    }
  }
  EXPECT_EQ("", node_of("g"));
}

// Without nodeCacheCapable only `Nodes` counts (v1.28 reads NodeNames only from a
// nodeCacheCapable extender): an answer with NodeNames alone keeps no node.
TEST_F(KubeSchedulerTest, WithoutNodeCacheAnAnswerOfNodeNamesAloneKeepsNoNode) {
  add_node("node-a", "1");
  SchedulerConfiguration config;
  config.scheduler_names = {"allox-scheduler"};
  config.extenders = {stanza(/*node_cache=*/false)};
  extender.set([](const std::string& verb, const json&) -> std::optional<json> {
    if (verb != "filter") return std::nullopt;
    return json{{"Nodes", nullptr}, {"NodeNames", {"node-a"}}, {"FailedNodes", nullptr}};
  });
  start(config);
  create(gpu_pod("g"));
  ASSERT_TRUE(eventually([&] { return count(SchedulerEvent::Kind::kUnschedulable) > 0; }));
  EXPECT_EQ("", node_of("g"));
}

TEST_F(SteppedSchedulerTest, ARejectedPodIsParkedUntilItsOwnUpdate) {
  add_node("node-a", "2");
  std::atomic<bool> admit{false};
  extender.set([&](const std::string& verb, const json& body) -> std::optional<json> {
    if (verb == "filter" && !admit.load()) return reject_all(body, "queued: position 1 of 1");
    return std::nullopt;
  });
  start();
  create(gpu_pod("g"));
  ASSERT_TRUE(eventually(
      [&] { return count(SchedulerEvent::Kind::kUnschedulable) == 1 && scheduler->idle(); }));
  EXPECT_EQ(1u, extender.calls("filter").size());
  admit = true;
  // Parked: no retry in 100 simulated seconds, through three 30 s flushes (kube-scheduler does
  // not poll extenders).
  let_pass(100);
  EXPECT_EQ(1u, extender.calls("filter").size());
  EXPECT_EQ("", node_of("g"));
  // A status-only change is not an update of the pod: once the scheduler has looked at it,
  // still no retry.
  ASSERT_FALSE(failed(objects.patch(pods_resource(), "lab", "g", PatchType::kMerge,
                                    R"({"status":{"message":"x"}})", true)));
  ASSERT_TRUE(eventually([&] { return scheduler->idle(); }));
  EXPECT_EQ(1u, extender.calls("filter").size());
  const double nudged_at = clock.now();
  ASSERT_FALSE(
      failed(objects.patch(pods_resource(), "lab", "g", PatchType::kMerge,
                           R"({"metadata":{"annotations":{"allox.io/nudge":"1"}}})", false)));
  ASSERT_TRUE(step_until([&] { return node_of("g") == "node-a"; }, 600));
  // Released by the update itself after its 1 s back-off, not by the 5-minute timeout.
  EXPECT_LT(extender.calls("filter").back().at - nudged_at, 30.0);
  auto events_v1 = objects.objects(events_v1_resource());
  EXPECT_TRUE(std::any_of(events_v1.begin(), events_v1.end(), [](const ObjectPtr& e) {
    return (*e)["reason"] == "FailedScheduling" &&
           (*e)["note"].get<std::string>().find("1 queued: position 1 of 1") != std::string::npos;
  }));
}

TEST_F(SteppedSchedulerTest, ARejectedPodWithNoEventWaitsForTheFiveMinuteTimeout) {
  add_node("node-a", "2");
  std::atomic<int> filters{0};
  extender.set([&](const std::string& verb, const json& body) -> std::optional<json> {
    if (verb == "filter" && filters++ == 0) return reject_all(body, "queued");
    return std::nullopt;
  });
  start();
  create(gpu_pod("g"));
  ASSERT_TRUE(step_until([&] { return node_of("g") == "node-a"; }, 1000));
  auto calls = extender.calls("filter");
  ASSERT_EQ(2u, calls.size());
  const double waited = calls[1].at - calls[0].at;
  EXPECT_GE(waited, 300.0);
  // Taken out by the first 30 s flush past the timeout (plus the milliseconds the stepped clock
  // runs at wall speed while the scheduler works).
  EXPECT_LE(waited, 300.0 + 30.0 + 1.0);
  EXPECT_EQ(1u, scheduler->stats().timeouts);
}

TEST_F(SteppedSchedulerTest, AFinishedPodReleasesParkedPodsThatTheExtenderRejected) {
  add_node("node-a", "2");
  std::atomic<bool> admit{false};
  extender.set([&](const std::string& verb, const json& body) -> std::optional<json> {
    if (verb == "filter" && !admit.load() && body["Pod"]["metadata"]["name"] == "w")
      return reject_all(body, "queued");
    return std::nullopt;
  });
  start();
  create(gpu_pod("r"));
  ASSERT_TRUE(eventually([&] { return node_of("r") == "node-a"; }));
  create(gpu_pod("w"));
  ASSERT_TRUE(eventually(
      [&] { return count(SchedulerEvent::Kind::kUnschedulable) == 1 && scheduler->idle(); }));
  admit = true;
  const double finished_at = clock.now();
  succeed("r");
  ASSERT_TRUE(step_until([&] { return node_of("w") == "node-a"; }, 600));
  EXPECT_LT(extender.calls("filter").back().at - finished_at, 30.0);
  EXPECT_EQ(1, count(SchedulerEvent::Kind::kMoved, "AssignedPodDelete"));
}

TEST_F(KubeSchedulerTest, GatedPodsWaitForTheGateToBeRemoved) {
  add_node("node-a", "2");
  start();
  create(gpu_pod("g", 0, /*gated=*/true));
  const std::string created_version = get("g")["metadata"]["resourceVersion"];
  // Once the scheduler has taken the pod in and has nothing left to do, the pod is gated, the
  // extender was never asked, and the scheduler wrote nothing: the SchedulingGated condition is
  // the API server's, stamped at creation (kube-scheduler 1.27+ writes no status for it).
  ASSERT_TRUE(eventually([&] { return scheduler->idle() && scheduler->queue_sizes().gated == 1; }));
  EXPECT_EQ(0u, extender.calls("filter").size());
  EXPECT_EQ("SchedulingGated", get("g")["status"]["conditions"][0]["reason"]);
  EXPECT_EQ(created_version, get("g")["metadata"]["resourceVersion"]);
  ASSERT_FALSE(failed(objects.patch(pods_resource(), "lab", "g", PatchType::kJson,
                                    R"([{"op":"remove","path":"/spec/schedulingGates"}])", false)));
  ASSERT_TRUE(eventually([&] { return node_of("g") == "node-a"; }));
  EXPECT_EQ(1u, extender.calls("filter").size());
}

TEST_F(KubeSchedulerTest, ManagedResourcesLetOtherPodsBypassTheExtender) {
  add_node("node-a", "1", "64");
  SchedulerConfiguration config;
  config.scheduler_names = {"allox-scheduler"};
  ExtenderStanza e = stanza();
  e.managed_resources = {"nvidia.com/gpu", "google.com/tpu"};
  config.extenders = {e};
  start(config);
  create(cpu_pod("variant-cpu"));
  create(gpu_pod("variant-gpu"));
  ASSERT_TRUE(eventually(
      [&] { return !node_of("variant-cpu").empty() && !node_of("variant-gpu").empty(); }));
  // The CPU pod was bound by the default binder without any extender call: the README's
  // "job ran twice" when both are variants of one job.
  for (const auto& call : extender.calls("filter"))
    EXPECT_EQ("variant-gpu", call.body["Pod"]["metadata"]["name"]);
  EXPECT_EQ(1u, extender.calls("bind").size());
}

TEST_F(KubeSchedulerTest, ExtendersApplyToEveryProfile) {
  add_node("node-a", "2");
  SchedulerConfiguration config;
  config.scheduler_names = {"allox-scheduler", "default-scheduler"};
  config.extenders = {stanza()};
  start(config);
  create(gpu_pod("d", 0, false, "default-scheduler"));
  create(gpu_pod("other", 0, false, "someone-elses-scheduler"));
  ASSERT_TRUE(eventually([&] { return node_of("d") == "node-a"; }));
  EXPECT_EQ("d", extender.calls("filter").front().body["Pod"]["metadata"]["name"]);
  // Once the scheduler has looked at every change (both pods), the other pod is not ours.
  ASSERT_TRUE(eventually([&] { return scheduler->idle(); }));
  EXPECT_EQ("", node_of("other"));
}

TEST_F(KubeSchedulerTest, PreemptionNominatesANodeAndTheRetryFiltersOnlyThatNode) {
  add_node("node-a", "1");
  add_node("node-b", "1");
  start();
  create(gpu_pod("low-a"));
  create(gpu_pod("low-b"));
  ASSERT_TRUE(eventually([&] { return !node_of("low-a").empty() && !node_of("low-b").empty(); }));
  create(gpu_pod("high", 1000));
  ASSERT_TRUE(eventually([&] { return !node_of("high").empty(); }));
  auto preempts = extender.calls("preempt");
  ASSERT_EQ(1u, preempts.size());
  const json victims = preempts[0].body["NodeNameToMetaVictims"];
  EXPECT_TRUE(preempts[0].body["NodeNameToVictims"].is_null());
  EXPECT_EQ(2u, victims.size());
  const std::string nominated = get("high")["status"].value("nominatedNodeName", "");
  EXPECT_EQ(nominated, node_of("high"));
  // One victim was deleted; the preemptor's next /filter carried only the nominated node.
  EXPECT_EQ(1, (get("low-a").is_null() ? 1 : 0) + (get("low-b").is_null() ? 1 : 0));
  EXPECT_EQ(json({nominated}), extender.calls("filter").back().body["NodeNames"]);
}

// `pod` pinned to `node` by name, as alloxd's gate removal pins it.
json pinned(json pod, const std::string& node) {
  pod["spec"]["affinity"] = json::parse(
      R"({"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":
          [{"matchFields":[{"key":"metadata.name","operator":"In","values":[")" +
      node + R"("]}]}]}}})");
  return pod;
}

// NodeAffinity runs before the extender: a pod pinned by name is sent with its one node, and a
// pod no node's labels match never reaches the extender and carries the filter's reason.
TEST_F(KubeSchedulerTest, NodeAffinityFiltersBeforeTheExtenderSeesTheNodes) {
  add_node("node-a", "1");
  add_node("node-b", "1");
  add_node("node-c", "1");
  start();
  create(pinned(gpu_pod("p"), "node-b"));
  ASSERT_TRUE(eventually([&] { return node_of("p") == "node-b"; }));
  ASSERT_EQ(1u, extender.calls("filter").size());
  EXPECT_EQ(json({"node-b"}), extender.calls("filter")[0].body["NodeNames"]);
  EXPECT_EQ(0u, extender.calls("prioritize").size());  // one node left

  json labelled = gpu_pod("s");
  labelled["spec"]["nodeSelector"] = {{"zone", "nowhere"}};
  create(labelled);
  ASSERT_TRUE(eventually([&] { return count(SchedulerEvent::Kind::kUnschedulable) > 0; }));
  EXPECT_EQ(1u, extender.calls("filter").size());
  EXPECT_EQ(1, count(SchedulerEvent::Kind::kUnschedulable,
                     "0/3 nodes are available: 3 node(s) didn't match Pod's node "
                     "affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is "
                     "not helpful for scheduling.."));
}

// The pinned node is gone before the pod is tried: the pod stays Pending with NodeAffinity's
// reason (as a DaemonSet pod whose node left), and only a node event may move it.
TEST_F(SteppedSchedulerTest, APodPinnedToAVanishedNodeWaitsWithTheAffinityReason) {
  add_node("node-a", "1");
  start();
  create(pinned(gpu_pod("p"), "node-gone"));
  ASSERT_TRUE(eventually([&] { return count(SchedulerEvent::Kind::kUnschedulable) > 0; }));
  EXPECT_EQ(0u, extender.calls("filter").size());
  const std::string reason =
      "0/1 nodes are available: 1 node(s) didn't match Pod's node "
      "affinity/selector.";
  EXPECT_NE(std::string::npos,
            get("p")["status"]["conditions"][0].value("message", "").find(reason));
  EXPECT_EQ("Pending", get("p")["status"]["phase"]);
  // The node comes (back): NodeAdd moves the pod, which binds there.
  add_node("node-gone", "1");
  ASSERT_TRUE(step_until([&] { return node_of("p") == "node-gone"; }, 60));
}

// A node with a GPU and the given spec (taints, cordon).
json node_with(const std::string& name, const std::string& gpus, const json& spec) {
  return {{"metadata", {{"name", name}}},
          {"spec", spec},
          {"status",
           {{"allocatable",
             {{"cpu", "8"}, {"memory", "64Gi"}, {"nvidia.com/gpu", gpus}, {"pods", "110"}}}}}};
}

json dedicated_ml() {
  return json::parse(R"({"taints":[{"key":"dedicated","value":"ml","effect":"NoSchedule"}]})");
}

// TaintToleration runs after NodeUnschedulable and before NodeAffinity and the resources: each
// node counts under the first filter that refuses it, a tainted node never reaches the
// extender, and preemption does not try it (UnschedulableAndUnresolvable).
TEST_F(KubeSchedulerTest, TaintedAndCordonedNodesRefuseWithKubeSchedulersReasons) {
  ASSERT_FALSE(
      failed(objects.create(nodes_resource(), "", node_with("node-a", "1", dedicated_ml()))));
  ASSERT_FALSE(
      failed(objects.create(nodes_resource(), "", node_with("node-b", "1", dedicated_ml()))));
  json cordoned = dedicated_ml();
  cordoned["unschedulable"] = true;
  ASSERT_FALSE(failed(objects.create(nodes_resource(), "", node_with("node-c", "1", cordoned))));
  ASSERT_FALSE(failed(objects.create(
      nodes_resource(), "",
      node_with("node-d", "0",
                json::parse(R"({"taints":[{"key":"soft","effect":"PreferNoSchedule"}]})")))));
  start();
  create(gpu_pod("plain"));
  const std::string message =
      "0/4 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) were unschedulable, 2 "
      "node(s) had untolerated taint {dedicated: ml}. preemption: 0/4 nodes are available: 1 No "
      "preemption victims found for incoming pod, 3 Preemption is not helpful for scheduling..";
  ASSERT_TRUE(eventually([&] { return count(SchedulerEvent::Kind::kUnschedulable) > 0; }));
  EXPECT_EQ(1, count(SchedulerEvent::Kind::kUnschedulable, message));
  EXPECT_EQ(message, get("plain")["status"]["conditions"][0].value("message", ""));
  EXPECT_EQ(0u, extender.calls("filter").size());

  // Tolerating the cordon and the taint: the cordoned node is one of the pod's nodes.
  json tolerant = pinned(gpu_pod("tolerant"), "node-c");
  tolerant["spec"]["tolerations"] = json::parse(
      R"([{"key":"node.kubernetes.io/unschedulable","operator":"Exists","effect":"NoSchedule"},
          {"key":"dedicated","operator":"Equal","value":"ml"}])");
  create(tolerant);
  ASSERT_TRUE(eventually([&] { return node_of("tolerant") == "node-c"; }));
  EXPECT_EQ(json({"node-c"}), extender.calls("filter").back().body["NodeNames"]);
  // Tolerating the cordon alone is not enough there: its taint still refuses the pod.
  json cordon_only = pinned(gpu_pod("cordon-only"), "node-c");
  cordon_only["spec"]["tolerations"] =
      json::parse(R"([{"key":"node.kubernetes.io/unschedulable","operator":"Exists"}])");
  create(cordon_only);
  ASSERT_TRUE(eventually([&] {
    return count(SchedulerEvent::Kind::kUnschedulable,
                 "0/4 nodes are available: 1 node(s) had untolerated taint {dedicated: ml}, 3 "
                 "node(s) didn't match Pod's node affinity/selector.") > 0;
  }));
}

// A pod parked for a taint binds once it tolerates it (an update of the pod), and another once
// the taint is removed (an update of the node, which moves the pods TaintToleration parked);
// both by the event, not by the 5-minute timeout.
TEST_F(SteppedSchedulerTest, APodParkedForATaintBindsOnceTolerantOrOnceTheTaintIsGone) {
  ASSERT_FALSE(
      failed(objects.create(nodes_resource(), "", node_with("node-a", "1", dedicated_ml()))));
  ASSERT_FALSE(
      failed(objects.create(nodes_resource(), "", node_with("node-b", "1", dedicated_ml()))));
  start();
  create(pinned(gpu_pod("g"), "node-a"));
  ASSERT_TRUE(eventually(
      [&] { return count(SchedulerEvent::Kind::kUnschedulable) == 1 && scheduler->idle(); }));
  EXPECT_EQ(
      "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) "
      "had untolerated taint {dedicated: ml}. preemption: 0/2 nodes are available: 2 "
      "Preemption is not helpful for scheduling..",
      get("g")["status"]["conditions"][0].value("message", ""));
  let_pass(60);
  EXPECT_EQ("", node_of("g"));
  EXPECT_EQ(0u, extender.calls("filter").size());
  // The pod gains the toleration (the API server allows adding tolerations to a pod).
  ASSERT_FALSE(failed(objects.patch(
      pods_resource(), "lab", "g", PatchType::kMerge,
      R"({"spec":{"tolerations":[{"key":"dedicated","operator":"Exists","effect":"NoSchedule"}]}})",
      false)));
  const double tolerated_at = clock.now();
  ASSERT_TRUE(step_until([&] { return node_of("g") == "node-a"; }, 60));
  EXPECT_LT(clock.now() - tolerated_at, 30.0);

  // Both nodes refuse h for their taint (node-a's GPU is taken, but the taint comes first): only
  // TaintToleration parked it.
  create(gpu_pod("h"));
  ASSERT_TRUE(eventually(
      [&] { return count(SchedulerEvent::Kind::kUnschedulable) == 2 && scheduler->idle(); }));
  EXPECT_EQ(1, count(SchedulerEvent::Kind::kUnschedulable,
                     "0/2 nodes are available: 2 node(s) had untolerated taint {dedicated: ml}."));
  let_pass(60);
  EXPECT_EQ("", node_of("h"));
  // The taint removed by a PATCH of the node.
  ASSERT_FALSE(failed(objects.patch(nodes_resource(), "", "node-b", PatchType::kMerge,
                                    R"({"spec":{"taints":null}})", false)));
  const double untainted_at = clock.now();
  ASSERT_TRUE(step_until([&] { return node_of("h") == "node-b"; }, 60));
  EXPECT_LT(clock.now() - untainted_at, 30.0);
  EXPECT_EQ(0u, scheduler->stats().timeouts);
  std::lock_guard lock(events_mu);
  EXPECT_TRUE(std::any_of(events.begin(), events.end(), [](const SchedulerEvent& e) {
    return e.kind == SchedulerEvent::Kind::kMoved && e.pod == "lab/h" && e.message == "NodeUpdate";
  }));
}

// A taint added to a node is re-read from the node's update: the next pod is refused there.
TEST_F(KubeSchedulerTest, ATaintAddedToANodeRefusesTheNextPod) {
  add_node("node-a", "2");
  start();
  create(gpu_pod("before"));
  ASSERT_TRUE(eventually([&] { return node_of("before") == "node-a"; }));
  ASSERT_FALSE(failed(
      objects.patch(nodes_resource(), "", "node-a", PatchType::kMerge,
                    R"({"spec":{"taints":[{"key":"maintenance","effect":"NoExecute"}]}})", false)));
  ASSERT_TRUE(eventually([&] { return scheduler->idle(); }));
  create(gpu_pod("after"));
  ASSERT_TRUE(eventually([&] {
    return count(SchedulerEvent::Kind::kUnschedulable,
                 "0/1 nodes are available: 1 node(s) had untolerated taint {maintenance: }.") > 0;
  }));
  EXPECT_EQ("", node_of("after"));
}

TEST_F(KubeSchedulerTest, WithoutNodeCacheTheExtenderGetsFullNodes) {
  add_node("node-a", "1");
  SchedulerConfiguration config;
  config.scheduler_names = {"allox-scheduler"};
  config.extenders = {stanza(/*node_cache=*/false)};
  extender.set([](const std::string& verb, const json& body) -> std::optional<json> {
    if (verb != "filter") return std::nullopt;
    return json{{"Nodes", body["Nodes"]},
                {"NodeNames", nullptr},
                {"FailedNodes", json::object()},
                {"Error", ""}};
  });
  start(config);
  create(gpu_pod("g"));
  ASSERT_TRUE(eventually([&] { return node_of("g") == "node-a"; }));
  const json body = extender.calls("filter").front().body;
  EXPECT_TRUE(body["NodeNames"].is_null());
  EXPECT_EQ("node-a", body["Nodes"]["items"][0]["metadata"]["name"]);
  EXPECT_EQ("1", body["Nodes"]["items"][0]["status"]["allocatable"]["nvidia.com/gpu"]);
  EXPECT_FALSE(body["Pod"].contains("kind"));
}

// kube-scheduler binds in a goroutine: the next pod is scheduled while the last one binds, so
// several binds reach the extender at once. The extender here holds each bind until three are
// inside it together (a sequential binder would never get there) and refuses p0's first bind:
// p0's assumed GPU must come back (node-a has exactly one GPU per pod) and p0 be scheduled
// again, and every pod is bound exactly once.
TEST_F(KubeSchedulerTest, BindsRunConcurrentlyAndAFailedBindForgetsThePodAndRequeuesIt) {
  add_node("node-a", "4", "16");
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0, inside = 0, most_inside = 0;
  bool refused = false;
  extender.set([&](const std::string& verb, const json& body) -> std::optional<json> {
    if (verb != "bind") return std::nullopt;
    std::unique_lock lock(mu);
    ++arrived;
    most_inside = std::max(most_inside, ++inside);
    cv.notify_all();
    // Bounded only so that a sequential binder fails the test instead of hanging it.
    cv.wait_for(lock, std::chrono::seconds(5), [&] { return arrived >= 3; });
    --inside;
    if (body["PodName"] == "p0" && !refused) {
      refused = true;
      return json{{"Error", "pod lab/p0: the node's view is stale"}};
    }
    return std::nullopt;  // bind through the API server
  });
  start();
  for (const char* name : {"p0", "p1", "p2", "p3"}) create(gpu_pod(name));
  ASSERT_TRUE(eventually([&] {
    for (const char* name : {"p0", "p1", "p2", "p3"})
      if (node_of(name) != "node-a") return false;
    return true;
  }));
  ASSERT_TRUE(eventually([&] { return count(SchedulerEvent::Kind::kBound) == 4; }));
  scheduler->stop();  // nothing calls the extender (and the locals above) any more
  {
    std::lock_guard lock(mu);
    EXPECT_GE(most_inside, 3);
    EXPECT_TRUE(refused);
  }
  EXPECT_GE(scheduler->stats().max_binds_in_flight, 3u);
  EXPECT_EQ(1, count(SchedulerEvent::Kind::kBindFailed, "stale"));
  EXPECT_EQ(1u, scheduler->stats().bind_failures);
  std::map<std::string, int> binds;
  for (const auto& call : extender.calls("bind")) binds[call.body["PodName"]]++;
  EXPECT_EQ((std::map<std::string, int>{{"p0", 2}, {"p1", 1}, {"p2", 1}, {"p3", 1}}), binds);
  // The refusal is recorded on the pod, and each pod has one Scheduled event.
  int scheduled = 0, rejected = 0;
  for (const ObjectPtr& event : objects.objects(events_v1_resource())) {
    if ((*event)["reason"] == "Scheduled") ++scheduled;
    if ((*event)["reason"] == "FailedScheduling" &&
        (*event)["note"].get<std::string>().find("Binding rejected") != std::string::npos) {
      ++rejected;
    }
  }
  EXPECT_EQ(4, scheduled);
  EXPECT_EQ(1, rejected);
}

TEST(SchedulerConfigTest, ReadsTheShippedConfiguration) {
  auto config = load_scheduler_configuration(ALLOX_SOURCE_DIR "/manifests/scheduler-config.yaml");
  ASSERT_TRUE(config.ok()) << config.message();
  ASSERT_EQ(1u, config->extenders.size());
  EXPECT_EQ("filter", config->extenders[0].filter_verb);
  EXPECT_TRUE(config->extenders[0].node_cache_capable);
  EXPECT_EQ(std::vector<std::string>{"allox-scheduler"}, config->scheduler_names);
  auto bad = parse_scheduler_configuration(
      "kind: KubeSchedulerConfiguration\nextenders:\n- filterVerb: f\n", "x.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ("x.yaml: extenders[0].urlPrefix: required", bad.message());
}

// The back-off is the operator's (the shipped file shortens it to 1 s for the nudge path), and
// values kube-scheduler would refuse are refused naming the field.
TEST(SchedulerConfigTest, BackoffSecondsAreReadAndValidated) {
  auto shipped = load_scheduler_configuration(ALLOX_SOURCE_DIR "/manifests/scheduler-config.yaml");
  ASSERT_TRUE(shipped.ok()) << shipped.message();
  EXPECT_EQ(1, shipped->pod_initial_backoff_seconds);
  EXPECT_EQ(1, shipped->pod_max_backoff_seconds);
  const std::string head = "kind: KubeSchedulerConfiguration\n";
  auto defaults = parse_scheduler_configuration(head, "d.yaml");
  ASSERT_TRUE(defaults.ok()) << defaults.message();
  EXPECT_EQ(1, defaults->pod_initial_backoff_seconds);
  EXPECT_EQ(10, defaults->pod_max_backoff_seconds);
  auto zero = parse_scheduler_configuration(head + "podInitialBackoffSeconds: 0\n", "z.yaml");
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ("z.yaml: podInitialBackoffSeconds: must be greater than 0", zero.message());
  auto below = parse_scheduler_configuration(
      head + "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n", "b.yaml");
  ASSERT_FALSE(below.ok());
  EXPECT_NE(std::string::npos, below.message().find("b.yaml: podMaxBackoffSeconds:"))
      << below.message();
  EXPECT_FALSE(parse_scheduler_configuration(head + "podMaxBackoffSeconds: soon\n", "s.yaml").ok());
}

// replay_jobs on a stepped clock: a freed machine the system under test leaves idle on purpose
// (ReplayOptions::starts_planned_on says it starts nothing there) is not a completion-to-bind
// sample, it counts in left_idle; without that hook the idle time counts as latency.
TEST(ReplayTest, AMachineThePolicyLeavesIdleIsNotACompletionToBindSample) {
  for (const bool hook : {false, true}) {
    SCOPED_TRACE(hook ? "with starts_planned_on" : "without");
    SimClock clock{SimClock::Stepped{}};
    ApiObjects objects{[&] { return clock.now(); }};
    ScriptedExtender extender{objects, clock, [] {}};
    const double start = clock.now();
    auto holding_b = [&] { return clock.now() - start < 100; };
    // One GPU; the extender keeps job b waiting for the first 100 simulated seconds.
    extender.set([&](const std::string& verb, const json& body) -> std::optional<json> {
      const std::string pod = body["Pod"]["metadata"].value("name", "");
      if (verb == "filter" && pod == "b-gpu" && holding_b()) return reject_all(body, "queued");
      return std::nullopt;
    });
    ASSERT_FALSE(failed(objects.create(
        nodes_resource(), "",
        {{"metadata", {{"name", "g1"}}},
         {"status",
          {{"allocatable",
            {{"cpu", "8"}, {"memory", "64Gi"}, {"nvidia.com/gpu", "1"}, {"pods", "110"}}}}}})));
    ReplayOptions options;
    options.scheduler.scheduler_names = {"allox-scheduler"};
    options.scheduler.percentage_of_nodes_to_score = 100;
    ExtenderStanza stanza;
    stanza.url_prefix = extender.url();
    stanza.filter_verb = "filter";
    stanza.node_cache_capable = true;
    options.scheduler.extenders = {stanza};
    options.resource_of = {{"gpu", "nvidia.com/gpu"}};
    options.record_events = false;
    if (hook) {
      options.starts_planned_on = [&](const std::string&, const DeviceType&) {
        return holding_b() ? 0 : 1;
      };
    }
    const std::vector<ReplayJob> jobs = {{"a", "u", 0, {{"gpu", 10}}, {{"gpu", 10}}},
                                         {"b", "u", 0, {{"gpu", 10}}, {{"gpu", 10}}}};
    auto summary = replay_jobs(objects, clock, jobs, options);
    ASSERT_TRUE(summary.ok()) << summary.message();
    ASSERT_EQ(2u, summary->jobs.size());
    EXPECT_GT(summary->jobs[1].start, 100);  // b ran, after its hold
    if (hook) {
      EXPECT_TRUE(summary->completion_to_bind.empty());
      EXPECT_EQ(1, summary->left_idle);
    } else {
      ASSERT_EQ(1u, summary->completion_to_bind.size());
      EXPECT_GT(summary->completion_to_bind[0], 80);  // a's GPU idle until b's hold ended
      EXPECT_EQ(0, summary->left_idle);
    }
  }
}

}  // namespace
}  // namespace allox::emulator
