// alloxd/verbs/verbs.h: /filter waits for alloxd's watch when kube-scheduler has seen a freed machine
// first. kube-scheduler offers a node only when its own resource filter finds room there; if the
// book still shows that node's machines busy, alloxd has not seen the completion yet, and a
// "queued" answer would park the pod in kube-scheduler's back-off (up to 10 s) just before the
// plan starts it. The completion arrives through the test hook VerbOptions::on_watch_wait
// (called as the filter starts waiting), so nothing here sleeps or races.
#include <gtest/gtest.h>

#include <memory>

#include "alloxd/plan/planner.h"
#include "alloxd/verbs/verbs.h"
#include "fairness/policy.h"
#include "tests/alloxd/testing/test_support.h"

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

  explicit Cluster(std::chrono::milliseconds watch_wait,
                   std::chrono::milliseconds vain_wait_cooldown = std::chrono::seconds(30)) {
    ExtenderConfig config =
        testing::make_config({{"g1", {{"gpu", 1}}}, {"c1", {{"cpu", 1}}}}, dir.file("state.db"));
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
    options.vain_wait_cooldown = vain_wait_cooldown;
    options.on_watch_wait = [this] {
      ++waits;
      if (on_wait) on_wait();
    };
    verbs = std::make_unique<ExtenderVerbs>(*planner, nullptr, metrics, options);
    FilterResult a = filter(pod("a-gpu", "a", "nvidia.com/gpu"), {"g1"});
    EXPECT_EQ(std::vector<std::string>{"g1"}, a.node_names->strings());
    EXPECT_EQ("", verbs->bind({"a-gpu", "lab", "uid-a-gpu", "g1"}).error);
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

TEST(FilterWaitTest, ACooledNodeIsWaitedForAgainOnceItsCooldownEnded) {
  // A cooldown of nothing: the node a vain wait cooled is warm again at the next filter.
  Cluster cluster(std::chrono::milliseconds(20), std::chrono::milliseconds(0));
  cluster.filter(pod("b-gpu", "b", "nvidia.com/gpu"), {"g1"});
  cluster.filter(pod("b-gpu", "b", "nvidia.com/gpu"), {"g1"});
  EXPECT_EQ(2, cluster.waits);
  EXPECT_EQ(2u, cluster.metrics.watch_waits(/*settled=*/false).count());
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
