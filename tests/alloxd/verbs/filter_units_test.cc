// alloxd/verbs/verbs.h with multi-unit pods: /filter passes a node only when it has the pod's k
// free units (its planned node, or another offered node with k free units the plan gives no
// other job), and says why for the others; /bind never confirms a bind that would put more
// units on a node than it has; a pod larger than every node is refused everywhere as
// unresolvable, with the reason it is parked for.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "alloxd/plan/planner.h"
#include "alloxd/verbs/verbs.h"
#include "fairness/policy.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

using nlohmann::json;

json gpu_pod(const std::string& name, int gpus) {
  json pod = testing::make_pod("lab", name, "nvidia.com/gpu");
  pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = std::to_string(gpus);
  return pod;
}

// Two 2-GPU nodes; FIFO plans.
struct Cluster {
  testing::ScratchDir dir;
  Metrics metrics;
  std::unique_ptr<Planner> planner;
  std::unique_ptr<ExtenderVerbs> verbs;

  Cluster() {
    ExtenderConfig config =
        testing::make_config({{"g1", {{"gpu", 2}}}, {"g2", {{"gpu", 2}}}}, dir.file("state.db"));
    PlannerOptions planner_options;
    planner_options.inventory = config.nodes;
    auto made = Planner::create(config, make_policy("fifo", PolicyOptions{}).value(), metrics,
                                planner_options);
    EXPECT_TRUE(made.ok()) << made.message();
    planner = std::move(*made);
    planner->start();
    planner->solve_now();
    VerbOptions options;
    options.first_plan_wait = std::chrono::seconds(20);
    verbs = std::make_unique<ExtenderVerbs>(*planner, nullptr, metrics, options);
  }
  ~Cluster() { planner->stop(); }

  FilterResult filter(const json& pod, const std::vector<std::string>& nodes) {
    auto args = parse_extender_args(testing::filter_body(pod, nodes));
    EXPECT_TRUE(args.ok()) << args.message();
    return verbs->filter(*args);
  }
  std::string bind(const std::string& pod, const std::string& node) {
    return verbs->bind(BindingArgs{pod, "lab", "uid-" + pod, node}).error;
  }
};

TEST(FilterUnitsTest, ANodeWithoutTheFreeUnitsIsRefusedAndNeverBound) {
  Cluster cluster;
  const json one = gpu_pod("one", 1);
  ASSERT_EQ("", cluster.filter(one, {"g1"}).error);
  ASSERT_EQ("", cluster.bind("one", "g1"));  // g1: 1 of 2 GPUs free

  const json two = gpu_pod("two", 2);
  FilterResult first = cluster.filter(two, {"g1", "g2"});
  ASSERT_EQ("", first.error);
  ASSERT_EQ("g2", cluster.planner->latest_plan()->starts.at("lab/two").node);
  EXPECT_EQ(std::vector<std::string>{"g2"}, first.node_names->strings());

  // Offered only the node with one free GPU: refused, with how many it needs.
  FilterResult g1_only = cluster.filter(two, {"g1"});
  ASSERT_EQ("", g1_only.error);
  EXPECT_TRUE(g1_only.node_names->empty());
  const std::string answer = render(g1_only);
  EXPECT_NE(std::string::npos,
            answer.find("insufficient free nvidia.com/gpu (1 of 2 free, the pod needs 2)"))
      << answer;

  // kube-scheduler binding it there anyway is refused; on g2 it binds and holds both GPUs.
  EXPECT_EQ("node g1 has too few free nvidia.com/gpu (1 of 2 free); pod lab/two needs 2",
            cluster.bind("two", "g1"));
  ASSERT_EQ("", cluster.bind("two", "g2"));
  EXPECT_EQ(0,
            cluster.planner->read([](const JobBook& b) { return b.capacity("g2", "gpu").free; }));

  // A third 1-GPU pod fits only where a unit is left.
  const json three = gpu_pod("three", 1);
  FilterResult third = cluster.filter(three, {"g1", "g2"});
  ASSERT_EQ("", third.error);
  EXPECT_EQ(std::vector<std::string>{"g1"}, third.node_names->strings());
  EXPECT_NE("", cluster.bind("three", "g2")) << "g2's both GPUs are held by lab/two";
}

TEST(FilterUnitsTest, APodLargerThanEveryNodeIsUnresolvableEverywhereWithItsReason) {
  Cluster cluster;
  FilterResult big = cluster.filter(gpu_pod("big", 3), {"g1", "g2"});
  ASSERT_EQ("", big.error);
  EXPECT_TRUE(big.node_names->empty());
  EXPECT_TRUE(big.failed_nodes.empty()) << render(big);
  const std::string answer = render(big);
  EXPECT_NE(std::string::npos, answer.find("node has fewer nvidia.com/gpu than the pod's 3"))
      << answer;
  const BookJob* job = nullptr;
  const std::string parked = cluster.planner->read([&](const JobBook& b) {
    job = b.job("lab/big");
    return job == nullptr ? std::string() : job->parked;
  });
  EXPECT_EQ(
      "no node can hold it: 3 nvidia.com/gpu on one node (pod lab/big), the largest node has 2",
      parked);
  EXPECT_NE("", cluster.bind("big", "g1"));
}

}  // namespace
}  // namespace allox::extender
