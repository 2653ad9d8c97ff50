// alloxd/cache/cluster_feed.h + controller.h: pods and nodes fed as the watch would hand them over,
// the handlers told, the job keys they enqueued reconciled on the test's thread (drain), and the
// controller's actions observed at a scripted API server.
#include "alloxd/control/controller.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "core/log.h"
#include "kube/pods.h"
#include "tests/alloxd/testing/test_support.h"
#include "tests/kube/scripted_server.h"

namespace allox::extender {
namespace {

using kube::testing::ScriptedReply;
using kube::testing::ScriptedRequest;
using kube::testing::ScriptedServer;
using nlohmann::json;

// A variant pod of `job` for allox's scheduler, gated or not.
json variant(const std::string& name, const std::string& job, const std::string& resource,
             bool gated, const std::string& ns = "lab") {
  json pod = testing::make_pod(ns, name, resource, {{"allox.io/job", job}});
  if (gated) pod["spec"]["schedulingGates"] = json::array({{{"name", "allox.io/queue"}}});
  return pod;
}

// A monotonic clock the test steps by hand: the intervals the controller and the planner
// measure (settle, renudge, requeue_event, admission_hold, the queue's delays) pass when the
// test says so, never by sleeping.
class SteppedClock {
 public:
  std::function<std::chrono::steady_clock::time_point()> now() const {
    return
        [at = at_] { return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(*at)); };
  }
  void advance(std::chrono::nanoseconds by) { *at_ += by.count(); }

 private:
  // Far from the clock's epoch, so no interval before the first step is negative.
  std::shared_ptr<std::atomic<std::int64_t>> at_ =
      std::make_shared<std::atomic<std::int64_t>>(std::int64_t{1} << 50);
};

struct Fixture {
  SteppedClock steady;
  testing::ScratchDir dir;
  ExtenderConfig config;
  Metrics metrics;
  std::unique_ptr<Planner> planner;
  std::atomic<int> delete_status{200};  // what the API server answers a DELETE
  ScriptedServer server{[this](const ScriptedRequest& r) {
    if (r.method == "DELETE") return ScriptedReply{delete_status.load(), "{}", nullptr};
    return ScriptedReply{r.method == "POST" ? 201 : 200, "{}", nullptr};
  }};
  kube::KubeClient client{{server.url(), "", ""}};
  kube::EventRecorder events{client, {}};
  bool leading = true;
  std::unique_ptr<ClusterFeed> feed;
  std::unique_ptr<Controller> controller;

  explicit Fixture(PlannerOptions planner_options = {}) {
    planner_options.steady_now = steady.now();
    config = testing::make_config({}, dir.file("state.db"));
    config.scheduler_name = "allox-scheduler";
    auto made = Planner::create(config, make_policy("fifo", PolicyOptions{}).value(), metrics,
                                std::move(planner_options));
    EXPECT_TRUE(made.ok()) << made.message();
    planner = std::move(*made);
    feed = std::make_unique<ClusterFeed>(client, *planner, config, nullptr);
    ControllerOptions options;
    options.steady_now = steady.now();
    controller = std::make_unique<Controller>(
        *planner, *feed, client, events, [this] { return leading; }, options);
    planner->start();
  }
  ~Fixture() { planner->stop(); }
  // The current book planned, the handlers told, and every job key ready reconciled with its
  // actions carried out.
  std::vector<std::string> settle() { return pass(*controller); }
  // The same with controller `c`; the keys it reconciled, in order.
  std::vector<std::string> pass(Controller& c) {
    planner->solve_now();
    c.pods_changed();
    c.plan_changed();
    return c.drain();
  }
  // A controller of the test's own over this feed and planner, always leading.
  std::unique_ptr<Controller> own_controller(ControllerOptions options) {
    options.steady_now = steady.now();
    return std::make_unique<Controller>(
        *planner, *feed, client, events, [] { return true; }, options);
  }
  std::vector<ScriptedRequest> requests(const std::string& method) const {
    std::vector<ScriptedRequest> out;
    for (const auto& r : server.requests()) {
      if (r.method == method) out.push_back(r);
    }
    return out;
  }
  std::vector<std::string> event_reasons(const std::string& pod) const {
    std::vector<std::string> reasons;
    for (const auto& r : server.requests()) {
      if (r.method != "POST" || r.target.find("/events") == std::string::npos) continue;
      json e = json::parse(r.body);
      if (e["involvedObject"]["name"] == pod)
        reasons.push_back(e["reason"].get<std::string>() + ": " + e["message"].get<std::string>());
    }
    return reasons;
  }
};

// A pod with required node affinity of its own keeps it: only its gate is removed, and
// kube-scheduler filters it over every node as before. Other affinity gets the pin beside it.
TEST(ControllerTest, APodWithItsOwnRequiredNodeAffinityIsReleasedUnpinned) {
  Fixture f;
  // Both nodes in a zone, so the pod's own affinity lets it go to either (it goes nowhere else).
  json g1 = testing::make_node("g1", "1", "0"), g2 = testing::make_node("g2", "1", "0");
  g1["metadata"]["labels"] = {{"zone", "a"}};
  g2["metadata"]["labels"] = {{"zone", "b"}};
  f.feed->node_handler().on_replace({g1, g2});
  json own = variant("a-gpu", "a", "nvidia.com/gpu", true);
  own["spec"]["affinity"] = json::parse(
      R"({"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":
          [{"matchExpressions":[{"key":"zone","operator":"Exists"}]}]}}})");
  json other = variant("b-gpu", "b", "nvidia.com/gpu", true);
  other["spec"]["affinity"] = json::parse(R"({"podAntiAffinity":{}})");
  f.feed->pod_handler().on_replace({own, other});
  f.settle();
  auto patches = f.requests("PATCH");
  ASSERT_EQ(2u, patches.size());
  for (const auto& patch : patches) {
    json body = json::parse(patch.body);
    if (patch.target == "/api/v1/namespaces/lab/pods/a-gpu") {
      EXPECT_EQ(2u, body.size()) << body;
    } else {
      ASSERT_EQ(4u, body.size()) << body;
      EXPECT_EQ("/spec/affinity/nodeAffinity", body[3]["path"]);
    }
  }
}

TEST(ControllerTest, StartingJobLosesItsGateOnExactlyTheChosenVariantAndItsSiblingsAreDeleted) {
  Fixture f;
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  f.feed->pod_handler().on_replace({variant("a-gpu", "a", "nvidia.com/gpu", true),
                                    variant("a-cpu", "a", "cpu", true),
                                    variant("b-gpu", "b", "nvidia.com/gpu", true)});
  f.settle();

  // a starts on the only GPU: its GPU pod is released, its CPU pod deleted (same namespace).
  auto patches = f.requests("PATCH");
  ASSERT_EQ(1u, patches.size());
  EXPECT_EQ("/api/v1/namespaces/lab/pods/a-gpu", patches[0].target);
  EXPECT_EQ("application/json-patch+json", patches[0].content_type);
  // One patch: the gate's test and removal, and the pin to the planned node by its name, added
  // only if the pod still has no affinity.
  EXPECT_EQ(json::parse(R"([
      {"op":"test","path":"/spec/schedulingGates/0/name","value":"allox.io/queue"},
      {"op":"remove","path":"/spec/schedulingGates/0"},
      {"op":"test","path":"/spec/affinity","value":null},
      {"op":"add","path":"/spec/affinity","value":{"nodeAffinity":{
        "requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
          {"matchFields":[{"key":"metadata.name","operator":"In","values":["g1"]}]}]}}}}])"),
            json::parse(patches[0].body));
  auto deletes = f.requests("DELETE");
  ASSERT_EQ(1u, deletes.size());
  EXPECT_EQ("/api/v1/namespaces/lab/pods/a-cpu", deletes[0].target);
  // A gated pod is told nothing more: the gate's removal and kube-scheduler's Scheduled say it.
  EXPECT_EQ((std::vector<std::string>{}), f.event_reasons("a-gpu"));
  EXPECT_EQ((std::vector<std::string>{"Deleted: job lab/a runs as variant lab/a-gpu"}),
            f.event_reasons("a-cpu"));
  // b waits for the GPU and is told so; the book no longer offers a's CPU variant.
  auto b = f.event_reasons("b-gpu");
  ASSERT_EQ(1u, b.size());
  EXPECT_EQ(0u, b[0].rfind("Queued: position 1 of 1 for gpu, est. start ", 0)) << b[0];
  auto job =
      f.planner->read([](const JobBook& book) { return book.job("lab/a")->variants.size(); });
  EXPECT_EQ(1u, job);

  // A status update of the doomed sibling does not bring it back into the book.
  f.feed->pod_handler().on_upsert(variant("a-cpu", "a", "cpu", true));
  EXPECT_EQ(
      1u, f.planner->read([](const JobBook& book) { return book.job("lab/a")->variants.size(); }));
}

TEST(ControllerTest, LateVariantOfARunningJobIsDeletedWithTheReason) {
  Fixture f;
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  json running = variant("a-gpu", "a", "nvidia.com/gpu", false);
  f.feed->pod_handler().on_replace({running});
  f.planner->solve_now();
  running["spec"]["nodeName"] = "g1";  // bound: the watch says so
  f.feed->pod_handler().on_upsert(running);
  ASSERT_EQ(JobPhase::kRunning,
            f.planner->read([](const JobBook& book) { return book.job("lab/a")->record.phase; }));
  f.feed->pod_handler().on_upsert(variant("a-cpu-late", "a", "cpu", true));
  f.settle();
  auto deletes = f.requests("DELETE");
  ASSERT_EQ(1u, deletes.size());
  EXPECT_EQ("/api/v1/namespaces/lab/pods/a-cpu-late", deletes[0].target);
  EXPECT_EQ((std::vector<std::string>{"Deleted: job lab/a runs as variant lab/a-gpu"}),
            f.event_reasons("a-cpu-late"));

  // Its pod succeeds: the job is done, and the GPU is free for the next.
  running["status"]["phase"] = "Succeeded";
  f.feed->pod_handler().on_upsert(running);
  EXPECT_EQ(JobPhase::kDone,
            f.planner->read([](const JobBook& book) { return book.job("lab/a")->record.phase; }));
}

// Job a runs as a-gpu on g1 (the watch shows it bound); its CPU variant a-cpu, seen at
// resourceVersion 7, is late: the controller deletes it. Returns that sibling as seen.
json run_a_with_a_late_sibling(Fixture& f) {
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  json running = variant("a-gpu", "a", "nvidia.com/gpu", false);
  f.feed->pod_handler().on_replace({running});
  f.planner->solve_now();
  running["spec"]["nodeName"] = "g1";
  f.feed->pod_handler().on_upsert(running);
  json late = variant("a-cpu", "a", "cpu", true);
  late["metadata"]["resourceVersion"] = "7";
  f.feed->pod_handler().on_upsert(late);
  return late;
}

// Controller expectations (ControllerOptions::expectation): a DELETE that succeeded is not sent
// again while the watch, lagging, still shows the pod at the version deleted, even past
// `settle` (its job requeued then) and on a resync; the pod seen at a new version is acted on
// again.
TEST(ControllerTest, ASucceededDeleteIsNotSentAgainWhileTheWatchLagsBehindIt) {
  Fixture f;
  ControllerOptions options;
  options.settle = std::chrono::milliseconds(20);
  options.steady_now = f.steady.now();
  f.controller = std::make_unique<Controller>(
      *f.planner, *f.feed, f.client, f.events, [&f] { return f.leading; }, options);
  json late = run_a_with_a_late_sibling(f);
  f.settle();
  ASSERT_EQ(1u, f.requests("DELETE").size());
  for (int pass = 0; pass < 3; ++pass) {
    f.steady.advance(std::chrono::milliseconds(40));  // past settle: its job is due again
    f.controller->resync();                           // and every job looked at
    EXPECT_EQ(std::vector<std::string>{"lab/a"}, f.settle()) << pass;
    // the watch has not shown the deletion
  }
  EXPECT_EQ(1u, f.requests("DELETE").size());

  late["metadata"]["resourceVersion"] = "9";  // the watch shows the pod as it is now
  f.feed->pod_handler().on_upsert(late);
  f.settle();
  auto deletes = f.requests("DELETE");
  ASSERT_EQ(2u, deletes.size());
  EXPECT_EQ("9", json::parse(deletes[1].body)["preconditions"]["resourceVersion"]);
}

// The resync looks again at the jobs with a pod still waiting to run, and leaves out a job whose
// pods are all bound or ended (reconcile has nothing to act on there until one changes, and the
// watch enqueues that change), until a pod of it waits again.
TEST(ControllerTest, TheResyncLeavesOutAJobWhosePodsAllRunOrEnded) {
  Fixture f;
  json late = run_a_with_a_late_sibling(f);
  f.feed->pod_handler().on_upsert(
      variant("b-gpu", "b", "nvidia.com/gpu", true));  // waits: g1 is taken
  f.settle();
  ASSERT_EQ(1u, f.requests("DELETE").size());
  f.feed->pod_handler().on_delete(late);  // the watch shows the sibling gone
  f.settle();
  auto resynced = [&f] {
    f.controller->resync();
    std::vector<std::string> keys = f.controller->drain();
    std::sort(keys.begin(), keys.end());
    return keys;
  };
  EXPECT_EQ(std::vector<std::string>{"lab/b"}, resynced());
  json ended = variant("a-gpu", "a", "nvidia.com/gpu", false);
  ended["spec"]["nodeName"] = "g1";
  ended["status"]["phase"] = "Succeeded";
  f.feed->pod_handler().on_upsert(ended);
  f.settle();
  EXPECT_EQ(std::vector<std::string>{"lab/b"}, resynced());
  // A variant of a that waits (late, and pending) makes a a job to look at again.
  f.feed->pod_handler().on_upsert(variant("a-cpu2", "a", "cpu", true));
  f.controller->pods_changed();
  f.controller->drain();
  EXPECT_EQ((std::vector<std::string>{"lab/a", "lab/b"}), resynced());
}

TEST(ControllerTest,
     DeletedEventOnlyOnceTheDeleteSucceededAndARefusedDeleteIsRetriedWhenThePodChanges) {
  Fixture f;
  json late = run_a_with_a_late_sibling(f);

  // The pod changed since alloxd saw it (409, resourceVersion precondition): nothing deleted,
  // so no Deleted event.
  f.delete_status = 409;
  f.settle();
  auto deletes = f.requests("DELETE");
  ASSERT_EQ(1u, deletes.size());
  EXPECT_EQ("7", json::parse(deletes[0].body)["preconditions"]["resourceVersion"]);
  EXPECT_TRUE(f.event_reasons("a-cpu").empty());
  f.settle();  // nothing new seen: not asked again
  EXPECT_EQ(1u, f.requests("DELETE").size());

  // The watch shows the changed pod: it is deleted as it is now, and only then the event.
  f.delete_status = 200;
  late["metadata"]["resourceVersion"] = "8";
  f.feed->pod_handler().on_upsert(late);
  f.settle();
  deletes = f.requests("DELETE");
  ASSERT_EQ(2u, deletes.size());
  EXPECT_EQ("8", json::parse(deletes[1].body)["preconditions"]["resourceVersion"]);
  EXPECT_EQ((std::vector<std::string>{"Deleted: job lab/a runs as variant lab/a-gpu"}),
            f.event_reasons("a-cpu"));
}

TEST(ControllerTest, AnAdmittedJobKeepsItsSlotInLaterPlans) {
  Fixture f;
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  f.feed->pod_handler().on_replace({variant("a-gpu", "a", "nvidia.com/gpu", true),
                                    variant("b-gpu", "b", "nvidia.com/gpu", true)});
  f.planner->solve_now();
  auto plan = f.planner->latest_plan();
  ASSERT_EQ(1u, plan->starts.count("lab/a"));  // fifo: a came first
  const PlannedStart slot = plan->starts.at("lab/a");
  // b was released for that slot (by a plan that has since changed its mind): every later plan
  // keeps starting b there, so the released pod is never turned away and parked.
  ASSERT_TRUE(f.planner->admit("lab/b", "lab/b-gpu", slot).ok());
  f.planner->solve_now();
  plan = f.planner->latest_plan();
  ASSERT_EQ(1u, plan->starts.count("lab/b"));
  EXPECT_EQ("g1", plan->starts.at("lab/b").node);
  EXPECT_EQ(0u, plan->starts.count("lab/a"));
  EXPECT_EQ(1u, plan->waiting.count("lab/a"));
  // Admitting again as before is no change: the book is not planned again for it.
  const auto version = plan->version;
  ASSERT_TRUE(f.planner->admit("lab/b", "lab/b-gpu", slot).ok());
  f.planner->solve_now();
  EXPECT_EQ(version, f.planner->latest_plan()->version);
}

// The hold waits on kube-scheduler, so it is wall time: a planner clock that jumps an hour (a
// simulation's runs 100 times faster than the wall) does not end it; the wall passing it does.
TEST(ControllerTest, AnAdmissionIsHeldForWallTimeWhateverThePlannersClock) {
  std::atomic<double> clock{1'000'000};
  PlannerOptions options;
  options.clock = [&clock] { return clock.load(); };
  options.admission_hold = 0.3;
  Fixture f(options);
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  f.feed->pod_handler().on_replace({variant("a-gpu", "a", "nvidia.com/gpu", true),
                                    variant("b-gpu", "b", "nvidia.com/gpu", true)});
  f.planner->solve_now();
  const PlannedStart slot = f.planner->latest_plan()->starts.at("lab/a");  // fifo: a first
  ASSERT_TRUE(f.planner->admit("lab/b", "lab/b-gpu", slot).ok());
  const std::uint64_t admitted_version = f.planner->latest_plan()->version;
  // Each plan below follows a new job, so it is made afresh (not the last one kept).
  clock = clock + 3600;
  f.feed->pod_handler().on_upsert(variant("c-gpu", "c", "nvidia.com/gpu", true));
  f.planner->solve_now();
  ASSERT_LT(admitted_version, f.planner->latest_plan()->version);
  EXPECT_EQ(1u, f.planner->latest_plan()->starts.count("lab/b")) << "an hour on the clock: held";
  f.steady.advance(std::chrono::milliseconds(400));
  f.feed->pod_handler().on_upsert(variant("d-gpu", "d", "nvidia.com/gpu", true));
  f.planner->solve_now();
  EXPECT_EQ(0u, f.planner->latest_plan()->starts.count("lab/b")) << "0.4 s of wall: lapsed";
  EXPECT_EQ(1u, f.planner->latest_plan()->starts.count("lab/a"));
}

// The node's machines of one device, as the book numbers them (JobBook::slots).
std::vector<int> gpu_slots_of(const Planner& planner, const std::string& node) {
  return planner.read([&](const JobBook& book) {
    std::vector<int> out;
    for (std::size_t i = 0; i < book.slots().size(); ++i) {
      if (book.slots()[i].node == node && book.slots()[i].device == "gpu") {
        out.push_back(static_cast<int>(i));
      }
    }
    return out;
  });
}

PlannedStart gpu_slot(const std::string& node, int slot) {
  PlannedStart start;
  start.node = node;
  start.device = "gpu";
  start.slot = slot;
  return start;
}

JobVariant variant_in_book(const Planner& planner, const std::string& job) {
  return planner.read([&](const JobBook& book) { return book.job(job)->variants.begin()->second; });
}

// A start that names no machine (the watch's, or a bind kube-scheduler sent off its planned
// node) takes the node's first free one, which may be the one held for an admitted job. That
// job keeps its node on the machine left there; planned afresh, the queue's head would take
// it and the released pod would be turned away.
TEST(ControllerTest, AnAdmissionWhoseMachineAnotherStartTookKeepsItsNodeOnTheOneLeft) {
  Fixture f;
  f.feed->node_handler().on_replace({testing::make_node("g1", "3", "0")});
  f.feed->pod_handler().on_replace({variant("a-gpu", "a", "nvidia.com/gpu", true),
                                    variant("b-gpu", "b", "nvidia.com/gpu", true),
                                    variant("c-gpu", "c", "nvidia.com/gpu", true),
                                    variant("d-gpu", "d", "nvidia.com/gpu", true)});
  f.planner->solve_now();
  const std::vector<int> slots = gpu_slots_of(*f.planner, "g1");
  ASSERT_EQ(3u, slots.size());
  // b and c were released for the first two machines (a, first in the queue, was not).
  ASSERT_TRUE(f.planner->admit("lab/b", "lab/b-gpu", gpu_slot("g1", slots[0])).ok());
  ASSERT_TRUE(f.planner->admit("lab/c", "lab/c-gpu", gpu_slot("g1", slots[1])).ok());
  auto started = f.planner->record_start(variant_in_book(*f.planner, "lab/d"), "g1", -1);
  ASSERT_TRUE(started.ok()) << started.message();
  ASSERT_EQ(slots[0], f.planner->read([](const JobBook& b) { return b.job("lab/d")->slot; }))
      << "the premise: d took the machine held for b";
  f.planner->solve_now();
  const auto plan = f.planner->latest_plan();
  ASSERT_EQ(1u, plan->starts.count("lab/b"));
  EXPECT_EQ(gpu_slot("g1", slots[2]), plan->starts.at("lab/b"));
  ASSERT_EQ(1u, plan->starts.count("lab/c"));
  EXPECT_EQ(gpu_slot("g1", slots[1]), plan->starts.at("lab/c"));
  EXPECT_EQ(1u, plan->waiting.count("lab/a")) << "the queue's head waits for the next machine";
}

// The watch names a node, not a machine: an admitted job seen bound there runs on the machine
// held for it, not on the node's first free one (another admission's).
TEST(ControllerTest, AStartSeenByTheWatchTakesTheMachineHeldForItsJob) {
  Fixture f;
  f.feed->node_handler().on_replace({testing::make_node("g1", "3", "0")});
  f.feed->pod_handler().on_replace({variant("a-gpu", "a", "nvidia.com/gpu", true),
                                    variant("b-gpu", "b", "nvidia.com/gpu", true)});
  f.planner->solve_now();
  const std::vector<int> slots = gpu_slots_of(*f.planner, "g1");
  ASSERT_EQ(3u, slots.size());
  ASSERT_TRUE(f.planner->admit("lab/a", "lab/a-gpu", gpu_slot("g1", slots[2])).ok());
  auto started = f.planner->record_start(variant_in_book(*f.planner, "lab/a"), "g1", -1);
  ASSERT_TRUE(started.ok()) << started.message();
  EXPECT_EQ(slots[2], f.planner->read([](const JobBook& b) { return b.job("lab/a")->slot; }));
}

// A hold moved to another machine of its node is the same commitment: it lapses
// admission_hold after the first admission, not after the move.
TEST(ControllerTest, AHoldMovedOnItsNodeLapsesFromItsFirstAdmission) {
  PlannerOptions options;
  options.admission_hold = 0.3;
  Fixture f(options);
  f.feed->node_handler().on_replace({testing::make_node("g1", "2", "0")});
  f.feed->pod_handler().on_replace({variant("a-gpu", "a", "nvidia.com/gpu", true),
                                    variant("b-gpu", "b", "nvidia.com/gpu", true),
                                    variant("c-gpu", "c", "nvidia.com/gpu", true)});
  f.planner->solve_now();
  const std::vector<int> slots = gpu_slots_of(*f.planner, "g1");
  ASSERT_EQ(2u, slots.size());
  ASSERT_TRUE(f.planner->admit("lab/c", "lab/c-gpu", gpu_slot("g1", slots[0])).ok());
  f.steady.advance(std::chrono::milliseconds(150));
  ASSERT_TRUE(f.planner->admit("lab/c", "lab/c-gpu", gpu_slot("g1", slots[1])).ok());
  f.planner->solve_now();
  EXPECT_EQ(1u, f.planner->latest_plan()->starts.count("lab/c")) << "held, on its new machine";
  f.steady.advance(std::chrono::milliseconds(250));  // 0.4 s since the first
  f.feed->pod_handler().on_upsert(variant("d-gpu", "d", "nvidia.com/gpu", true));
  f.planner->solve_now();
  const auto plan = f.planner->latest_plan();
  EXPECT_EQ(0u, plan->starts.count("lab/c")) << "lapsed: planned afresh, behind a and b";
  EXPECT_EQ(1u, plan->starts.count("lab/a"));
  EXPECT_EQ(1u, plan->starts.count("lab/b"));
}

// After a plan, the next one waits for the controller to have admitted its starts (at most
// admissions_wait): solved before they are in the book, it would not hold their machines.
TEST(ControllerTest, TheNextPlanWaitsUntilTheControllerActedOnTheLastOne) {
  PlannerOptions options;
  options.admissions_wait = 30;
  Fixture f(options);
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  f.feed->pod_handler().on_replace({variant("a-gpu", "a", "nvidia.com/gpu", true)});
  f.planner->solve_now();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  // solve_now's own ask may be met by a plan already being made, and then be planned again.
  ASSERT_TRUE(f.planner->wait_until_idle(deadline));
  const std::uint64_t acted = f.planner->latest_plan()->version;
  f.feed->pod_handler().on_upsert(variant("b-gpu", "b", "nvidia.com/gpu", true));
  const std::uint64_t with_b = f.planner->read([](const JobBook& b) { return b.version(); });
  // The pause after the plan (0.2 s) is over and the thread holds b's plan back: it says so.
  ASSERT_TRUE(f.planner->wait_until_holding_for_controller(deadline));
  EXPECT_EQ(acted, f.planner->latest_plan()->version) << "planned before the controller acted";
  EXPECT_TRUE(f.planner->busy()) << "b's change waits";
  f.controller->pods_changed();
  f.controller->plan_changed();  // a's start enqueued as an admission the plan waits for
  f.controller->drain();         // admits a, and says so
  const auto plan = f.planner->wait_for_plan(with_b, deadline);
  EXPECT_GE(plan->version, with_b);
  EXPECT_EQ(1u, plan->waiting.count("lab/b"));
  EXPECT_EQ(1u, plan->starts.count("lab/a")) << "a's admission held in it";
}

// The controller admits a plan's starts together: every sibling leaves the book and the store
// in one transaction, and each admission has its own outcome.
TEST(ControllerTest, AdmissionsTogetherDropEverySiblingAndReportEachOutcome) {
  Fixture f;
  f.feed->node_handler().on_replace({testing::make_node("g1", "2", "2")});
  f.feed->pod_handler().on_replace(
      {variant("a-gpu", "a", "nvidia.com/gpu", true), variant("a-cpu", "a", "cpu", true),
       variant("b-gpu", "b", "nvidia.com/gpu", true), variant("b-cpu", "b", "cpu", true)});
  f.planner->solve_now();
  PlannedStart slot;
  slot.node = "g1";
  slot.device = "gpu";
  const std::vector<Status> outcomes = f.planner->admit_all({{"lab/a", "lab/a-gpu", slot},
                                                             {"lab/ghost", "lab/ghost-gpu", slot},
                                                             {"lab/b", "lab/b-cpu", slot}});
  ASSERT_EQ(3u, outcomes.size());
  EXPECT_TRUE(outcomes[0].ok()) << outcomes[0].message();
  EXPECT_FALSE(outcomes[1].ok());
  EXPECT_NE(std::string::npos, outcomes[1].message().find("unknown")) << outcomes[1].message();
  EXPECT_TRUE(outcomes[2].ok()) << outcomes[2].message();
  EXPECT_EQ("lab/a-gpu", f.planner->admitted_as("lab/a").value_or(""));
  EXPECT_EQ("lab/b-cpu", f.planner->admitted_as("lab/b").value_or(""));
  auto variants_of = [](const Planner& planner, const std::string& job) {
    return planner.read([&](const JobBook& book) {
      std::vector<std::string> keys;
      for (const auto& [key, v] : book.job(job)->variants) keys.push_back(key);
      return keys;
    });
  };
  EXPECT_EQ(std::vector<std::string>{"lab/a-gpu"}, variants_of(*f.planner, "lab/a"));
  EXPECT_EQ(std::vector<std::string>{"lab/b-cpu"}, variants_of(*f.planner, "lab/b"));
  // The store holds what the book does: a planner restored from it would know no sibling.
  auto stored = Store::open_for_reading(f.config.database);
  ASSERT_TRUE(stored.ok()) << stored.message();
  auto state = (*stored)->load();
  ASSERT_TRUE(state.ok()) << state.message();
  std::map<std::string, std::vector<std::string>> stored_variants;
  for (const StoredVariant& v : state->variants) {
    stored_variants[v.variant.job_id].push_back(pod_key(v.variant.pod));
  }
  EXPECT_EQ(std::vector<std::string>{"lab/a-gpu"}, stored_variants["lab/a"]);
  EXPECT_EQ(std::vector<std::string>{"lab/b-cpu"}, stored_variants["lab/b"]);
}

// kube-scheduler's status for a pod it tried and parked (handleSchedulingFailure).
json turned_away(json pod) {
  pod["status"]["conditions"] = json::array({{{"type", "PodScheduled"},
                                              {"status", "False"},
                                              {"reason", "Unschedulable"},
                                              {"message", "0/1 nodes are available"}}});
  return pod;
}

TEST(ControllerTest, AnUngatedPodTheSchedulerHasNotTurnedAwayIsLeftToIt) {
  Fixture f;
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  json pod = variant("a-gpu", "a", "nvidia.com/gpu", false);
  // Gated once: the API server's SchedulingGated condition stays until the scheduler writes.
  pod["status"]["conditions"] =
      json::array({{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "SchedulingGated"}}});
  f.feed->pod_handler().on_replace({pod});
  f.settle();
  ASSERT_EQ(1u, f.planner->latest_plan()->starts.count("lab/a"));
  EXPECT_TRUE(f.requests("PATCH").empty()) << "no nudge for a pod in the active queue";
  // Then the scheduler turns it away: nudged.
  pod = turned_away(pod);
  pod["metadata"]["resourceVersion"] = "2";
  f.feed->pod_handler().on_upsert(pod);
  f.settle();
  EXPECT_EQ(1u, f.requests("PATCH").size());
}

// A pod released onto a node that then closed (cordoned) waits for it for ever: its pin cannot
// change. Its owner is told, once, what to do; while the node is open nothing is said.
TEST(ControllerTest, APodPinnedToANodeThatClosedIsToldToBeDeleted) {
  Fixture f;
  json node = testing::make_node("g1", "1", "0");
  f.feed->node_handler().on_replace({node, testing::make_node("g2", "1", "0")});
  json pod = variant("a-gpu", "a", "nvidia.com/gpu", true);
  f.feed->pod_handler().on_replace({pod});
  f.settle();
  auto patches = f.requests("PATCH");
  ASSERT_EQ(1u, patches.size());
  const std::string pinned = json::parse(patches[0].body)[3]["value"]["nodeAffinity"]
                                 ["requiredDuringSchedulingIgnoredDuringExecution"]
                                 ["nodeSelectorTerms"][0]["matchFields"][0]["values"][0];
  // The watch shows it ungated and pinned, turned away by kube-scheduler (its node was busy).
  pod = variant("a-gpu", "a", "nvidia.com/gpu", false);
  pod["spec"]["affinity"] = json::parse(patches[0].body)[3]["value"];
  pod = turned_away(pod);
  pod["metadata"]["resourceVersion"] = "2";
  f.feed->pod_handler().on_upsert(pod);
  f.settle();
  auto warned = [&] {
    auto reasons = f.event_reasons("a-gpu");
    return std::count_if(reasons.begin(), reasons.end(), [](const std::string& r) {
      return r.rfind("PinnedNodeUnavailable: ", 0) == 0;
    });
  };
  EXPECT_EQ(0, warned()) << "its node is open: it waits for it";

  json cordoned = testing::make_node(pinned, "1", "0");
  cordoned["spec"]["unschedulable"] = true;
  f.feed->node_handler().on_upsert(cordoned);
  pod["metadata"]["resourceVersion"] = "3";
  f.feed->pod_handler().on_upsert(pod);
  f.settle();
  ASSERT_EQ(1, warned());
  bool said = false;
  for (const auto& r : f.server.requests()) {
    if (r.method != "POST" || r.body.find("PinnedNodeUnavailable") == std::string::npos) continue;
    EXPECT_NE(std::string::npos,
              json::parse(r.body)["message"].get<std::string>().find(
                  "released onto node " + pinned +
                  ", which is cordoned (spec.unschedulable); a pinned pod cannot move: delete "
                  "the pod"))
        << r.body;
    said = true;
  }
  EXPECT_TRUE(said);
  f.settle();
  EXPECT_EQ(1, warned()) << "said once";
}

TEST(ControllerTest, UngatedPodIsNudgedWhenItsPlanSaysStartNow) {
  Fixture f;
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  f.feed->pod_handler().on_replace({turned_away(variant("a-gpu", "a", "nvidia.com/gpu", false))});
  f.settle();
  auto patches = f.requests("PATCH");
  ASSERT_EQ(1u, patches.size());
  EXPECT_EQ("application/merge-patch+json", patches[0].content_type);
  EXPECT_TRUE(json::parse(patches[0].body)["metadata"]["annotations"].contains("allox.io/nudge"));
  f.settle();  // not again at once
  EXPECT_EQ(1u, f.requests("PATCH").size());
}

TEST(ControllerTest, OnlyTheLeaderActs) {
  Fixture f;
  f.leading = false;
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  f.feed->pod_handler().on_replace(
      {variant("a-gpu", "a", "nvidia.com/gpu", true), variant("a-cpu", "a", "cpu", true)});
  f.settle();
  EXPECT_TRUE(f.server.requests().empty());
  // It still knows the queue: a second replica serves reads.
  EXPECT_EQ(
      2u, f.planner->read([](const JobBook& book) { return book.job("lab/a")->variants.size(); }));
}

TEST(ClusterFeedTest, OtherSchedulersPodsAndDeletionsAreHandled) {
  Fixture f;
  f.feed->node_handler().on_replace({testing::make_node("g1", "2", "64")});
  json other = variant("x", "x", "nvidia.com/gpu", false);
  other["spec"]["schedulerName"] = "default-scheduler";
  f.feed->pod_handler().on_replace({other, variant("a-gpu", "a", "nvidia.com/gpu", true)});
  EXPECT_TRUE(f.planner->read([](const JobBook& book) { return book.job("lab/x") == nullptr; }));
  EXPECT_EQ(1u, f.feed->pods().size());
  // The only variant is deleted before it ran: the job leaves the queue.
  f.feed->pod_handler().on_delete(variant("a-gpu", "a", "nvidia.com/gpu", true));
  EXPECT_TRUE(f.planner->read([](const JobBook& book) { return book.job("lab/a") == nullptr; }));
  // Capacity from the nodes: 2 GPUs and 64 / 32 = 2 CPU bundles.
  EXPECT_EQ(2,
            f.planner->read([](const JobBook& book) { return book.capacity("g1", "gpu").total; }));
  EXPECT_EQ(2,
            f.planner->read([](const JobBook& book) { return book.capacity("g1", "cpu").total; }));
  // A re-list without a node removes it.
  f.feed->node_handler().on_replace({});
  EXPECT_FALSE(f.planner->read([](const JobBook& book) { return book.has_node("g1"); }));
}

// /bind asks the API server to bind, then records the start. A short job can be bound, run and
// finish on the watch in between: recording this same run again is not a refusal (kube-scheduler
// would count a bind failure for a pod that ran), and it is not a second start either.
TEST(ClusterFeedTest, BindRecordedAfterTheWatchSawThePodBoundAndFinished) {
  Fixture f;
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  json pod = variant("a-gpu", "a", "nvidia.com/gpu", false);
  f.feed->pod_handler().on_replace({pod});
  const JobVariant chosen = f.planner->read(
      [](const JobBook& book) { return book.job("lab/a")->variants.at("lab/a-gpu"); });
  pod["spec"]["nodeName"] = "g1";
  f.feed->pod_handler().on_upsert(pod);
  pod["status"]["phase"] = "Succeeded";
  f.feed->pod_handler().on_upsert(pod);
  ASSERT_EQ(JobPhase::kDone,
            f.planner->read([](const JobBook& book) { return book.job("lab/a")->record.phase; }));

  auto started = f.planner->record_start(chosen, "g1", -1);
  ASSERT_TRUE(started.ok()) << started.message();
  EXPECT_EQ(JobPhase::kDone, started->record.phase);
  EXPECT_TRUE(started->unused_variants.empty());
  // Still done, and the GPU it used is free again: nothing was started twice.
  EXPECT_EQ(1,
            f.planner->read([](const JobBook& book) { return book.capacity("g1", "gpu").free; }));
  // The same pod on another node is a different claim and is still refused.
  EXPECT_FALSE(f.planner->record_start(chosen, "g2", -1).ok());
}

// A discrete-event driver calls alloxd quiet only when it has seen every pod and is not busy.
// The feed shows a pod (pods()) before the planner has heard of it, so the feed itself must
// count as busy until the planner has the change and the controller was told (on_change):
// otherwise the driver jumps the clock past a completion nobody has acted on yet.
TEST(ClusterFeedTest, BusyFromShowingAPodUntilThePlannerAndTheControllerHaveIt) {
  Fixture f;
  struct Seen {
    bool busy = false;
    std::string version;
    JobPhase phase = JobPhase::kQueued;
  };
  std::vector<Seen> seen;
  ClusterFeed* feed = nullptr;
  ClusterFeed watched(f.client, *f.planner, f.config, [&] {
    const BookJob* job = nullptr;
    Seen s;
    s.busy = feed->busy();
    s.version = feed->pods().at("lab/a-gpu").resource_version;
    s.phase = f.planner->read([&](const JobBook& book) {
      job = book.job("lab/a");
      return job == nullptr ? JobPhase::kRemoved : job->record.phase;
    });
    seen.push_back(s);
  });
  feed = &watched;
  EXPECT_FALSE(watched.busy());
  watched.node_handler().on_replace({testing::make_node("g1", "1", "0")});
  EXPECT_FALSE(watched.busy());
  json pod = variant("a-gpu", "a", "nvidia.com/gpu", false);
  pod["metadata"]["resourceVersion"] = "5";
  watched.pod_handler().on_replace({pod});
  pod["spec"]["nodeName"] = "g1";
  pod["metadata"]["resourceVersion"] = "6";
  watched.pod_handler().on_upsert(pod);
  pod["status"]["phase"] = "Succeeded";
  pod["metadata"]["resourceVersion"] = "7";
  watched.pod_handler().on_upsert(pod);
  EXPECT_FALSE(watched.busy());

  ASSERT_EQ(3u, seen.size());
  const std::vector<std::pair<std::string, JobPhase>> want = {
      {"5", JobPhase::kQueued}, {"6", JobPhase::kRunning}, {"7", JobPhase::kDone}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(seen[i].busy) << "change " << i;
    EXPECT_EQ(want[i].first, seen[i].version) << "change " << i;
    EXPECT_EQ(want[i].second, seen[i].phase) << "change " << i;
  }
}

}  // namespace
}  // namespace allox::extender

namespace allox::extender {
namespace {

// The handlers only enqueue job keys: told of the same job many times while its key waits, the
// controller reconciles it once. Started, its workers drain the queue; stop() ends them.
TEST(ControllerTest, HandlerCallsForAWaitingJobAreOneReconcileAndStopEndsTheWorkers) {
  Fixture f;
  f.feed->node_handler().on_replace({testing::make_node("g1", "0", "0")});
  json pod = variant("a-gpu", "a", "nvidia.com/gpu", true);
  f.feed->pod_handler().on_replace({pod});
  for (int i = 0; i < 30; ++i) {
    pod["metadata"]["resourceVersion"] = std::to_string(10 + i);
    f.feed->pod_handler().on_upsert(pod);
    f.controller->pods_changed();
  }
  EXPECT_TRUE(f.controller->busy());
  EXPECT_EQ(1u, f.controller->counts().queue.waiting);
  EXPECT_EQ(std::vector<std::string>{"lab/a"}, f.controller->drain());
  EXPECT_EQ(1u, f.controller->counts().reconciled);
  EXPECT_FALSE(f.controller->busy());

  f.controller->start();  // the first resync is due at once: every job looked at again
  ASSERT_TRUE(
      f.controller->wait_until_idle(std::chrono::steady_clock::now() + std::chrono::seconds(20)));
  EXPECT_EQ(2u, f.controller->counts().reconciled);
  f.controller->stop();
  f.controller->pods_changed();
  EXPECT_FALSE(f.controller->busy()) << "stopped: nothing is enqueued any more";
}

}  // namespace
}  // namespace allox::extender

namespace allox::extender {
namespace {

std::set<std::string> as_set(const std::vector<std::string>& keys) {
  return {keys.begin(), keys.end()};
}

// Options under which no pod gets a second Queued event: what is reconciled is then only what
// may have changed.
ControllerOptions incremental() {
  ControllerOptions options;
  options.requeue_event = std::chrono::hours(1);
  return options;
}

// After a first look at every job, a job is reconciled when one of its pods changed or left,
// when the plan added, changed or dropped its start, or when it asked to be looked at again
// (requeue_after); never a waiting job whose Queued event is recent and that did not change,
// nor a released one that did not change. And none of those is missed: a sibling is deleted
// when its job starts elsewhere, a job the plan starts later is released, though none of its
// pods changed.
TEST(ControllerTest, AJobIsReconciledExactlyWhenSomethingOfItMayHaveChangedAndNoneIsMissed) {
  Fixture f;
  std::unique_ptr<Controller> own = f.own_controller(incremental());
  Controller& inc = *own;
  auto pass = [&] { return as_set(f.pass(inc)); };
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  std::vector<json> pods;
  for (std::string job : {"a", "b", "c", "d"}) {
    pods.push_back(variant(job + "-gpu", job, "nvidia.com/gpu", true));
    pods.push_back(variant(job + "-cpu", job, "cpu", true));
  }
  f.feed->pod_handler().on_replace(pods);

  // The first look is at every job: a is released on the GPU, the rest are told they wait.
  EXPECT_EQ(as_set({"lab/a", "lab/b", "lab/c", "lab/d"}), pass());
  EXPECT_EQ(1u, f.requests("PATCH").size());
  EXPECT_EQ(1u, f.requests("DELETE").size());  // a-cpu
  for (std::string pod : {"b-gpu", "b-cpu", "c-gpu", "c-cpu", "d-gpu", "d-cpu"}) {
    ASSERT_EQ(1u, f.event_reasons(pod).size()) << pod;
  }

  // Nothing changed: nobody. a's GPU pod was released and a's CPU pod deleted; a rests until
  // the watch shows what came of it (or the actions' settle time passes).
  EXPECT_EQ(as_set({}), pass());

  // c's CPU pod changes: c is looked at, nobody else.
  json c_cpu = variant("c-cpu", "c", "cpu", true);
  c_cpu["metadata"]["resourceVersion"] = "9";
  f.feed->pod_handler().on_upsert(c_cpu);
  EXPECT_EQ(as_set({"lab/c"}), pass());

  // a's pod binds and finishes; its sibling's deletion shows. The next plan starts b, none of
  // whose pods changed: b's GPU pod is released and its CPU pod deleted all the same.
  json a_gpu = variant("a-gpu", "a", "nvidia.com/gpu", false);
  a_gpu["spec"]["nodeName"] = "g1";
  f.feed->pod_handler().on_upsert(a_gpu);
  a_gpu["status"]["phase"] = "Succeeded";
  f.feed->pod_handler().on_upsert(a_gpu);
  f.feed->pod_handler().on_delete(variant("a-cpu", "a", "cpu", true));
  const std::set<std::string> looked_at = pass();
  auto patches = f.requests("PATCH");
  ASSERT_EQ(2u, patches.size());
  EXPECT_EQ("/api/v1/namespaces/lab/pods/b-gpu", patches[1].target);
  auto deletes = f.requests("DELETE");
  ASSERT_EQ(2u, deletes.size());
  EXPECT_EQ("/api/v1/namespaces/lab/pods/b-cpu", deletes[1].target);
  EXPECT_EQ(1u, looked_at.count("lab/b"));
  EXPECT_EQ(0u, looked_at.count("lab/d"));  // still quiet

  // A waiting pod whose job runs elsewhere (the /bind of its sibling, seen by the watch) is
  // deleted though it did not change itself: d's GPU pod binds without a plan saying so.
  json d_gpu = variant("d-gpu", "d", "nvidia.com/gpu", false);
  d_gpu["spec"]["nodeName"] = "g1";
  f.feed->pod_handler().on_upsert(d_gpu);
  EXPECT_EQ(1u, pass().count("lab/d"));
  deletes = f.requests("DELETE");
  ASSERT_EQ(3u, deletes.size());
  EXPECT_EQ("/api/v1/namespaces/lab/pods/d-cpu", deletes[2].target);
}

// A quiet waiting job is looked at again once its Queued event may be followed by another: it
// asked to be requeued then.
TEST(ControllerTest, AQuietWaitingJobIsLookedAtAgainWhenItsQueuedEventIsDue) {
  Fixture f;
  ControllerOptions options;
  options.requeue_event = std::chrono::milliseconds(50);
  std::unique_ptr<Controller> own = f.own_controller(options);
  Controller& inc = *own;
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  f.feed->pod_handler().on_replace({variant("a-gpu", "a", "nvidia.com/gpu", true),
                                    variant("b-gpu", "b", "nvidia.com/gpu", true)});
  f.pass(inc);
  ASSERT_EQ(1u, f.event_reasons("b-gpu").size());
  EXPECT_EQ(0u, as_set(inc.drain()).count("lab/b")) << "told: quiet until requeue_event";
  f.steady.advance(std::chrono::milliseconds(100));
  EXPECT_EQ(1u, as_set(inc.drain()).count("lab/b"));
}

// A released pod rests while kube-scheduler has it: looked at again when it changes, and, once
// parked (turned away), every renudge for another nudge; not at every turn while thousands of
// released pods wait for their binds.
TEST(ControllerTest, AReleasedPodRestsUntilItChangesAndAParkedOneIsNudgedEveryRenudge) {
  Fixture f;
  ControllerOptions options = incremental();
  options.renudge = std::chrono::milliseconds(200);
  std::unique_ptr<Controller> own = f.own_controller(options);
  Controller& inc = *own;
  auto pass = [&] { return as_set(f.pass(inc)); };
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  json pod = variant("a-gpu", "a", "nvidia.com/gpu", true);
  f.feed->pod_handler().on_replace({pod});
  pass();  // released
  ASSERT_EQ(1u, f.requests("PATCH").size());

  pod = variant("a-gpu", "a", "nvidia.com/gpu", false);  // the watch shows it ungated
  pod["metadata"]["resourceVersion"] = "2";
  f.feed->pod_handler().on_upsert(pod);
  EXPECT_EQ(as_set({"lab/a"}), pass());
  EXPECT_EQ(as_set({}), pass()) << "released and unchanged: it rests";
  EXPECT_EQ(1u, f.requests("PATCH").size());

  f.steady.advance(options.renudge);  // past renudge since its release
  pod = turned_away(pod);
  pod["metadata"]["resourceVersion"] = "3";
  f.feed->pod_handler().on_upsert(pod);
  EXPECT_EQ(as_set({"lab/a"}), pass());
  EXPECT_EQ(2u, f.requests("PATCH").size()) << "parked: nudged";
  EXPECT_EQ(as_set({}), pass()) << "nudged: it rests until renudge";
  EXPECT_EQ(2u, f.requests("PATCH").size());
  f.steady.advance(options.renudge + std::chrono::milliseconds(20));
  EXPECT_EQ(as_set({"lab/a"}), pass());
  EXPECT_EQ(3u, f.requests("PATCH").size()) << "still parked after renudge: nudged again";
}

// A resync looks at every released pod again but remembers which it released before: a parked
// one is not nudged again before renudge because a resync came.
TEST(ControllerTest, AResyncDoesNotNudgeAParkedReleasedPodAgainBeforeRenudge) {
  Fixture f;
  ControllerOptions options;
  options.renudge = std::chrono::hours(1);
  std::unique_ptr<Controller> own = f.own_controller(options);
  Controller& full = *own;
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  f.feed->pod_handler().on_replace({turned_away(variant("a-gpu", "a", "nvidia.com/gpu", false))});
  for (int i = 0; i < 3; ++i) {
    full.resync();
    EXPECT_EQ(1u, as_set(f.pass(full)).count("lab/a")) << i;
  }
  EXPECT_EQ(1u, f.requests("PATCH").size()) << "nudged once, when its plan said start now";
}

// A start the plan drops (here: its node left) enqueues its job though none of the job's pods
// changed: the released pod is looked at again.
TEST(ControllerTest, AStartThePlanDropsIsLookedAtThoughItsPodDidNotChange) {
  Fixture f;
  std::unique_ptr<Controller> own = f.own_controller(incremental());
  Controller& inc = *own;
  auto pass = [&] { return as_set(f.pass(inc)); };
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  f.feed->pod_handler().on_replace({variant("a-gpu", "a", "nvidia.com/gpu", false)});
  pass();
  ASSERT_EQ(as_set({}), pass());
  f.feed->node_handler().on_replace({testing::make_node("c1", "0", "4")});
  EXPECT_EQ(as_set({"lab/a"}), pass());
  ASSERT_EQ(0u, f.planner->latest_plan()->starts.count("lab/a"));
}

}  // namespace
}  // namespace allox::extender

namespace allox::extender {
namespace {

// A failing action (the API server answers 503) is retried with the job's back-off (WorkQueue's
// add_rate_limited) up to max_attempts, then given up with one warning naming the action and
// its error: the worker has no caller to tell. A retry is a debug line.
TEST(ControllerTest, AFailingActionIsRetriedWithBackOffThenGivenUpWithOneWarning) {
  Fixture f;
  ControllerOptions options;
  options.max_attempts = 3;
  options.backoff_initial = std::chrono::milliseconds(1);
  options.backoff_max = std::chrono::milliseconds(2);
  std::unique_ptr<Controller> own = f.own_controller(options);
  run_a_with_a_late_sibling(f);
  f.delete_status = 503;
  std::ostringstream log;
  configure_log({"alloxd", LogLevel::kDebug, LogFormat::kJson}, log);
  f.pass(*own);
  for (int ms : {1, 2, 2}) {
    f.steady.advance(std::chrono::milliseconds(ms));  // the back-off of the attempt before
    own->drain();
  }
  configure_log(LogOptions{});
  EXPECT_EQ(3u, f.requests("DELETE").size());
  const Controller::Counts counts = own->counts();
  EXPECT_EQ(3u, counts.failed);
  EXPECT_EQ(2u, counts.retried);
  EXPECT_EQ(1u, counts.given_up);

  int retries = 0, give_ups = 0;
  std::istringstream lines(log.str());
  for (std::string line; std::getline(lines, line);) {
    const auto event = nlohmann::json::parse(line);
    const bool retry = event["msg"] == "action failed; retrying";
    const bool give_up = event["msg"] == "action failed; giving up";
    if (!retry && !give_up) continue;
    EXPECT_EQ("delete lab/a-cpu", event["action"]) << line;
    EXPECT_NE(std::string::npos, event["error"].get<std::string>().find("503")) << line;
    if (retry && event["level"] == "debug") ++retries;
    if (give_up && event["level"] == "warning") {
      ++give_ups;
      EXPECT_EQ(3, event["attempts"]) << line;
    }
  }
  EXPECT_EQ(2, retries) << log.str();
  EXPECT_EQ(1, give_ups) << log.str();
}

TEST(ControllerTest, ASucceedingActionLogsNothingAtInfo) {
  Fixture f;
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  f.feed->pod_handler().on_replace({variant("a-gpu", "a", "nvidia.com/gpu", true)});
  std::ostringstream log;
  configure_log({"alloxd", LogLevel::kInfo, LogFormat::kText}, log);
  f.settle();
  configure_log(LogOptions{});
  ASSERT_EQ(1u, f.requests("PATCH").size());
  EXPECT_EQ(1u, f.controller->counts().done);
  EXPECT_EQ("", log.str());
}

// A job the plan starts now is reconciled before every job already waiting in the queue (one
// tenant's hundreds of jobs to tell or tidy up must not delay another's start): its gate
// removal is the first request of the drain.
TEST(ControllerTest, APlansStartsAllLoseTheirGatesBeforeAnyUnusedVariantIsDeleted) {
  Fixture f;
  f.feed->node_handler().on_replace({testing::make_node("g1", "3", "0")});
  std::vector<json> pods;
  for (const std::string job : {"a", "b", "c"}) {
    pods.push_back(variant(job + "-cpu", job, "cpu", true));
    pods.push_back(variant(job + "-gpu", job, "nvidia.com/gpu", true));
  }
  f.feed->pod_handler().on_replace(pods);
  f.settle();
  std::vector<std::string> sent;  // "PATCH a-gpu", "DELETE a-cpu", ... in the order sent
  for (const auto& r : f.server.requests()) {
    if (r.method != "PATCH" && r.method != "DELETE") continue;
    sent.push_back(r.method + " " + r.target.substr(r.target.rfind('/') + 1));
  }
  std::string listed;
  for (const std::string& request : sent) listed += request + "; ";
  ASSERT_EQ(6u, sent.size()) << listed;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ("PATCH", sent[i].substr(0, 5)) << listed;
    EXPECT_EQ("DELETE", sent[3 + i].substr(0, 6)) << listed;
  }
  const std::set<std::string> all(sent.begin(), sent.end());
  for (const std::string job : {"a", "b", "c"}) {
    EXPECT_EQ(1u, all.count("PATCH " + job + "-gpu")) << listed;
    EXPECT_EQ(1u, all.count("DELETE " + job + "-cpu")) << listed;
  }
}

TEST(ControllerTest, AJobThePlanStartsIsReconciledBeforeHundredsOfWaitingJobs) {
  Fixture f;
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  std::vector<json> pods;
  for (int i = 0; i < 300; ++i) {
    const std::string job = "big-" + std::to_string(i);
    pods.push_back(variant(job + "-cpu", job, "cpu", true));  // no CPU bundle anywhere: waits
  }
  pods.push_back(variant("z-gpu", "z", "nvidia.com/gpu", true));
  f.feed->pod_handler().on_replace(pods);
  f.planner->solve_now();
  ASSERT_EQ(1u, f.planner->latest_plan()->starts.count("lab/z"));
  f.controller->pods_changed();  // 301 jobs, in the order of their keys: "lab/z" last
  f.controller->plan_changed();  // z starts now: an admission
  const std::vector<std::string> keys = f.controller->drain();
  ASSERT_EQ(301u, keys.size());
  EXPECT_EQ("lab/z", keys.front());
  const auto requests = f.server.requests();
  ASSERT_FALSE(requests.empty());
  EXPECT_EQ("PATCH", requests.front().method);
  EXPECT_EQ("/api/v1/namespaces/lab/pods/z-gpu", requests.front().target);
}

}  // namespace
}  // namespace allox::extender
