// Long queues on few machines: 10,000 jobs on a GPU and a CPU node (the assignment solver, whose
// searches then settle thousands of positions each) and on two GPUs (one device type: LEMON),
// solved, checked as schedules and, on one type, against the transport backend. How long they
// take is a benchmark's figure, not a test's (docs/results.md, "Matcher": `allox solve`).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "matcher/matcher.h"
#include "tests/matcher/test_instances.h"

namespace allox::matcher {
namespace {

using testing::Instance;
using testing::long_queue;
using testing::plan_problems;

// 10,000 jobs of 10 s to an hour on a GPU, to two on a CPU node, on `machines`.
Instance ten_thousand_jobs(const std::vector<std::pair<std::string, double>>& machines) {
  std::mt19937 rng(137);
  return long_queue(rng, 10000, machines);
}

Expected<Schedule> solve_auto(const Instance& instance) {
  return solve(instance.problem(), {.backend = Backend::kAuto});
}

TEST(FewMachinesScale, TenThousandJobsOnAGpuAndACpuNode) {
  const Instance instance = ten_thousand_jobs({{"gpu", 0}, {"cpu", 0}});
  const Expected<Schedule> plan = solve_auto(instance);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ("assignment", backend_name(plan->backend));
  EXPECT_EQ(plan_problems(instance, *plan), std::vector<std::string>{});
}

TEST(FewMachinesScale, TenThousandJobsOnTwoGpus) {
  const Instance instance = ten_thousand_jobs({{"gpu", 0}, {"gpu", 0}});
  const Expected<Schedule> plan = solve_auto(instance);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ("lemon", backend_name(plan->backend));
  EXPECT_EQ(plan_problems(instance, *plan), std::vector<std::string>{});
  const Expected<Schedule> transport = solve(instance.problem(), {.backend = Backend::kTransport});
  ASSERT_TRUE(transport.ok()) << transport.message();
  EXPECT_EQ(transport->objective_ticks, plan->objective_ticks);
}

}  // namespace
}  // namespace allox::matcher
