// Edge cases and errors of solve().
#include "matcher/matcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/matcher/test_instances.h"

namespace allox::matcher {
namespace {

using ::testing::HasSubstr;
using testing::Instance;
using testing::plan_problems;

Instance make(std::vector<Machine> machines, std::vector<std::map<DeviceType, double>> times,
              double now = 0) {
  Instance instance;
  instance.now = now;
  instance.machines = std::move(machines);
  for (std::size_t j = 0; j < times.size(); ++j) {
    Job job;
    job.id = "job-" + std::to_string(j);
    job.time = times[j];
    instance.jobs.push_back(job);
  }
  instance.pending = pending_jobs(instance.jobs);
  return instance;
}

TEST(Solve, NoJobsGivesAnEmptyPlan) {
  const Instance instance = make({{"gpu-0", "gpu", 0}}, {});
  for (Backend backend : all_backends()) {
    const Expected<Schedule> plan = solve(instance.problem(), {.backend = backend});
    ASSERT_TRUE(plan.ok()) << plan.message();
    EXPECT_TRUE(plan->assignments.empty());
    EXPECT_EQ(plan->objective_ticks, 0);
  }
  const Instance nothing = make({}, {});
  EXPECT_TRUE(solve(nothing.problem()).ok());
}

TEST(Solve, NoMachinesIsAnErrorNamingAJob) {
  const Instance instance = make({}, {{{"gpu", 3}}});
  const Expected<Schedule> plan = solve(instance.problem());
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.message(), HasSubstr("no machines"));
  EXPECT_THAT(plan.message(), HasSubstr("job-0"));
}

TEST(Solve, JobRunnableOnNoMachineIsAnErrorNamingIt) {
  const Instance instance =
      make({{"gpu-0", "gpu", 0}, {"cpu-0", "cpu", 0}}, {{{"gpu", 3}}, {{"tpu", 1}, {"v100", 2}}});
  const Expected<Schedule> plan = solve(instance.problem());
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.message(), HasSubstr("job 'job-1' cannot run on any machine"));
  EXPECT_THAT(plan.message(), HasSubstr("tpu, v100"));
  EXPECT_THAT(plan.message(), HasSubstr("cpu, gpu"));
}

TEST(Solve, BadTimesAreErrorsNamingTheJobAndDevice) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {-1.0, nan, inf, 1e13}) {
    const Instance instance = make({{"gpu-0", "gpu", 0}}, {{{"gpu", 2}}, {{"gpu", bad}}});
    const Expected<Schedule> plan = solve(instance.problem());
    ASSERT_FALSE(plan.ok()) << bad;
    EXPECT_THAT(plan.message(), HasSubstr("job 'job-1': time on gpu")) << bad;
  }
}

TEST(Solve, HugeTimesGiveAnOverflowErrorNotAWrongAnswer) {
  // 1e11 s is accepted alone, but 200 of them queued on one machine would cost
  // ~200 · 200 · 1e14 ms along a path: beyond the 2^60 guard.
  std::vector<std::map<DeviceType, double>> times(200, {{"gpu", 1e11}});
  const Instance instance = make({{"gpu-0", "gpu", 0}}, times);
  for (Backend backend : all_backends()) {
    const Expected<Schedule> plan = solve(instance.problem(), {.backend = backend});
    ASSERT_FALSE(plan.ok()) << backend_name(backend);
    EXPECT_THAT(plan.message(), HasSubstr("too large")) << backend_name(backend);
  }
}

TEST(Solve, LargeButSafeTimesSolveExactly) {
  const Instance instance =
      make({{"gpu-0", "gpu", 0}}, {{{"gpu", 1e9}}, {{"gpu", 2e9}}, {{"gpu", 3e9}}});
  const Expected<Schedule> plan = solve(instance.problem());
  ASSERT_TRUE(plan.ok()) << plan.message();
  // Shortest first: 1e9 + 3e9 + 6e9 seconds.
  EXPECT_EQ(plan->objective_ticks, std::int64_t{10'000'000'000} * kTicksPerSecond);
}

TEST(Solve, ZeroResidualMachineStartsNow) {
  const Instance instance = make({{"gpu-0", "gpu", 100}}, {{{"gpu", 5}}}, 100);
  const Expected<Schedule> plan = solve(instance.problem());
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ(plan->assignments[0].start, 100);
  EXPECT_EQ(plan->assignments[0].finish, 105);
  EXPECT_EQ(plan->objective, 5);
}

TEST(Solve, BusyMachineDelaysItsJobs) {
  // The fast gpu is busy for 50 s: waiting for it (50 + 10) beats the cpu (100).
  const Instance instance =
      make({{"gpu-0", "gpu", 60}, {"cpu-0", "cpu", 0}}, {{{"gpu", 10}, {"cpu", 100}}}, 10);
  const Expected<Schedule> plan = solve(instance.problem());
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ(plan->assignments[0].machine, 0u);
  EXPECT_EQ(plan->assignments[0].start, 60);
  EXPECT_EQ(plan->objective, 60);
  EXPECT_EQ(plan_problems(instance, *plan), std::vector<std::string>{});
}

TEST(Solve, ShortestJobRunsFirstOnAMachine) {
  const Instance instance =
      make({{"gpu-0", "gpu", 0}}, {{{"gpu", 30}}, {{"gpu", 10}}, {{"gpu", 20}}});
  const Expected<Schedule> plan = solve(instance.problem());
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ(machine_queues(*plan, 1)[0], (std::vector<std::size_t>{1, 2, 0}));
  EXPECT_EQ(plan->objective, 10 + 30 + 60);
}

TEST(Solve, UnknownBackendNameIsAnError) {
  EXPECT_EQ(*parse_backend("glpk"), Backend::kGlpk);
  EXPECT_EQ(*parse_backend("transport"), Backend::kTransport);
  EXPECT_EQ(*parse_backend("assignment"), Backend::kAssignment);
  EXPECT_EQ(*parse_backend("auto"), Backend::kAuto);
  for (Backend backend : all_backends()) EXPECT_EQ(*parse_backend(backend_name(backend)), backend);
  const Expected<Backend> bad = parse_backend("cplex");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.message(), HasSubstr("cplex"));
}

}  // namespace
}  // namespace allox::matcher
