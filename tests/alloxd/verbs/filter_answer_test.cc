// alloxd/verbs/verbs.h, /filter's answer node by node. A pod that passes is answered with the nodes
// it passes on and nothing else: its planned node, or any offered node with a free machine of the
// planned device that the plan gives no other job when the planned one is not offered
// (kube-scheduler v1.28 reads the failed maps only when no node is left). A pod that passes nowhere
// names every offered node with the reason that fits it (not in the inventory, no such device,
// queued, no free machine): that is the FitError `kubectl describe pod` shows.
#include <gtest/gtest.h>

#include <memory>

#include "alloxd/plan/planner.h"
#include "alloxd/verbs/verbs.h"
#include "fairness/policy.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

using nlohmann::json;

// Two one-GPU nodes and a CPU bundle; job lab/a's GPU pod is registered and planned.
struct Cluster {
  testing::ScratchDir dir;
  Metrics metrics;
  std::unique_ptr<Planner> planner;
  std::unique_ptr<ExtenderVerbs> verbs;
  int waits = 0;
  const json a = testing::make_pod("lab", "a-gpu", "nvidia.com/gpu", {{"allox.io/job", "a"}});

  Cluster() {
    ExtenderConfig config = testing::make_config(
        {{"g1", {{"gpu", 1}}}, {"g2", {{"gpu", 1}}}, {"c1", {{"cpu", 1}}}}, dir.file("state.db"));
    PlannerOptions planner_options;
    planner_options.inventory = config.nodes;
    auto made = Planner::create(config, make_policy("fifo", PolicyOptions{}).value(), metrics,
                                planner_options);
    EXPECT_TRUE(made.ok()) << made.message();
    planner = std::move(*made);
    planner->start();
    planner->solve_now();
    VerbOptions options;
    options.first_plan_wait = std::chrono::seconds(20);  // loaded CI machines solve slowly
    options.on_watch_wait = [this] { ++waits; };
    verbs = std::make_unique<ExtenderVerbs>(*planner, nullptr, metrics, options);
  }
  ~Cluster() { planner->stop(); }

  FilterResult filter(const json& pod, const std::vector<std::string>& nodes) {
    auto args = parse_extender_args(testing::filter_body(pod, nodes));
    EXPECT_TRUE(args.ok()) << args.message();
    return verbs->filter(*args);
  }
  std::string planned_node(const std::string& job) const {
    return planner->latest_plan()->starts.at(job).node;
  }
};

TEST(FilterAnswerTest, APassingPodIsAnsweredWithItsNodeAndNoReasons) {
  Cluster cluster;
  FilterResult first = cluster.filter(cluster.a, {"g1"});  // registers the job, waits for a plan
  ASSERT_EQ("", first.error);
  const std::string planned = cluster.planned_node("lab/a");

  FilterResult all = cluster.filter(cluster.a, {"ghost", "c1", "g1", "g2"});
  ASSERT_EQ("", all.error);
  EXPECT_EQ(std::vector<std::string>{planned}, all.node_names->strings());
  EXPECT_TRUE(all.failed_nodes.empty()) << render(all);
  EXPECT_TRUE(all.failed_and_unresolvable_nodes.empty()) << render(all);
  EXPECT_NE(std::string::npos,
            render(all).find("\"FailedNodes\":null,\"FailedAndUnresolvableNodes\":null"))
      << render(all);
  EXPECT_EQ(0, cluster.waits) << "a free machine is offered: nothing to wait for";
}

TEST(FilterAnswerTest, AFreeMachineThePlanGivesAnotherJobIsNotTaken) {
  Cluster cluster;
  ASSERT_EQ("", cluster.filter(cluster.a, {"g1"}).error);
  const json b = testing::make_pod("lab", "b-gpu", "nvidia.com/gpu", {{"allox.io/job", "b"}});
  ASSERT_EQ("", cluster.filter(b, {"g1", "g2"}).error);
  cluster.planner->solve_now();
  const std::string a_node = cluster.planned_node("lab/a"), b_node = cluster.planned_node("lab/b");
  ASSERT_NE(a_node, b_node);
  // kube-scheduler did not offer a's planned node: b's, free in the book, is not a's to take
  // (b's pod would then find it gone, and take the next job's).
  FilterResult taken = cluster.filter(cluster.a, {"c1", b_node});
  ASSERT_EQ("", taken.error);
  EXPECT_TRUE(taken.node_names->empty()) << render(taken);
  EXPECT_EQ("free nvidia.com/gpu here is planned for other jobs", taken.failed_nodes.at(b_node));
  EXPECT_EQ(0, cluster.waits);
  // b itself is answered with its node.
  FilterResult own = cluster.filter(b, {"c1", b_node});
  EXPECT_EQ(std::vector<std::string>{b_node}, own.node_names->strings());
}

TEST(FilterAnswerTest, ARejectedPodNamesEveryOfferedNodeWithItsReason) {
  Cluster cluster;
  ASSERT_EQ("", cluster.filter(cluster.a, {"g1"}).error);
  // Two jobs take both GPUs in the plan (fifo); a third waits behind them.
  const json b = testing::make_pod("lab", "b-gpu", "nvidia.com/gpu", {{"allox.io/job", "b"}});
  const json c = testing::make_pod("lab", "c-gpu", "nvidia.com/gpu", {{"allox.io/job", "c"}});
  ASSERT_EQ("", cluster.filter(b, {"g1", "g2"}).error);
  ASSERT_EQ("", cluster.filter(c, {"g1", "g2"}).error);
  cluster.planner->solve_now();
  ASSERT_EQ(0u, cluster.planner->latest_plan()->starts.count("lab/c"));

  FilterResult queued = cluster.filter(c, {"ghost", "c1", "g1", "g2"});
  ASSERT_EQ("", queued.error);
  EXPECT_TRUE(queued.node_names->empty());
  EXPECT_EQ("node ghost is not in allox's inventory", queued.failed_nodes.at("ghost"));
  EXPECT_EQ("node has no nvidia.com/gpu capacity", queued.failed_and_unresolvable_nodes.at("c1"));
  for (const char* node : {"g1", "g2"}) {
    EXPECT_EQ(0u, queued.failed_nodes.at(node).rfind("queued: position 1 of 1", 0))
        << queued.failed_nodes.at(node);
  }
  EXPECT_EQ(3u, queued.failed_nodes.size());
  EXPECT_EQ(1u, queued.failed_and_unresolvable_nodes.size());
}

TEST(FilterAnswerTest, APlannedNodeNotOfferedLeavesEveryOfferedFreeNodeOfItsDevice) {
  Cluster cluster;
  ASSERT_EQ("", cluster.filter(cluster.a, {"g1"}).error);
  const std::string planned = cluster.planned_node("lab/a");
  const std::string other = planned == "g1" ? "g2" : "g1";

  FilterResult elsewhere = cluster.filter(cluster.a, {"c1", other});
  EXPECT_EQ(std::vector<std::string>{other}, elsewhere.node_names->strings());
  EXPECT_TRUE(elsewhere.failed_and_unresolvable_nodes.empty()) << render(elsewhere);
  EXPECT_TRUE(elsewhere.failed_nodes.empty()) << render(elsewhere);

  // Bound there, the other node is full: a second job's pod is kept where its own plan puts
  // it, and offered only the full node it passes nowhere and is told why.
  ASSERT_EQ("", cluster.verbs->bind({"a-gpu", "lab", "uid-a-gpu", other}).error);
  const json b = testing::make_pod("lab", "b-gpu", "nvidia.com/gpu", {{"allox.io/job", "b"}});
  FilterResult second = cluster.filter(b, {other, planned});
  ASSERT_EQ("", second.error);
  EXPECT_EQ(std::vector<std::string>{planned}, second.node_names->strings());
  EXPECT_TRUE(second.failed_nodes.empty()) << render(second);
  EXPECT_EQ(0, cluster.waits);

  ExtenderVerbs no_wait(*cluster.planner, nullptr, cluster.metrics, [] {
    VerbOptions options;
    options.watch_wait = std::chrono::milliseconds(0);  // the full node is not waited for
    return options;
  }());
  auto args = parse_extender_args(testing::filter_body(b, {"c1", other}));
  ASSERT_TRUE(args.ok()) << args.message();
  FilterResult full = no_wait.filter(*args);
  ASSERT_EQ("", full.error);
  EXPECT_TRUE(full.node_names->empty());
  EXPECT_EQ("insufficient free nvidia.com/gpu (0 of 1 free)", full.failed_nodes.at(other));
  EXPECT_EQ("node has no nvidia.com/gpu capacity", full.failed_and_unresolvable_nodes.at("c1"));
}

}  // namespace
}  // namespace allox::extender
