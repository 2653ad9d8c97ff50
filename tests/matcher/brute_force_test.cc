// Every backend against exhaustive enumeration of all schedules on small random instances.
#include <gtest/gtest.h>

#include <random>

#include "matcher/matcher.h"
#include "tests/matcher/test_instances.h"

namespace allox::matcher {
namespace {

using testing::brute_force_objective;
using testing::Instance;
using testing::InstanceShape;
using testing::plan_problems;
using testing::random_instance;

TEST(BruteForce, EveryBackendFindsTheOptimumOnSmallRandomInstances) {
  std::mt19937 rng(20261122);
  InstanceShape shape;  // up to 8 jobs, 3 machines, whole-second times 0..6: many ties
  int checked = 0;
  for (int round = 0; round < 320; ++round) {
    const int jobs = std::uniform_int_distribution<int>(0, shape.max_jobs)(rng);
    const int machines = std::uniform_int_distribution<int>(1, shape.max_machines)(rng);
    shape.fractional = round % 4 == 3;
    const Instance instance = random_instance(rng, shape, jobs, machines);
    const std::int64_t best = brute_force_objective(instance);
    for (Backend backend : all_backends()) {
      const Expected<Plan> plan = solve(instance.problem(), {.backend = backend});
      ASSERT_TRUE(plan.ok()) << backend_name(backend) << ": " << plan.message() << "\n"
                             << instance.describe();
      EXPECT_EQ(plan->objective_ticks, best) << backend_name(backend) << "\n"
                                             << instance.describe();
      EXPECT_EQ(plan_problems(instance, *plan), std::vector<std::string>{})
          << backend_name(backend) << "\n"
          << instance.describe();
    }
    ++checked;
  }
  EXPECT_GE(checked, 300);
}

TEST(BruteForce, NaiveGraphFindsTheSameOptimum) {
  std::mt19937 rng(7);
  const InstanceShape shape;
  for (int round = 0; round < 60; ++round) {
    const Instance instance = random_instance(rng, shape, 7, 3);
    const Expected<Plan> plan = solve(instance.problem(), {.naive_graph = true});
    ASSERT_TRUE(plan.ok()) << plan.message();
    EXPECT_EQ(plan->objective_ticks, brute_force_objective(instance)) << instance.describe();
    EXPECT_EQ(plan_problems(instance, *plan), std::vector<std::string>{}) << instance.describe();
  }
}

}  // namespace
}  // namespace allox::matcher
