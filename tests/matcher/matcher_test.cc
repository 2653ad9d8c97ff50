// Edge cases and errors of solve().
#include "matcher/matcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "matcher/prepared_problem.h"
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

TEST(Prepare, GroupsByTypeResidualAndIdleFlagWithTypesSortedAndMachinesAscending) {
  // Types interleaved and out of name order; residuals equal across types; one machine flagged
  // busy although free by now. Groups must come out in (type, residual, idle) order.
  const std::vector<Machine> machines = {
      {"m0", "v100", 5}, {"m1", "cpu", 0},  {"m2", "v100", 0}, {"m3", "cpu", 5},
      {"m4", "k80", 0},  {"m5", "v100", 5}, {"m6", "cpu", 0},  {"m7", "v100", 0},
  };
  std::vector<Job> jobs(1);
  jobs[0].id = "j";
  jobs[0].time = {{"cpu", 1}, {"k80", 1}, {"v100", 1}};
  const std::vector<PendingJob> pending = pending_jobs(jobs);
  MatchingProblem problem;
  problem.machines = machines;
  problem.jobs = pending;
  problem.idle = {true, true, true, true, true, true, true, false};
  const Expected<PreparedProblem> grouped = prepare(problem, true);
  ASSERT_TRUE(grouped.ok()) << grouped.message();
  EXPECT_EQ(grouped->types, (std::vector<DeviceType>{"cpu", "k80", "v100"}));
  EXPECT_EQ(grouped->machines_of_type, (std::vector<std::size_t>{3, 1, 4}));
  struct Seen {
    std::size_t type;
    std::int64_t residual;
    bool idle;
    std::vector<std::size_t> machines;
    bool operator==(const Seen&) const = default;
  };
  std::vector<Seen> seen;
  for (const MachineGroup& g : grouped->groups) {
    seen.push_back({g.type, g.residual_ticks, g.idle, g.machines});
  }
  const std::vector<Seen> want = {
      {0, 0, true, {1, 6}}, {0, 5000, false, {3}}, {1, 0, true, {4}},
      {2, 0, false, {7}},   {2, 0, true, {2}},     {2, 5000, false, {0, 5}},
  };
  EXPECT_EQ(seen, want);
  // Without grouping every machine is its own group, in the same order.
  const Expected<PreparedProblem> naive = prepare(problem, false);
  ASSERT_TRUE(naive.ok()) << naive.message();
  std::vector<std::size_t> order;
  for (const MachineGroup& g : naive->groups) {
    ASSERT_EQ(g.machines.size(), 1u);
    order.push_back(g.machines[0]);
  }
  EXPECT_EQ(order, (std::vector<std::size_t>{1, 6, 3, 4, 7, 2, 0, 5}));
}

TEST(Prepare, ABadMachineTimeIsAnErrorNamingTheMachine) {
  std::vector<Job> jobs(1);
  jobs[0].id = "j";
  jobs[0].time = {{"gpu", 1}};
  const std::vector<PendingJob> pending = pending_jobs(jobs);
  for (double bad : {1e13, std::numeric_limits<double>::infinity()}) {
    const std::vector<Machine> machines = {{"ok", "gpu", 0}, {"far", "gpu", bad}};
    MatchingProblem problem;
    problem.machines = machines;
    problem.jobs = pending;
    const Expected<PreparedProblem> prepared = prepare(problem, true);
    ASSERT_FALSE(prepared.ok()) << bad;
    EXPECT_THAT(prepared.message(), HasSubstr("machine 'far'")) << bad;
  }
}

// 100,000 jobs on two machines: a backend that stores every job arc would need about 10^10 of
// them. It says so instead of failing an allocation; the default backend solves the queue.
TEST(Solve, ANetworkTooLargeToStoreIsAnError) {
  std::vector<std::map<DeviceType, double>> times;
  for (int j = 0; j < 100000; ++j) times.push_back({{"gpu", 1 + j % 97}, {"cpu", 1 + j % 13}});
  const Instance instance = make({{"gpu-0", "gpu", 0}, {"cpu-0", "cpu", 0}}, times);
  for (Backend backend : {Backend::kGlpk, Backend::kBoost}) {
    const Expected<Schedule> plan = solve(instance.problem(), {.backend = backend});
    ASSERT_FALSE(plan.ok());
    EXPECT_THAT(plan.message(), HasSubstr("that fit in memory")) << backend_name(backend);
  }
}

}  // namespace
}  // namespace allox::matcher
