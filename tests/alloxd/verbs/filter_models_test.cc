// alloxd/verbs/verbs.h with GPU models as node labels: a pod that requests nvidia.com/gpu without
// pinning a model is planned on one model's node, and /filter confirms that node alone; a node of
// another model is refused with the plan's choice as the reason (a reason kube-scheduler may
// retry, not an unresolvable one: the next plan may choose that model).
#include <gtest/gtest.h>

#include <memory>

#include "alloxd/plan/planner.h"
#include "alloxd/verbs/verbs.h"
#include "fairness/policy.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

using nlohmann::json;

// An H100 node, an A100 node and a CPU bundle; allox's policy plans.
struct Cluster {
  testing::ScratchDir dir;
  Metrics metrics;
  std::unique_ptr<Planner> planner;
  std::unique_ptr<ExtenderVerbs> verbs;
  // Faster on the H100: the plan starts it there while that node is free.
  const json a = testing::make_pod("lab", "a", "nvidia.com/gpu",
                                   {{"allox.io/time.h100", "100"}, {"allox.io/time.a100", "300"}});

  Cluster() {
    ExtenderConfig config = testing::make_config(
        {{"h1", {{"h100", 1}}}, {"a1", {{"a100", 1}}}, {"c1", {{"cpu", 1}}}}, dir.file("state.db"));
    config.devices.resources = {{"nvidia.com/gpu",
                                 "gpu",
                                 {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3", "h100"},
                                  {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB", "a100"}}}};
    PlannerOptions planner_options;
    planner_options.inventory = config.nodes;
    PolicyOptions policy;
    policy.alpha = 1;
    auto made =
        Planner::create(config, make_policy("allox", policy).value(), metrics, planner_options);
    EXPECT_TRUE(made.ok()) << made.message();
    planner = std::move(*made);
    planner->start();
    planner->solve_now();
    VerbOptions options;
    options.first_plan_wait = std::chrono::seconds(20);  // loaded CI machines solve slowly
    verbs = std::make_unique<ExtenderVerbs>(*planner, nullptr, metrics, options);
  }
  ~Cluster() { planner->stop(); }

  FilterResult filter(const json& pod, const std::vector<std::string>& nodes) {
    auto args = parse_extender_args(testing::filter_body(pod, nodes));
    EXPECT_TRUE(args.ok()) << args.message();
    return verbs->filter(*args);
  }
};

TEST(FilterModelsTest, OnlyTheNodeOfThePlannedModelPasses) {
  Cluster cluster;
  ASSERT_EQ("", cluster.filter(cluster.a, {"h1"}).error);  // registers the job, waits for a plan
  const auto plan = cluster.planner->latest_plan();
  ASSERT_EQ(1u, plan->starts.count("lab/a"));
  EXPECT_EQ("h100", plan->starts.at("lab/a").device);
  EXPECT_EQ("h1", plan->starts.at("lab/a").node);

  FilterResult all = cluster.filter(cluster.a, {"a1", "c1", "h1"});
  ASSERT_EQ("", all.error);
  EXPECT_EQ(std::vector<std::string>{"h1"}, all.node_names->strings());

  // The planned node not offered: the A100 node, free, is still not the plan's type.
  FilterResult other = cluster.filter(cluster.a, {"a1", "c1"});
  ASSERT_EQ("", other.error);
  EXPECT_TRUE(other.node_names->empty()) << render(other);
  EXPECT_EQ("job lab/a starts on h100 (allox's choice of the types it runs on); this node has none",
            other.failed_nodes.at("a1"));
  EXPECT_EQ("node has no nvidia.com/gpu capacity", other.failed_and_unresolvable_nodes.at("c1"));
  EXPECT_EQ(0u, other.failed_and_unresolvable_nodes.count("a1"));

  // prioritize scores the planned node only.
  auto args = parse_extender_args(testing::filter_body(cluster.a, {"a1", "h1"}));
  ASSERT_TRUE(args.ok());
  for (const HostPriority& p : cluster.verbs->prioritize(*args)) {
    EXPECT_EQ(p.host == "h1" ? kMaxExtenderPriority : 0, p.score) << p.host;
  }
}

TEST(FilterModelsTest, APodPinnedToAModelIsPlannedOnItsModelOnly) {
  Cluster cluster;
  json pinned = testing::make_pod("lab", "b", "nvidia.com/gpu",
                                  {{"allox.io/time.h100", "100"}, {"allox.io/time.a100", "300"}});
  pinned["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"}};
  ASSERT_EQ("", cluster.filter(pinned, {"a1"}).error);
  const auto plan = cluster.planner->latest_plan();
  ASSERT_EQ(1u, plan->starts.count("lab/b"));
  EXPECT_EQ("a100", plan->starts.at("lab/b").device) << "slower, but the one it pins";
  FilterResult answer = cluster.filter(pinned, {"a1", "h1"});
  EXPECT_EQ(std::vector<std::string>{"a1"}, answer.node_names->strings());
}

}  // namespace
}  // namespace allox::extender
