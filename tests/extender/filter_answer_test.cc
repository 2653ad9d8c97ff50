// extender/verbs.h, /filter's answer node by node: the planned node is kept, or any offered node
// with a free machine of the planned device when the planned one is not offered; every other
// node gets the reason that fits it (not in the inventory, no such device, placed elsewhere).
// Each offered name is looked up once, as the view the request holds.
#include <gtest/gtest.h>

#include <memory>

#include "extender/planner.h"
#include "extender/verbs.h"
#include "fairness/policy.h"
#include "tests/extender/test_support.h"

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

TEST(FilterAnswerTest, EachOfferedNodeGetsTheAnswerThatFitsIt) {
  Cluster cluster;
  FilterResult first = cluster.filter(cluster.a, {"g1"});  // registers the job, waits for a plan
  ASSERT_EQ("", first.error);
  const std::string planned = cluster.planned_node("lab/a");
  const std::string other = planned == "g1" ? "g2" : "g1";

  FilterResult all = cluster.filter(cluster.a, {"ghost", "c1", "g1", "g2"});
  ASSERT_EQ("", all.error);
  EXPECT_EQ(std::vector<std::string>{planned}, all.node_names->strings());
  EXPECT_EQ("node ghost is not in allox's inventory", all.failed_nodes.at("ghost"));
  EXPECT_EQ("node has no nvidia.com/gpu capacity", all.failed_and_unresolvable_nodes.at("c1"));
  EXPECT_EQ("allox placed job lab/a on " + planned, all.failed_nodes.at(other));
  EXPECT_EQ(2u, all.failed_nodes.size());
  EXPECT_EQ(1u, all.failed_and_unresolvable_nodes.size());
  EXPECT_EQ(0, cluster.waits) << "a free machine is offered: nothing to wait for";
}

TEST(FilterAnswerTest, APlannedNodeNotOfferedLeavesEveryOfferedFreeNodeOfItsDevice) {
  Cluster cluster;
  ASSERT_EQ("", cluster.filter(cluster.a, {"g1"}).error);
  const std::string planned = cluster.planned_node("lab/a");
  const std::string other = planned == "g1" ? "g2" : "g1";

  FilterResult elsewhere = cluster.filter(cluster.a, {"c1", other});
  EXPECT_EQ(std::vector<std::string>{other}, elsewhere.node_names->strings());
  EXPECT_EQ(1u, elsewhere.failed_and_unresolvable_nodes.count("c1"));
  EXPECT_TRUE(elsewhere.failed_nodes.empty());

  // Bound there, the other node is full: a second job's pod offered it is told so, and
  // kept where its own plan puts it.
  ASSERT_EQ("", cluster.verbs->bind({"a-gpu", "lab", "uid-a-gpu", other}).error);
  const json b = testing::make_pod("lab", "b-gpu", "nvidia.com/gpu", {{"allox.io/job", "b"}});
  FilterResult second = cluster.filter(b, {other, planned});
  ASSERT_EQ("", second.error);
  EXPECT_EQ(std::vector<std::string>{planned}, second.node_names->strings());
  EXPECT_EQ("insufficient free nvidia.com/gpu (0 of 1 free)", second.failed_nodes.at(other));
  EXPECT_EQ(0, cluster.waits);
}

}  // namespace
}  // namespace allox::extender
