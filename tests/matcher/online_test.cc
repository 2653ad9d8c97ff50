// decide_online(): which jobs start now, estimated starts, subsets of a queue.
#include "matcher/online.h"

#include <gtest/gtest.h>

#include <random>

#include "tests/matcher/test_instances.h"

namespace allox::matcher {
namespace {

using testing::Instance;

Instance cluster_with_queue() {
  Instance instance;
  instance.now = 1000;
  instance.machines = {{"gpu-0", "gpu", 0}, {"gpu-1", "gpu", 1300}, {"cpu-0", "cpu", 900}};
  const std::vector<std::map<DeviceType, double>> times = {{{"gpu", 100}, {"cpu", 400}},
                                                           {{"gpu", 50}, {"cpu", 60}},
                                                           {{"gpu", 20}},
                                                           {{"cpu", 30}},
                                                           {{"gpu", 200}, {"cpu", 210}}};
  for (std::size_t j = 0; j < times.size(); ++j) {
    Job job;
    job.id = "j" + std::to_string(j);
    job.time = times[j];
    instance.jobs.push_back(job);
  }
  instance.pending = pending_jobs(instance.jobs);
  return instance;
}

TEST(Online, StartsThePlansFirstJobOnEachIdleMachineOnly) {
  const Instance instance = cluster_with_queue();
  const Expected<Schedule> plan = solve(instance.problem());
  const Expected<OnlineDecision> decision = decide_online(instance.problem());
  ASSERT_TRUE(plan.ok()) << plan.message();
  ASSERT_TRUE(decision.ok()) << decision.message();
  EXPECT_EQ(decision->objective, plan->objective);
  ASSERT_EQ(decision->estimated_start.size(), instance.jobs.size());
  std::vector<StartNow> expected;
  for (const Assignment& a : plan->assignments) {
    EXPECT_EQ(decision->estimated_start[a.job], a.start);
    // gpu-1 is busy until 1300; gpu-0 and cpu-0 are idle at 1000.
    if (a.position == 1 && a.machine != 1) expected.push_back({a.job, a.machine});
  }
  ASSERT_EQ(decision->start_now.size(), expected.size());
  ASSERT_EQ(expected.size(), 2u);
  for (const StartNow& s : decision->start_now) {
    EXPECT_NE(s.machine, 1u);
    EXPECT_EQ(decision->estimated_start[s.job], instance.now);
  }
}

TEST(Online, MachineFlaggedBusyGetsNoStartEvenIfItsEstimatePassed) {
  Instance instance = cluster_with_queue();
  MatchingProblem problem = instance.problem();
  problem.idle = {false, false, true};  // gpu-0's running job overran its estimate
  const Expected<OnlineDecision> decision = decide_online(problem);
  ASSERT_TRUE(decision.ok()) << decision.message();
  ASSERT_EQ(decision->start_now.size(), 1u);
  EXPECT_EQ(decision->start_now[0].machine, 2u);
}

TEST(Online, SubsetOfTheQueueUsesIndicesIntoTheSubset) {
  const Instance instance = cluster_with_queue();
  const std::vector<PendingJob> subset = {instance.pending[4], instance.pending[3]};
  const MatchingProblem problem{instance.now, instance.machines, subset, {}};
  const Expected<OnlineDecision> decision = decide_online(problem);
  ASSERT_TRUE(decision.ok()) << decision.message();
  ASSERT_EQ(decision->estimated_start.size(), 2u);
  ASSERT_EQ(decision->start_now.size(), 2u);  // one on gpu-0, one on cpu-0
  for (const StartNow& s : decision->start_now) {
    // Subset job 1 ("j3") runs on cpu only.
    EXPECT_EQ(s.machine, s.job == 1 ? 2u : 0u);
  }
}

TEST(Online, StartsAtMostOneJobPerIdleMachine) {
  std::mt19937 rng(3);
  testing::InstanceShape shape;
  shape.max_time = 100;
  shape.fractional = true;
  for (int round = 0; round < 50; ++round) {
    const Instance instance = testing::random_instance(rng, shape, 30, 6);
    const Expected<OnlineDecision> decision = decide_online(instance.problem());
    ASSERT_TRUE(decision.ok()) << decision.message();
    std::vector<int> starts(instance.machines.size(), 0);
    for (const StartNow& s : decision->start_now) {
      EXPECT_LE(instance.machines[s.machine].busy_until, instance.now);
      EXPECT_EQ(++starts[s.machine], 1);
    }
  }
}

TEST(Online, PriceMemoryChangesSpeedNotAnswers) {
  // Re-plan a growing queue with a remembered planner and without; then reuse the memory on an
  // unrelated cluster. Every plan must cost the same as a cold solve.
  std::mt19937 rng(21);
  testing::InstanceShape shape;
  shape.max_time = 2000;
  shape.max_residual = 600;
  shape.fractional = true;
  const Instance instance = testing::random_instance(rng, shape, 300, 14);
  PriceMemory memory;
  for (std::size_t queued = 250; queued <= 300; queued += 10) {
    const std::vector<PendingJob> queue(instance.pending.begin(),
                                        instance.pending.begin() + static_cast<long>(queued));
    const MatchingProblem problem{instance.now, instance.machines, queue, {}};
    const Expected<Schedule> warm = solve(problem, {.memory = &memory});
    const Expected<Schedule> cold = solve(problem);
    ASSERT_TRUE(warm.ok()) << warm.message();
    ASSERT_TRUE(cold.ok()) << cold.message();
    EXPECT_EQ(warm->objective_ticks, cold->objective_ticks) << queued << " queued";
  }
  const Instance other = testing::random_instance(rng, shape, 280, 9);
  const Expected<Schedule> foreign = solve(other.problem(), {.memory = &memory});
  const Expected<Schedule> cold = solve(other.problem(), {.backend = Backend::kBoost});
  ASSERT_TRUE(foreign.ok()) << foreign.message();
  ASSERT_TRUE(cold.ok()) << cold.message();
  EXPECT_EQ(foreign->objective_ticks, cold->objective_ticks);
  EXPECT_EQ(testing::plan_problems(other, *foreign), std::vector<std::string>{});
}

}  // namespace
}  // namespace allox::matcher
