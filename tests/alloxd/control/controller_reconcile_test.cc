// alloxd/control/controller.h, reconcile(job key): the actions it returns for one job in each
// state (waiting, starting now, admitted or running elsewhere, parked, a gang admitted whole or
// rolled back) and when it asks to be looked at again. reconcile only reads and admits; nothing
// here runs an action, so no API server answers (the client points nowhere).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "alloxd/control/controller.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

json variant(const std::string& name, const std::string& job, const std::string& resource,
             bool gated) {
  json pod = testing::make_pod("lab", name, resource, {{"allox.io/job", job}});
  if (gated) pod["spec"]["schedulingGates"] = json::array({{{"name", "allox.io/queue"}}});
  return pod;
}

// Member `i` of gang "g" of `size` pods of one GPU each, gated, or as the watch shows it once
// released: ungated and pinned to `node`.
json member(int i, int size, const std::string& node = "") {
  json pod =
      testing::make_pod("lab", "g-" + std::to_string(i), "nvidia.com/gpu",
                        {{"allox.io/job", "g"}, {"allox.io/gang-size", std::to_string(size)}});
  if (node.empty()) {
    pod["spec"]["schedulingGates"] = json::array({{{"name", "allox.io/queue"}}});
    return pod;
  }
  pod["metadata"]["resourceVersion"] = "2";
  pod["spec"]["affinity"] = {
      {"nodeAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution",
         {{"nodeSelectorTerms",
           json::array({{{"matchFields", json::array({{{"key", "metadata.name"},
                                                       {"operator", "In"},
                                                       {"values", json::array({node})}}})}}})}}}}}};
  return pod;
}

bool has_key(const std::vector<std::string>& keys, const std::string& prefix) {
  for (const std::string& key : keys) {
    if (key.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

struct Fixture {
  std::shared_ptr<std::atomic<std::int64_t>> clock =
      std::make_shared<std::atomic<std::int64_t>>(std::int64_t{1} << 50);
  testing::ScratchDir dir;
  ExtenderConfig config;
  Metrics metrics;
  std::unique_ptr<Planner> planner;
  kube::KubeClient client{{"http://127.0.0.1:1", "", ""}};  // never called
  kube::EventRecorder events{client, {}};
  bool leading = true;
  ControllerOptions options;
  std::unique_ptr<ClusterFeed> feed;
  std::unique_ptr<Controller> controller;

  explicit Fixture(ControllerOptions controller_options = {}) : options(controller_options) {
    config = testing::make_config({}, dir.file("state.db"));
    config.scheduler_name = "allox-scheduler";
    PlannerOptions planner_options;
    planner_options.steady_now = steady();
    auto made = Planner::create(config, make_policy("fifo", PolicyOptions{}).value(), metrics,
                                planner_options);
    EXPECT_TRUE(made.ok()) << made.message();
    planner = std::move(*made);
    feed = std::make_unique<ClusterFeed>(client, *planner, config, nullptr);
    options.steady_now = steady();
    controller = std::make_unique<Controller>(
        *planner, *feed, client, events, [this] { return leading; }, options);
    planner->start();
    feed->job_handler().on_replace({});  // no Jobs: the feed is synced once its pods are listed
  }
  ~Fixture() { planner->stop(); }
  std::function<std::chrono::steady_clock::time_point()> steady() const {
    return [at = clock] {
      return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(at->load()));
    };
  }
  void advance(std::chrono::nanoseconds by) { clock->fetch_add(by.count()); }
  // The book planned and the cache brought up to the feed; then one job's reconcile.
  Reconciliation reconcile(const std::string& key) {
    planner->solve_now();
    controller->pods_changed();
    return controller->reconcile(key);
  }
};

std::vector<std::string> keys_of(const Reconciliation& r) {
  std::vector<std::string> keys;
  for (const ControlAction& action : r.actions) keys.push_back(action.key);
  return keys;
}

TEST(ControllerReconcileTest, AWaitingJobIsToldItsPlaceAndLookedAtAgainWhenAnotherMayFollow) {
  Fixture f;
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  f.feed->pod_handler().on_replace({variant("a-gpu", "a", "nvidia.com/gpu", true),
                                    variant("b-gpu", "b", "nvidia.com/gpu", true)});
  const Reconciliation b = f.reconcile("lab/b");
  EXPECT_EQ(std::vector<std::string>{"event lab/b-gpu Queued"}, keys_of(b));
  ASSERT_TRUE(b.requeue_after.has_value());
  EXPECT_EQ(f.options.requeue_event, *b.requeue_after);
  EXPECT_FALSE(f.planner->admitted_as("lab/b")) << "a waiting job is admitted nowhere";
}

TEST(ControllerReconcileTest, AJobThatStartsNowIsAdmittedReleasedPinnedAndItsSiblingDeleted) {
  Fixture f;
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  f.feed->pod_handler().on_replace(
      {variant("a-gpu", "a", "nvidia.com/gpu", true), variant("a-cpu", "a", "cpu", true)});
  const Reconciliation a = f.reconcile("lab/a");
  EXPECT_EQ((std::vector<std::string>{"delete lab/a-cpu", "ungate lab/a-gpu"}), keys_of(a));
  EXPECT_EQ("lab/a-gpu", f.planner->admitted_as("lab/a").value_or(""));
  ASSERT_TRUE(a.requeue_after.has_value());
  EXPECT_EQ(f.options.settle, *a.requeue_after) << "looked at again if the watch shows nothing";
  // Another job's reconcile returns nothing of a's.
  EXPECT_TRUE(f.controller->reconcile("lab/zzz").actions.empty());
}

TEST(ControllerReconcileTest, AVariantOfAJobRunningElsewhereIsDeletedAndTheRunningPodKept) {
  Fixture f;
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  json running = variant("a-gpu", "a", "nvidia.com/gpu", false);
  running["spec"]["nodeName"] = "g1";
  f.feed->pod_handler().on_replace({running, variant("a-cpu-late", "a", "cpu", true)});
  ASSERT_EQ(JobPhase::kRunning,
            f.planner->read([](const JobBook& book) { return book.job("lab/a")->record.phase; }));
  EXPECT_EQ(std::vector<std::string>{"delete lab/a-cpu-late"}, keys_of(f.reconcile("lab/a")));
}

TEST(ControllerReconcileTest, AnActionThatFailedIsReturnedAgain) {
  Fixture f;
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  json running = variant("a-gpu", "a", "nvidia.com/gpu", false);
  running["spec"]["nodeName"] = "g1";
  json late = variant("a-cpu", "a", "cpu", true);
  late["metadata"]["resourceVersion"] = "7";
  f.feed->pod_handler().on_replace({running, late});
  Reconciliation first = f.reconcile("lab/a");
  ASSERT_EQ(std::vector<std::string>{"delete lab/a-cpu"}, keys_of(first));
  // Carried out as a worker would, against a client that reaches nothing: it fails, so it is
  // returned again.
  EXPECT_FALSE(first.actions.front().run().ok());
  EXPECT_EQ(std::vector<std::string>{"delete lab/a-cpu"}, keys_of(f.reconcile("lab/a")));
}

TEST(ControllerReconcileTest, AParkedJobIsToldWhyAndStaysGated) {
  Fixture f;
  f.feed->node_handler().on_replace(
      {testing::make_node("g1", "1", "0"), testing::make_node("g2", "1", "0")});
  f.feed->pod_handler().on_replace({member(0, 3), member(1, 3), member(2, 3)});
  f.planner->solve_now();
  ASSERT_EQ(1u, f.planner->latest_plan()->parked.count("lab/g")) << "3 GPUs on 2 nodes of 1";
  EXPECT_EQ((std::vector<std::string>{"event lab/g-0 Parked", "event lab/g-1 Parked",
                                      "event lab/g-2 Parked"}),
            keys_of(f.reconcile("lab/g")));
  EXPECT_FALSE(f.planner->admitted_as("lab/g"));
}

TEST(ControllerReconcileTest, AGangIsAdmittedWholeAndRolledBackWhenItsHoldLapsesUnbound) {
  Fixture f;
  f.feed->node_handler().on_replace(
      {testing::make_node("g1", "1", "0"), testing::make_node("g2", "1", "0")});
  f.feed->pod_handler().on_replace({member(0, 2)});
  // One member of two: nothing is released (it is told it waits).
  EXPECT_FALSE(has_key(keys_of(f.reconcile("lab/g")), "ungate"));
  EXPECT_FALSE(f.planner->admitted_as("lab/g"));

  f.feed->pod_handler().on_upsert(member(1, 2));
  const Reconciliation admitted = f.reconcile("lab/g");
  // Both gates together, each member told where the whole gang goes.
  EXPECT_EQ((std::vector<std::string>{"ungate lab/g-0", "event lab/g-0 Admitted", "ungate lab/g-1",
                                      "event lab/g-1 Admitted"}),
            keys_of(admitted));
  EXPECT_TRUE(f.planner->admitted_as("lab/g"));
  ASSERT_TRUE(admitted.requeue_after.has_value());
  EXPECT_EQ(f.options.settle, *admitted.requeue_after) << "the gate removals' settle comes first";

  // The watch shows both released, pinned; unbound, the gang is looked at again the moment its
  // hold (admission_hold, 60 s) lapses.
  f.advance(f.options.settle);
  const auto plan = f.planner->latest_plan();
  for (const GangPlacement& m : plan->starts.at("lab/g").members) {
    f.feed->pod_handler().on_upsert(member(m.pod == "lab/g-0" ? 0 : 1, 2, m.node));
  }
  const Reconciliation settled = f.reconcile("lab/g");
  EXPECT_FALSE(has_key(keys_of(settled), "ungate"));
  ASSERT_TRUE(settled.requeue_after.has_value());
  EXPECT_EQ(std::chrono::seconds(60) - f.options.settle + milliseconds(1), *settled.requeue_after);

  f.advance(*settled.requeue_after);
  const Reconciliation rolled_back = f.controller->reconcile("lab/g");
  EXPECT_EQ((std::vector<std::string>{"delete lab/g-0", "delete lab/g-1"}), keys_of(rolled_back));
  EXPECT_FALSE(f.planner->admitted_as("lab/g"));
}

TEST(ControllerReconcileTest, AFollowerReturnsNothing) {
  Fixture f;
  f.leading = false;
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  f.feed->pod_handler().on_replace(
      {variant("a-gpu", "a", "nvidia.com/gpu", true), variant("a-cpu", "a", "cpu", true)});
  const Reconciliation a = f.reconcile("lab/a");
  EXPECT_TRUE(a.actions.empty());
  EXPECT_FALSE(a.requeue_after.has_value());
  EXPECT_FALSE(f.planner->admitted_as("lab/a"));
}

}  // namespace
}  // namespace allox::extender
