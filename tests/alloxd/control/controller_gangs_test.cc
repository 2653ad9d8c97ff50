// alloxd/control/controller_gangs.cc: a gang released (its gates removed, each member pinned)
// when alloxd is killed before the binds. The admission lived in memory; the new process finds
// the members ungated and pinned, re-admits the gang on its pinned nodes when they still hold its
// units, or else rolls it back at once. Pods are fed as the watch would hand them over, the
// controller's actions observed at a scripted API server, the holds on a stepped clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "alloxd/control/controller.h"
#include "kube/pods.h"
#include "tests/alloxd/testing/test_support.h"
#include "tests/kube/scripted_server.h"

namespace allox::extender {
namespace {

using kube::testing::ScriptedReply;
using kube::testing::ScriptedRequest;
using kube::testing::ScriptedServer;
using nlohmann::json;

// Member `i` of the gang "g" of two pods of one GPU each, gated, or released pinned to `node`.
json member(int i, const std::string& node = "") {
  json pod = testing::make_pod("lab", "g-" + std::to_string(i), "nvidia.com/gpu",
                               {{"allox.io/job", "g"}, {"allox.io/gang-size", "2"}});
  if (node.empty()) {
    pod["spec"]["schedulingGates"] = json::array({{{"name", "allox.io/queue"}}});
    return pod;
  }
  pod["spec"]["affinity"] = {
      {"nodeAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution",
         {{"nodeSelectorTerms",
           json::array({{{"matchFields", json::array({{{"key", "metadata.name"},
                                                       {"operator", "In"},
                                                       {"values", json::array({node})}}})}}})}}}}}};
  return pod;
}

// Three nodes of one GPU each; alloxd's pieces over one store, made again by restart() as a new
// process would make them (the admissions in memory gone, the store kept).
struct Fixture {
  std::shared_ptr<std::atomic<std::int64_t>> clock =
      std::make_shared<std::atomic<std::int64_t>>(std::int64_t{1} << 50);
  testing::ScratchDir dir;
  ExtenderConfig config;
  Metrics metrics;
  // Called for every request the API server takes, before it answers (a test's watch events).
  std::function<void(const ScriptedRequest&)> on_request;
  ScriptedServer server{[this](const ScriptedRequest& r) {
    if (on_request) on_request(r);
    return ScriptedReply{r.method == "POST" ? 201 : 200, "{}", nullptr};
  }};
  kube::KubeClient client{{server.url(), "", ""}};
  kube::EventRecorder events{client, {}};
  std::unique_ptr<Planner> planner;
  std::unique_ptr<ClusterFeed> feed;
  std::unique_ptr<Controller> controller;

  Fixture() {
    config = testing::make_config({}, dir.file("state.db"));
    config.scheduler_name = "allox-scheduler";
    open();
  }
  ~Fixture() { close(); }
  std::function<std::chrono::steady_clock::time_point()> steady() const {
    return [at = clock] {
      return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(at->load()));
    };
  }
  void open() {
    PlannerOptions options;
    options.steady_now = steady();
    auto made =
        Planner::create(config, make_policy("fifo", PolicyOptions{}).value(), metrics, options);
    ASSERT_TRUE(made.ok()) << made.message();
    planner = std::move(*made);
    feed = std::make_unique<ClusterFeed>(client, *planner, config, nullptr);
    ControllerOptions controller_options;
    controller_options.steady_now = steady();
    controller = std::make_unique<Controller>(
        *planner, *feed, client, events, [] { return true; }, controller_options);
    planner->start();
    feed->node_handler().on_replace({testing::make_node("g1", "1", "0"),
                                     testing::make_node("g2", "1", "0"),
                                     testing::make_node("g3", "1", "0")});
    feed->job_handler().on_replace({});  // no Jobs: the feed is synced once its pods are listed
  }
  void close() {
    controller.reset();
    feed.reset();
    planner->stop();
    planner.reset();
  }
  void restart() {
    close();
    open();
  }
  // The current book planned, the handlers told, and every job key ready (a hold that lapsed
  // included) reconciled with its actions carried out.
  void settle() {
    planner->solve_now();
    controller->pods_changed();
    controller->plan_changed();
    controller->drain();
  }
  // The paths of the requests of `method`, sorted (the action workers run in any order).
  std::vector<std::string> targets(const std::string& method) const {
    std::vector<std::string> out;
    for (const auto& r : server.requests()) {
      if (r.method == method) out.push_back(r.target);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // The node each PATCH pinned its pod to, by pod name.
  std::map<std::string, std::string> pins() const {
    std::map<std::string, std::string> out;
    for (const auto& r : server.requests()) {
      if (r.method != "PATCH") continue;
      for (const json& op : json::parse(r.body)) {
        if (op["op"] != "add") continue;
        const json wrapped = {{"spec", {{"affinity", op["value"]}}}};
        out[r.target.substr(r.target.rfind('/') + 1)] = kube::pinned_node(wrapped);
      }
    }
    return out;
  }
  std::vector<std::string> event_reasons(const std::string& pod) const {
    std::vector<std::string> reasons;
    for (const auto& r : server.requests()) {
      if (r.method != "POST" || r.target.find("/events") == std::string::npos) continue;
      json e = json::parse(r.body);
      if (e["involvedObject"]["name"] == pod) {
        reasons.push_back(e["reason"].get<std::string>() + ": " + e["message"].get<std::string>());
      }
    }
    return reasons;
  }
  std::map<std::string, std::string> planned_nodes() const {
    std::map<std::string, std::string> out;
    auto plan = planner->latest_plan();
    if (auto start = plan->starts.find("lab/g"); start != plan->starts.end()) {
      for (const GangPlacement& m : start->second.members) out[m.pod] = m.node;
    }
    return out;
  }
};

const std::vector<std::string> kBothDeleted = {"/api/v1/namespaces/lab/pods/g-0",
                                               "/api/v1/namespaces/lab/pods/g-1"};

// Each member is told where the gang starts with its gate's removal: kube-scheduler may bind a
// member before its job is reconciled again, and that reconcile no longer releases it.
TEST(ControllerGangsTest, AMemberBoundBeforeItsJobIsReconciledAgainWasToldWhereTheGangStarts) {
  Fixture f;
  f.on_request = [&f](const ScriptedRequest& r) {
    if (r.method != "PATCH" || !r.target.ends_with("/g-0")) return;
    // The watch shows g-0 bound on its pin the moment its gate goes.
    std::string node;
    for (const json& op : json::parse(r.body)) {
      if (op["op"] == "add") node = kube::pinned_node({{"spec", {{"affinity", op["value"]}}}});
    }
    json bound = member(0, node);
    bound["spec"]["nodeName"] = node;
    f.feed->pod_handler().on_upsert(bound);
    f.controller->pods_changed();  // the watch's handler
  };
  f.feed->pod_handler().on_replace({member(0), member(1)});
  f.settle();
  ASSERT_EQ(2u, f.pins().size());
  for (const std::string pod : {"g-0", "g-1"}) {
    const std::vector<std::string> told = f.event_reasons(pod);
    EXPECT_EQ(1, std::count_if(told.begin(), told.end(),
                               [](const std::string& e) { return e.starts_with("Admitted: "); }))
        << pod;
  }
}

TEST(ControllerGangsTest, AGangReleasedBeforeARestartKeepsItsPinnedNodesAndLapsesAfterTheHold) {
  Fixture f;
  f.feed->pod_handler().on_replace({member(0), member(1)});
  f.settle();
  const std::map<std::string, std::string> released = f.pins();
  ASSERT_EQ(2u, released.size());
  ASSERT_TRUE(f.planner->admitted_as("lab/g"));
  // Killed before the binds. The API server shows the members ungated and pinned; say the pins
  // went the other way round from the first fit a new plan makes.
  f.restart();
  ASSERT_FALSE(f.planner->admitted_as("lab/g"));
  const std::map<std::string, std::string> pinned = {{"lab/g-0", released.at("g-1")},
                                                     {"lab/g-1", released.at("g-0")}};
  f.feed->pod_handler().on_replace(
      {member(0, pinned.at("lab/g-0")), member(1, pinned.at("lab/g-1"))});
  f.settle();
  EXPECT_TRUE(f.planner->admitted_as("lab/g")) << "adopted on its pins";
  f.settle();
  EXPECT_EQ(pinned, f.planned_nodes()) << "every plan keeps the pinned placements";
  EXPECT_TRUE(f.targets("DELETE").empty());
  // Its hold restarted at the adoption: unbound 61 s later (admission_hold is 60 s), it is
  // rolled back as any released gang.
  f.clock->fetch_add(std::chrono::nanoseconds(std::chrono::seconds(59)).count());
  f.settle();
  EXPECT_TRUE(f.targets("DELETE").empty());
  f.clock->fetch_add(std::chrono::nanoseconds(std::chrono::seconds(2)).count());
  f.settle();
  EXPECT_EQ(kBothDeleted, f.targets("DELETE"));
  const std::vector<std::string> told = f.event_reasons("g-0");
  ASSERT_FALSE(told.empty());
  EXPECT_EQ(
      "GangRolledBack: gang lab/g rolled back: released, but not every member was bound within "
      "the admission hold",
      told.back());
}

TEST(ControllerGangsTest, AGangReleasedBeforeARestartWhosePinnedNodeIsTakenIsRolledBack) {
  Fixture f;
  // While alloxd was down, another job bound to g2 and runs there.
  json other = testing::make_pod("lab", "other", "nvidia.com/gpu", {{"allox.io/job", "other"}});
  other["spec"]["nodeName"] = "g2";
  other["status"]["phase"] = "Running";
  f.feed->pod_handler().on_replace({member(0, "g1"), member(1, "g2"), other});
  f.settle();
  EXPECT_FALSE(f.planner->admitted_as("lab/g"));
  EXPECT_EQ(kBothDeleted, f.targets("DELETE"));
  const std::vector<std::string> told = f.event_reasons("g-1");
  ASSERT_FALSE(told.empty());
  EXPECT_EQ(
      "GangRolledBack: gang lab/g rolled back: released before alloxd restarted, and its pinned "
      "nodes no longer hold it: g2 has 0 of 1 gpu free",
      told.back());
  f.planner->read([](const JobBook& book) {
    EXPECT_TRUE(book.job("lab/g")->variants.empty()) << "its members left the book";
  });
}

TEST(ControllerGangsTest, AGangHalfReleasedBeforeARestartIsRolledBack) {
  Fixture f;
  // Its one released member is pinned to g3, where a new plan would not put it (g1).
  f.feed->pod_handler().on_replace({member(0, "g3"), member(1)});
  f.settle();
  EXPECT_FALSE(f.planner->admitted_as("lab/g"));
  EXPECT_EQ(kBothDeleted, f.targets("DELETE"));
  EXPECT_TRUE(f.targets("PATCH").empty()) << "the gated member is not released alone";
  const std::vector<std::string> told = f.event_reasons("g-0");
  ASSERT_FALSE(told.empty());
  EXPECT_EQ(
      "GangRolledBack: gang lab/g rolled back: released before alloxd restarted, and member "
      "lab/g-1 was not released with the others",
      told.back());
}

// Without a restart: a released gang whose members never bind is rolled back once the hold
// lapses, and only then.
TEST(ControllerGangsTest, AReleasedGangUnboundPastTheHoldIsRolledBack) {
  Fixture f;
  f.feed->pod_handler().on_replace({member(0), member(1)});
  f.settle();
  ASSERT_EQ(2u, f.pins().size());
  f.clock->fetch_add(std::chrono::nanoseconds(std::chrono::seconds(60)).count());
  f.settle();
  EXPECT_TRUE(f.targets("DELETE").empty());
  f.clock->fetch_add(std::chrono::nanoseconds(std::chrono::seconds(1)).count());
  f.settle();
  EXPECT_EQ(kBothDeleted, f.targets("DELETE"));
  const std::vector<std::string> told = f.event_reasons("g-1");
  ASSERT_FALSE(told.empty());
  EXPECT_EQ(
      "GangRolledBack: gang lab/g rolled back: released, but not every member was bound within "
      "the admission hold",
      told.back());
}

// A running gang one of whose members failed: the others are deleted (GangFailed).
TEST(ControllerGangsTest, AFailedMemberHasTheGangsOtherMembersDeleted) {
  Fixture f;
  json first = member(0, "g1"), second = member(1, "g2");
  first["spec"]["nodeName"] = "g1";
  second["spec"]["nodeName"] = "g2";
  first["status"]["phase"] = second["status"]["phase"] = "Running";
  f.feed->pod_handler().on_replace({first, second});
  f.settle();
  ASSERT_EQ(JobPhase::kRunning, f.planner->read([](const JobBook& book) {
    return book.job("lab/g")->record.phase;
  })) << "the watch saw both members bound";
  second["status"]["phase"] = "Failed";
  f.feed->pod_handler().on_upsert(second);
  f.settle();
  EXPECT_EQ(std::vector<std::string>{"/api/v1/namespaces/lab/pods/g-0"}, f.targets("DELETE"));
  const std::vector<std::string> told = f.event_reasons("g-0");
  ASSERT_FALSE(told.empty());
  EXPECT_EQ(
      "GangFailed: gang lab/g failed: member lab/g-1 failed, so the gang ends and its other "
      "members are deleted",
      told.back());
}

}  // namespace
}  // namespace allox::extender
