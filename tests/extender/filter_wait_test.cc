// extender/verbs.h: /filter waits for alloxd's watch when kube-scheduler has seen a freed machine
// first. kube-scheduler offers a node only when its own resource filter finds room there; if the
// book still shows that node's machines busy, alloxd has not seen the completion yet, and a
// "queued" answer would park the pod in kube-scheduler's back-off (up to 10 s) just before the
// plan starts it. The completion arrives through the test hook VerbOptions::on_watch_wait
// (called as the filter starts waiting), so nothing here sleeps or races.
#include <gtest/gtest.h>

#include <memory>

#include "extender/planner.h"
#include "extender/verbs.h"
#include "fairness/policy.h"
#include "tests/extender/test_support.h"

namespace allox::extender {
namespace {

using nlohmann::json;

json pod(const std::string& name, const std::string& job, const std::string& resource) {
  return testing::make_pod("lab", name, resource, {{"allox.io/job", job}});
}

// One GPU on g1 and one CPU bundle on c1; job lab/a runs on the GPU.
struct Cluster {
  testing::ScratchDir dir;
  Metrics metrics;
  std::unique_ptr<Planner> planner;
  std::unique_ptr<ExtenderVerbs> verbs;
  int waits = 0;                  // filters that started waiting for the watch
  std::function<void()> on_wait;  // what "the watch" brings in meanwhile

  // With gpu_nodes of one GPU each (g1, g2, ...), all busy: job a runs on g1, a2 on g2, ...
  explicit Cluster(std::chrono::milliseconds watch_wait, double watch_wait_share = 0.05,
                   int gpu_nodes = 1) {
    std::vector<NodeInventory> nodes;
    for (int n = 1; n <= gpu_nodes; ++n) nodes.push_back({"g" + std::to_string(n), {{"gpu", 1}}});
    nodes.push_back({"c1", {{"cpu", 1}}});
    ExtenderConfig config = testing::make_config(nodes, dir.file("state.db"));
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
    options.watch_wait = watch_wait;
    options.watch_wait_share = watch_wait_share;
    options.on_watch_wait = [this] {
      ++waits;
      if (on_wait) on_wait();
    };
    verbs = std::make_unique<ExtenderVerbs>(*planner, nullptr, metrics, options);
    FilterResult a = filter(pod("a-gpu", "a", "nvidia.com/gpu"), {"g1"});
    EXPECT_EQ(std::vector<std::string>{"g1"}, a.node_names->strings());
    EXPECT_EQ("", verbs->bind({"a-gpu", "lab", "uid-a-gpu", "g1"}).error);
    for (int n = 2; n <= gpu_nodes; ++n) {
      const std::string job = "a" + std::to_string(n), node = "g" + std::to_string(n);
      FilterResult more = filter(pod(job + "-gpu", job, "nvidia.com/gpu"), {node});
      EXPECT_EQ(std::vector<std::string>{node}, more.node_names->strings());
      EXPECT_EQ("", verbs->bind({job + "-gpu", "lab", "uid-" + job + "-gpu", node}).error);
    }
  }
  ~Cluster() { planner->stop(); }

  FilterResult filter(const json& p, const std::vector<std::string>& nodes) {
    auto args = parse_extender_args(testing::filter_body(p, nodes));
    EXPECT_TRUE(args.ok()) << args.message();
    return verbs->filter(*args);
  }
};

TEST(FilterWaitTest, OfferedABusyMachineItWaitsForTheCompletionAndAdmits) {
  Cluster cluster(std::chrono::seconds(20));  // only a bug would take this long
  // kube-scheduler saw a's pod finish and offers g1; alloxd's watch brings it in while the
  // filter waits.
  cluster.on_wait = [&] { EXPECT_TRUE(cluster.planner->complete("lab/a").ok()); };
  FilterResult b = cluster.filter(pod("b-gpu", "b", "nvidia.com/gpu"), {"g1"});
  EXPECT_EQ(1, cluster.waits);
  EXPECT_EQ(std::vector<std::string>{"g1"}, b.node_names->strings());
  EXPECT_TRUE(b.failed_nodes.empty());
  EXPECT_EQ("", cluster.verbs->bind({"b-gpu", "lab", "uid-b-gpu", "g1"}).error);
  // Operators see the wait: kube-scheduler's cycle stood still with it.
  EXPECT_EQ(1u, cluster.metrics.watch_waits(/*settled=*/true).count());
  EXPECT_EQ(0u, cluster.metrics.watch_waits(/*settled=*/false).count());
  EXPECT_NE(std::string::npos,
            cluster.metrics.render().find(
                "allox_filter_watch_wait_seconds_count{outcome=\"settled\"} 1\n"));
}

TEST(FilterWaitTest, NothingArrivesWithinTheBoundSoItAnswersQueuedAndDoesNotWaitAgainSoon) {
  Cluster cluster(std::chrono::milliseconds(50));
  FilterResult b = cluster.filter(pod("b-gpu", "b", "nvidia.com/gpu"), {"g1"});
  EXPECT_EQ(1, cluster.waits);
  EXPECT_TRUE(b.node_names->empty());
  ASSERT_EQ(1u, b.failed_nodes.count("g1"));
  EXPECT_EQ(0u, b.failed_nodes.at("g1").rfind("queued: position 1 of 1", 0))
      << b.failed_nodes.at("g1");
  // g1 stayed busy through a whole wait: the next filter offered it answers at once (a node
  // alloxd counts differently from kube-scheduler must not hold up every scheduling cycle).
  FilterResult again = cluster.filter(pod("b-gpu", "b", "nvidia.com/gpu"), {"g1"});
  EXPECT_EQ(1, cluster.waits);
  EXPECT_EQ(b.failed_nodes, again.failed_nodes);
  // One vain wait, at least as long as the bound, and nothing settled.
  EXPECT_EQ(1u, cluster.metrics.watch_waits(/*settled=*/false).count());
  EXPECT_EQ(0u, cluster.metrics.watch_waits(/*settled=*/true).count());
  const std::string text = cluster.metrics.render();
  auto vain = read_histogram(text, "allox_filter_watch_wait_seconds", "outcome=\"vain\"");
  ASSERT_FALSE(vain.empty());
  for (const HistogramBucket& bucket : vain) {
    EXPECT_EQ(bucket.upper_bound <= 0.05 ? 0u : 1u, bucket.cumulative) << bucket.upper_bound;
  }
}

TEST(FilterWaitTest, OnceTheWaitsHaveUsedTheirShareOfTheTimeItAnswersAtOnce) {
  // No refill: the budget is one whole wait, and a vain one uses all of it.
  Cluster cluster(std::chrono::milliseconds(50), /*watch_wait_share=*/0, /*gpu_nodes=*/2);
  FilterResult first = cluster.filter(pod("b-gpu", "b", "nvidia.com/gpu"), {"g1"});
  EXPECT_EQ(1, cluster.waits);
  EXPECT_TRUE(first.node_names->empty());
  // g2 is busy in the book too and was never waited for, but kube-scheduler's cycle has stood
  // still for the whole budget: no second wait.
  FilterResult second = cluster.filter(pod("b-gpu", "b", "nvidia.com/gpu"), {"g2"});
  EXPECT_EQ(1, cluster.waits);
  ASSERT_EQ(1u, second.failed_nodes.count("g2"));
  EXPECT_EQ(0u, second.failed_nodes.at("g2").rfind("queued: position 1 of 1", 0))
      << second.failed_nodes.at("g2");
  EXPECT_EQ(1u, cluster.metrics.watch_waits(/*settled=*/false).count());
  EXPECT_EQ(1u, cluster.metrics.watch_waits_skipped());
  EXPECT_NE(std::string::npos,
            cluster.metrics.render().find("allox_filter_watch_waits_skipped_total 1\n"));
}

TEST(FilterWaitTest, AWaitTheWatchSettlesGivesBackWhatItDidNotUse) {
  Cluster cluster(std::chrono::seconds(20), /*watch_wait_share=*/0, /*gpu_nodes=*/2);
  // Both completions arrive while the filters wait: each wait is short, and the second still
  // finds (nearly) the whole budget.
  cluster.on_wait = [&] {
    EXPECT_TRUE(cluster.planner->complete(cluster.waits == 1 ? "lab/a" : "lab/a2").ok());
  };
  FilterResult b = cluster.filter(pod("b-gpu", "b", "nvidia.com/gpu"), {"g1"});
  EXPECT_EQ(std::vector<std::string>{"g1"}, b.node_names->strings());
  EXPECT_EQ("", cluster.verbs->bind({"b-gpu", "lab", "uid-b-gpu", "g1"}).error);
  FilterResult c = cluster.filter(pod("c-gpu", "c", "nvidia.com/gpu"), {"g2"});
  EXPECT_EQ(2, cluster.waits);
  EXPECT_EQ(std::vector<std::string>{"g2"}, c.node_names->strings());
  EXPECT_EQ(2u, cluster.metrics.watch_waits(/*settled=*/true).count());
  EXPECT_EQ(0u, cluster.metrics.watch_waits_skipped());
}

TEST(FilterWaitTest, NoWaitWhenTheAnswerDoesNotDependOnTheWatch) {
  Cluster cluster(std::chrono::seconds(20));
  // b's CPU variant starts on the free CPU bundle; its GPU variant, offered the busy GPU, is
  // not used whatever the watch brings: no wait.
  FilterResult cpu = cluster.filter(pod("b-cpu", "b", "cpu"), {"c1"});
  EXPECT_EQ(std::vector<std::string>{"c1"}, cpu.node_names->strings());
  FilterResult gpu = cluster.filter(pod("b-gpu", "b", "nvidia.com/gpu"), {"g1"});
  EXPECT_TRUE(gpu.node_names->empty());
  // a runs: a late variant of it is refused for good, also without waiting.
  FilterResult late = cluster.filter(pod("a-cpu", "a", "cpu"), {"c1", "g1"});
  EXPECT_TRUE(late.node_names->empty());
  EXPECT_EQ(2u, late.failed_and_unresolvable_nodes.size());
  EXPECT_EQ(0, cluster.waits);
  EXPECT_EQ(0u,
            cluster.metrics.watch_waits(true).count() + cluster.metrics.watch_waits(false).count());
}

}  // namespace
}  // namespace allox::extender
