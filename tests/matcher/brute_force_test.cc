// Every backend against exhaustive enumeration of all schedules on small random instances.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>

#include "matcher/matcher.h"
#include "tests/matcher/test_instances.h"

namespace allox::matcher {
namespace {

using testing::brute_force_objective;
using testing::differs_from_optimum;
using testing::Instance;
using testing::InstanceShape;
using testing::plan_problems;
using testing::random_instance;

// Σ (C_j − now) in ticks of the list schedule a naive matcher would return: jobs in index order,
// each to the machine where it would finish first.
std::int64_t list_schedule_objective(const Instance& instance) {
  std::vector<std::int64_t> clock;
  for (const Machine& m : instance.machines) {
    clock.push_back(std::llround(std::max(0.0, m.busy_until - instance.now) * kTicksPerSecond));
  }
  std::int64_t total = 0;
  for (const Job& job : instance.jobs) {
    std::optional<std::int64_t> best;
    std::size_t where = 0;
    for (std::size_t m = 0; m < clock.size(); ++m) {
      const auto time = job.time_on(instance.machines[m].device);
      if (!time) continue;
      const std::int64_t finish = clock[m] + std::llround(*time * kTicksPerSecond);
      if (!best || finish < *best) {
        best = finish;
        where = m;
      }
    }
    clock[where] = *best;  // random_instance makes every job runnable somewhere
    total += *best;
  }
  return total;
}

TEST(BruteForce, EveryBackendFindsTheOptimumOnSmallRandomInstances) {
  std::mt19937 rng(20261122);
  InstanceShape shape;  // up to 8 jobs, 3 machines, whole-second times 0..6: many ties
  int rounds = 0;
  int greedy_loses = 0;  // instances on which a plausible but wrong matcher would fail
  for (int round = 0; round < 320; ++round) {
    const int jobs = std::uniform_int_distribution<int>(0, shape.max_jobs)(rng);
    const int machines = std::uniform_int_distribution<int>(1, shape.max_machines)(rng);
    shape.fractional = round % 4 == 3;
    const Instance instance = random_instance(rng, shape, jobs, machines);
    const std::int64_t best = brute_force_objective(instance);
    const std::int64_t greedy = list_schedule_objective(instance);
    ASSERT_LE(best, greedy) << "the reference solver missed a schedule\n" << instance.describe();
    if (best < greedy) ++greedy_loses;
    ++rounds;
    for (Backend backend : all_backends()) {
      EXPECT_EQ("", differs_from_optimum(instance, backend, best)) << instance.describe();
    }
  }
  // The instances must tell an optimal matcher from a greedy one often: if the generator drifted
  // to trivial instances (one job, all times zero, one machine) the equalities above would prove
  // little. With this seed 210 of the 320 instances have a better schedule than the list one.
  RecordProperty("instances_where_greedy_loses", greedy_loses);
  EXPECT_GE(greedy_loses, rounds / 3) << greedy_loses << " of " << rounds;
}

TEST(BruteForce, EveryBackendIsOptimalWhenEveryMachineHasItsOwnResidual) {
  // alloxd's shape in small: one or two device types, every machine busy until its own time,
  // so each machine is a group of its own and a level offers many residuals (its outlets).
  std::mt19937 rng(1313);
  InstanceShape shape;
  shape.devices = {"cpu", "gpu"};
  shape.max_residual = 9;
  shape.fractional = true;
  for (int round = 0; round < 120; ++round) {
    shape.devices.resize(round % 3 == 0 ? 1 : 2);
    const int jobs = std::uniform_int_distribution<int>(1, 7)(rng);
    Instance instance = random_instance(rng, shape, jobs, 3);
    for (std::size_t m = 0; m < instance.machines.size(); ++m) {
      instance.machines[m].busy_until = instance.now + 0.25 + static_cast<double>(m) * 1.5 +
                                        std::uniform_int_distribution<int>(0, 900)(rng) / 1000.0;
    }
    const std::int64_t best = brute_force_objective(instance);
    for (Backend backend : all_backends()) {
      EXPECT_EQ("", differs_from_optimum(instance, backend, best)) << instance.describe();
    }
  }
}

TEST(BruteForce, NaiveGraphFindsTheSameOptimum) {
  std::mt19937 rng(7);
  const InstanceShape shape;
  for (int round = 0; round < 60; ++round) {
    const Instance instance = random_instance(rng, shape, 7, 3);
    const Expected<Schedule> plan = solve(instance.problem(), {.naive_graph = true});
    ASSERT_TRUE(plan.ok()) << plan.message();
    EXPECT_EQ(plan->objective_ticks, brute_force_objective(instance)) << instance.describe();
    EXPECT_EQ(plan_problems(instance, *plan), std::vector<std::string>{}) << instance.describe();
  }
}

}  // namespace
}  // namespace allox::matcher
