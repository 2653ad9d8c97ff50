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
using testing::plan_problems;

// 10,000 jobs of 10 s to an hour on a GPU, to two on a CPU node, on `machines`.
Instance ten_thousand_jobs(const std::vector<std::pair<std::string, std::string>>& machines) {
  Instance instance;
  for (const auto& [name, device] : machines) instance.machines.push_back({name, device, 0});
  std::mt19937 rng(137);
  std::uniform_int_distribution<int> gpu(10, 3600);
  std::uniform_int_distribution<int> cpu(10, 7200);
  for (int j = 0; j < 10000; ++j) {
    Job job;
    job.id = "j" + std::to_string(j);
    job.time["gpu"] = gpu(rng);
    job.time["cpu"] = cpu(rng);
    instance.jobs.push_back(job);
  }
  instance.pending = pending_jobs(instance.jobs);
  return instance;
}

Expected<Schedule> solve_auto(const Instance& instance) {
  return solve(instance.problem(), {.backend = Backend::kAuto});
}

TEST(FewMachinesScale, TenThousandJobsOnAGpuAndACpuNode) {
  const Instance instance = ten_thousand_jobs({{"gpu-0", "gpu"}, {"cpu-0", "cpu"}});
  const Expected<Schedule> plan = solve_auto(instance);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ("assignment", backend_name(plan->backend));
  EXPECT_EQ(plan_problems(instance, *plan), std::vector<std::string>{});
}

TEST(FewMachinesScale, TenThousandJobsOnTwoGpus) {
  const Instance instance = ten_thousand_jobs({{"gpu-0", "gpu"}, {"gpu-1", "gpu"}});
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
