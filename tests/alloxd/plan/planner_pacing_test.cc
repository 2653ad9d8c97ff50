// alloxd/plan/planner.h: the planner's pacing. After a plan, the next one waits out a
// pause of min(pace × solve time, max_pause), and every change made meanwhile is in that one
// plan: a burst of changes costs one solve, not one each. solve_now() never waits out a pause,
// and stop() ends one. The pause here is an hour, so what happens is ordered by calls, never by
// a timer: nothing but solve_now() can make the second plan while the test runs.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "alloxd/model/pod.h"
#include "alloxd/plan/planner.h"
#include "fairness/policy.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

// fifo, counting its rounds.
class CountingPolicy final : public SchedulingPolicy {
 public:
  explicit CountingPolicy(std::atomic<int>& rounds) : rounds_(rounds) {}
  std::string name() const override { return inner_->name(); }
  Expected<Decision> decide(const ClusterState& state) override {
    ++rounds_;
    return inner_->decide(state);
  }

 private:
  std::atomic<int>& rounds_;
  std::unique_ptr<SchedulingPolicy> inner_ = make_policy("fifo", PolicyOptions{}).value();
};

TEST(PlanPauseTest, IsPaceTimesTheSolveBoundedByTheMaximum) {
  using std::chrono::duration;
  using std::chrono::duration_cast;
  using Duration = std::chrono::steady_clock::duration;
  auto seconds = [](double s) { return duration_cast<Duration>(duration<double>(s)); };
  EXPECT_EQ(seconds(0.05), plan_pause(0.05, 1, 0.2));
  EXPECT_EQ(seconds(0.2), plan_pause(0.1, 2, 1));
  EXPECT_EQ(seconds(0.2), plan_pause(0.4, 1, 0.2));      // a slow solve: the bound
  EXPECT_EQ(Duration::zero(), plan_pause(0.4, 0, 0.2));  // pace 0: no pause
  EXPECT_EQ(Duration::zero(), plan_pause(-1, 1, 0.2));
}

TEST(PlannerPacingTest, ABurstOfChangesInThePauseIsPlannedOnceAndSolveNowDoesNotWait) {
  testing::ScratchDir dir;
  Metrics metrics;
  std::atomic<int> rounds{0};
  ExtenderConfig config = testing::make_config({{"g1", {{"gpu", 8}}}}, dir.file("state.db"));
  config.tick = 3600;  // no periodic round during the test
  PlannerOptions options;
  options.inventory = config.nodes;
  options.pace = 1e9;        // every pause is the bound:
  options.max_pause = 3600;  // an hour, longer than the test
  auto made = Planner::create(config, std::make_unique<CountingPolicy>(rounds), metrics, options);
  ASSERT_TRUE(made.ok()) << made.message();
  std::unique_ptr<Planner> planner = std::move(*made);
  planner->start();
  planner->solve_now();  // the first plan, of an empty queue
  ASSERT_TRUE(planner->ready());
  // solve_now() may return on the thread's own first plan while the round it asked for is still
  // to come: wait until the planner rests in its pause with nothing due.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  ASSERT_TRUE(planner->wait_until_idle(deadline));
  ASSERT_FALSE(planner->busy());
  const int first = rounds.load();
  ASSERT_GE(first, 1);
  const std::uint64_t planned = planner->latest_plan()->version;

  // 40 jobs arrive, one change each, all inside the pause after that plan.
  std::uint64_t last = 0;
  for (int i = 0; i < 40; ++i) {
    const std::string name = "job-" + std::to_string(i);
    auto variant =
        read_job_variant(testing::make_pod("lab", name, "nvidia.com/gpu"), config.devices);
    ASSERT_TRUE(variant.ok()) << variant.message();
    auto version = planner->register_variant(*variant, Durability::kWritten);
    ASSERT_TRUE(version.ok()) << version.message();
    last = *version;
  }
  // The pause holds them: no round has run since, and the planner says a change waits.
  EXPECT_EQ(first, rounds.load());
  EXPECT_EQ(planned, planner->latest_plan()->version);
  EXPECT_TRUE(planner->busy());

  // Asked for a plan, the planner does not wait out the pause: one round takes all 40.
  planner->solve_now();
  EXPECT_EQ(first + 1, rounds.load());
  std::shared_ptr<const Plan> plan = planner->latest_plan();
  EXPECT_GE(plan->version, last);
  EXPECT_EQ(40u, plan->starts.size() + plan->waiting.size());
  EXPECT_EQ(8u, plan->starts.size());

  // stop() ends the hour-long pause the planner is in now.
  planner->stop();
}

}  // namespace
// The plan is level-triggered: carrying out the latest plan (the controller's admission of a
// start as planned, then its bind onto the machine held for it) is no change a plan must follow,
// so a stream of binds wakes no plan of its own; a start the plan did not make does.
TEST(PlannerPacingTest, TheLatestPlanCarriedOutWakesNoPlanAndAStartElsewhereDoes) {
  testing::ScratchDir dir;
  Metrics metrics;
  std::atomic<int> rounds{0};
  ExtenderConfig config = testing::make_config({{"g1", {{"gpu", 8}}}}, dir.file("state.db"));
  config.tick = 3600;  // no periodic round during the test
  PlannerOptions options;
  options.inventory = config.nodes;
  options.pace = 0;  // no pause: a change is planned at once
  auto made = Planner::create(config, std::make_unique<CountingPolicy>(rounds), metrics, options);
  ASSERT_TRUE(made.ok()) << made.message();
  std::unique_ptr<Planner> planner = std::move(*made);
  planner->start();
  std::vector<JobVariant> variants;
  for (const char* name : {"a", "b"}) {
    auto variant =
        read_job_variant(testing::make_pod("lab", name, "nvidia.com/gpu"), config.devices);
    ASSERT_TRUE(variant.ok()) << variant.message();
    ASSERT_TRUE(planner->register_variant(*variant, Durability::kWritten).ok());
    variants.push_back(*variant);
  }
  planner->solve_now();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  ASSERT_TRUE(planner->wait_until_idle(deadline));
  std::shared_ptr<const Plan> plan = planner->latest_plan();
  ASSERT_EQ(2u, plan->starts.size());
  const PlannedStart a = plan->starts.at(variants[0].job_id);
  const int planned = rounds.load();

  // Admitted as planned, then bound onto the machine held for it: no plan follows.
  ASSERT_TRUE(planner->admit(variants[0].job_id, "lab/a", a).ok());
  EXPECT_FALSE(planner->busy());
  auto started = planner->record_start(variants[0], a.node, a.slot, Durability::kWritten);
  ASSERT_TRUE(started.ok()) << started.message();
  EXPECT_FALSE(planner->busy());
  ASSERT_TRUE(planner->wait_until_idle(deadline));
  EXPECT_EQ(planned, rounds.load());
  EXPECT_EQ(plan, planner->latest_plan());

  // b was never admitted: its bind is news to the plans, and one follows.
  started = planner->record_start(variants[1], "g1", -1, Durability::kWritten);
  ASSERT_TRUE(started.ok()) << started.message();
  ASSERT_TRUE(planner->wait_until_idle(deadline));
  EXPECT_EQ(planned + 1, rounds.load());
  plan = planner->latest_plan();
  EXPECT_TRUE(plan->starts.empty());
  planner->stop();
}

}  // namespace allox::extender

namespace allox::extender {
namespace {

// A wake whose change left the book as the latest plan read it (nothing the plan reads changed)
// solves nothing; a change the plan reads is always planned.
TEST(PlannerPacingTest, AWakeThatChangedNothingThePlanReadsSolvesNothing) {
  testing::ScratchDir dir;
  Metrics metrics;
  std::atomic<int> rounds{0};
  ExtenderConfig config = testing::make_config({{"g1", {{"gpu", 8}}}}, dir.file("state.db"));
  config.tick = 3600;  // no periodic round during the test
  PlannerOptions options;
  options.inventory = config.nodes;
  options.pace = 0;  // no pause: a change is planned at once
  auto made = Planner::create(config, std::make_unique<CountingPolicy>(rounds), metrics, options);
  ASSERT_TRUE(made.ok()) << made.message();
  std::unique_ptr<Planner> planner = std::move(*made);
  planner->start();
  auto variant = read_job_variant(testing::make_pod("lab", "a", "nvidia.com/gpu"), config.devices);
  ASSERT_TRUE(variant.ok()) << variant.message();
  ASSERT_TRUE(planner->register_variant(*variant, Durability::kWritten).ok());
  planner->solve_now();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  ASSERT_TRUE(planner->wait_until_idle(deadline));
  const std::shared_ptr<const Plan> plan = planner->latest_plan();
  ASSERT_EQ(1u, plan->starts.size());
  const int planned = rounds.load();

  // No bind intent to settle: the wake finds the book at the plan's version.
  planner->reconcile_binds({}, /*complete=*/true);
  ASSERT_TRUE(planner->wait_until_idle(deadline));
  EXPECT_EQ(planned, rounds.load());
  EXPECT_EQ(plan, planner->latest_plan());

  // A new pod is a change the plan reads: planned.
  variant = read_job_variant(testing::make_pod("lab", "b", "nvidia.com/gpu"), config.devices);
  ASSERT_TRUE(variant.ok()) << variant.message();
  auto version = planner->register_variant(*variant, Durability::kWritten);
  ASSERT_TRUE(version.ok()) << version.message();
  ASSERT_TRUE(planner->wait_until_idle(deadline));
  EXPECT_EQ(planned + 1, rounds.load());
  EXPECT_GE(planner->latest_plan()->version, *version);
  EXPECT_EQ(2u, planner->latest_plan()->starts.size());

  // Asked for, a plan is solved whatever changed (solve_now returns at once here: the latest
  // plan is of the book's version already; the thread's rest says the asked-for plan is made).
  planner->solve_now();
  ASSERT_TRUE(planner->wait_until_idle(deadline));
  EXPECT_EQ(planned + 2, rounds.load());
  planner->stop();
}

}  // namespace
}  // namespace allox::extender
