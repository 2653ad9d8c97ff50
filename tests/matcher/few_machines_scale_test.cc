// Long queues on few machines under a CPU-time budget: 10,000 jobs on a GPU and a CPU node (the
// assignment solver, whose searches then settle thousands of positions each) and on two GPUs (one
// device type: LEMON). Each budget is several times what the solve takes on the machine of
// docs/results.md ("Matcher", 5 s and 0.5 s) and far below what a solve whose searches step over
// settled positions one by one, or an assignment solve of one device type, takes (60 s, 99 s).
#include <gtest/gtest.h>

#include <ctime>
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

double cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

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

// The auto backend's plan, the backend it ran and the CPU seconds it took.
struct Timed {
  Expected<Schedule> plan;
  double cpu = 0;
};

Timed solve_timed(const Instance& instance) {
  const double start = cpu_seconds();
  Expected<Schedule> plan = solve(instance.problem(), {.backend = Backend::kAuto});
  return {std::move(plan), cpu_seconds() - start};
}

TEST(FewMachinesScale, TenThousandJobsOnAGpuAndACpuNode) {
  const Instance instance = ten_thousand_jobs({{"gpu-0", "gpu"}, {"cpu-0", "cpu"}});
  const Timed timed = solve_timed(instance);
  ASSERT_TRUE(timed.plan.ok()) << timed.plan.message();
  EXPECT_EQ("assignment", backend_name(timed.plan->backend));
  EXPECT_EQ(plan_problems(instance, *timed.plan), std::vector<std::string>{});
  EXPECT_LT(timed.cpu, 25.0) << "CPU seconds";
}

TEST(FewMachinesScale, TenThousandJobsOnTwoGpus) {
  const Instance instance = ten_thousand_jobs({{"gpu-0", "gpu"}, {"gpu-1", "gpu"}});
  const Timed timed = solve_timed(instance);
  ASSERT_TRUE(timed.plan.ok()) << timed.plan.message();
  EXPECT_EQ("lemon", backend_name(timed.plan->backend));
  EXPECT_EQ(plan_problems(instance, *timed.plan), std::vector<std::string>{});
  EXPECT_LT(timed.cpu, 10.0) << "CPU seconds";
  const Expected<Schedule> transport = solve(instance.problem(), {.backend = Backend::kTransport});
  ASSERT_TRUE(transport.ok()) << transport.message();
  EXPECT_EQ(transport->objective_ticks, timed.plan->objective_ticks);
}

}  // namespace
}  // namespace allox::matcher
