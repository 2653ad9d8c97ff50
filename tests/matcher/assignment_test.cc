// The assignment backend's pruned search (columns generated lazily by convexity, per-job machine
// floors that skip machines) against full solves by independent backends, on the shapes that
// would break a wrong pruning: many jobs preferring one machine, ties everywhere, zero times,
// jobs that cannot run everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "matcher/matcher.h"
#include "matcher/position_solver.h"
#include "tests/matcher/test_instances.h"

namespace allox::matcher {
namespace {

using testing::Instance;
using testing::long_queue;
using testing::plan_problems;

// Every machine its own device type d<m>; job j takes times[j][m] seconds on machine m, or
// cannot run there when the time is negative.
Instance distinct_machines(const std::vector<double>& busy_until,
                           const std::vector<std::vector<double>>& times) {
  Instance instance;
  for (std::size_t m = 0; m < busy_until.size(); ++m) {
    instance.machines.push_back({"m" + std::to_string(m), "d" + std::to_string(m), busy_until[m]});
  }
  for (std::size_t j = 0; j < times.size(); ++j) {
    Job job;
    job.id = "j" + std::to_string(j);
    for (std::size_t m = 0; m < times[j].size(); ++m) {
      if (times[j][m] >= 0) job.time["d" + std::to_string(m)] = times[j][m];
    }
    instance.jobs.push_back(job);
  }
  instance.pending = pending_jobs(instance.jobs);
  return instance;
}

// The assignment backend's plan is consistent and as cheap as LEMON's, and Boost's on queues of
// up to 160 jobs (beyond, Boost's successive shortest paths cost seconds of the suite).
void expect_exact(const Instance& instance, const std::string& what) {
  const Expected<Schedule> assignment =
      solve(instance.problem(), {.backend = Backend::kAssignment});
  ASSERT_TRUE(assignment.ok()) << what << ": " << assignment.message();
  EXPECT_EQ(plan_problems(instance, *assignment), std::vector<std::string>{}) << what;
  for (Backend reference : {Backend::kLemon, Backend::kBoost}) {
    if (reference == Backend::kBoost && instance.jobs.size() > 160) continue;
    const Expected<Schedule> full = solve(instance.problem(), {.backend = reference});
    ASSERT_TRUE(full.ok()) << what << ": " << full.message();
    EXPECT_EQ(assignment->objective_ticks, full->objective_ticks)
        << what << " against " << backend_name(reference);
  }
}

TEST(AssignmentSearch, ManyJobsPreferOneMachine) {
  // Machine 0 is 20x faster for every job, so the optimum stacks a deep queue there and every
  // new job's search runs through it; whole-second times make ties common, a quarter of the jobs
  // cannot run on a given slow machine, and some machines share a residual time.
  std::mt19937 rng(131);
  std::uniform_int_distribution<int> seconds(1, 40);
  std::uniform_int_distribution<int> quarter(0, 3);
  for (int round = 0; round < 3; ++round) {
    const int machines = 12 + 6 * round;
    std::vector<double> busy_until(machines);
    for (int m = 0; m < machines; ++m) busy_until[m] = m % 3 == 0 ? 0 : 5 * (m % 4);
    std::vector<std::vector<double>> times(round == 0 ? 160 : 280, std::vector<double>(machines));
    for (auto& job : times) {
      const int size = seconds(rng);
      for (int m = 0; m < machines; ++m) {
        job[m] = m == 0 ? size : 20.0 * size + seconds(rng);
        if (m > 0 && quarter(rng) == 0) job[m] = -1;
      }
    }
    expect_exact(distinct_machines(busy_until, times), "round " + std::to_string(round));
  }
}

TEST(AssignmentSearch, TiesEverywhereAndZeroTimes) {
  // Every job takes the same time on every machine (all positions tie) except a few that take
  // no time at all; then the same with every machine busy for the same while.
  for (double busy : {0.0, 7.0}) {
    std::vector<std::vector<double>> times(120, std::vector<double>(10, 3.0));
    for (std::size_t j = 0; j < times.size(); j += 7) times[j].assign(10, 0.0);
    expect_exact(distinct_machines(std::vector<double>(10, busy), times),
                 "busy " + std::to_string(busy));
  }
}

TEST(AssignmentSearch, RandomDistinctMachinesOfEveryDepth) {
  // From shallow (8 jobs a machine) to deep (60 a machine) queues on distinct machines.
  std::mt19937 rng(132);
  std::uniform_real_distribution<double> unit(0, 1);
  for (const auto& [jobs, machines] :
       std::vector<std::pair<int, int>>{{160, 20}, {300, 5}, {240, 30}, {120, 2}}) {
    std::vector<double> busy_until(machines);
    for (double& b : busy_until) b = std::round(unit(rng) * 300'000) / 1000;
    std::vector<std::vector<double>> times(jobs, std::vector<double>(machines));
    for (auto& job : times) {
      const double size = 1 + 600 * unit(rng) * unit(rng);
      for (double& t : job) t = std::round(size * (0.5 + unit(rng)) * 1000) / 1000;
    }
    expect_exact(distinct_machines(busy_until, times),
                 std::to_string(jobs) + " jobs on " + std::to_string(machines) + " machines");
  }
}

TEST(AssignmentSearch, IdenticalMachinesBesideDistinctOnesAndWhoAutoPicks) {
  // 30 machines of their own types and 10 or 15 identical idle ones: the identical machines'
  // positions tie. auto leaves the cluster to LEMON once a quarter of its machines share a type
  // with two others or more; the assignment solver stays exact either way.
  std::mt19937 rng(133);
  std::uniform_real_distribution<double> unit(0, 1);
  for (const auto& [identical, picked] :
       std::vector<std::pair<int, Backend>>{{10, Backend::kAssignment}, {15, Backend::kLemon}}) {
    Instance instance;
    for (int m = 0; m < 30; ++m) {
      instance.machines.push_back({"m" + std::to_string(m), "d" + std::to_string(m),
                                   std::round(unit(rng) * 90'000) / 1000});
    }
    for (int m = 0; m < identical; ++m) {
      instance.machines.push_back({"g" + std::to_string(m), "gpu", 0});
    }
    for (int j = 0; j < 300; ++j) {
      Job job;
      job.id = "j" + std::to_string(j);
      const double size = 1 + 300 * unit(rng) * unit(rng);
      for (int m = 0; m < 30; ++m) {
        job.time["d" + std::to_string(m)] = std::round(size * (0.5 + unit(rng)) * 1000) / 1000;
      }
      job.time["gpu"] = std::round(size * (0.5 + unit(rng)) * 1000) / 1000;
      instance.jobs.push_back(job);
    }
    instance.pending = pending_jobs(instance.jobs);
    const std::string what = std::to_string(identical) + " identical";
    expect_exact(instance, what);
    const Expected<Schedule> chosen = solve(instance.problem(), {.backend = Backend::kAuto});
    ASSERT_TRUE(chosen.ok()) << what << ": " << chosen.message();
    EXPECT_EQ(chosen->backend, picked) << what;
  }
}

TEST(AssignmentSearch, DeepQueuesOnOneOrTwoMachinesAgainstBruteForce) {
  // Every job on one or two machines: queues as deep as the instance, where a search settles long
  // runs of positions and a job's walk passes them. Whole seconds from 0 make ties common; one
  // type or two, machines busy or free.
  std::mt19937 rng(134);
  testing::InstanceShape shape;
  shape.max_machines = 2;
  int rounds = 0;
  for (const std::vector<std::string>& devices :
       {std::vector<std::string>{"gpu"}, std::vector<std::string>{"cpu", "gpu"}}) {
    shape.devices = devices;
    for (int round = 0; round < 120; ++round) {
      shape.fractional = round % 3 == 2;
      const int jobs = std::uniform_int_distribution<int>(1, 7)(rng);
      const int machines = std::uniform_int_distribution<int>(1, 2)(rng);
      const Instance instance = testing::random_instance(rng, shape, jobs, machines);
      const std::int64_t best = testing::brute_force_objective(instance);
      for (Backend backend : {Backend::kAssignment, Backend::kAuto}) {
        EXPECT_EQ("", testing::differs_from_optimum(instance, backend, best))
            << instance.describe();
      }
      ++rounds;
    }
  }
  EXPECT_EQ(240, rounds);
}

TEST(AssignmentSearch, LongQueuesOnFewMachinesAgreeWithLemonAndTransport) {
  // 1,000 jobs on a GPU and a CPU node, and on two GPUs (one busy) and a CPU node: queues of
  // hundreds on each machine, each job's search passing runs of settled positions.
  std::mt19937 rng(135);
  const std::vector<std::vector<std::pair<std::string, double>>> clusters = {
      {{"gpu", 0}, {"cpu", 0}}, {{"gpu", 0}, {"gpu", 30}, {"cpu", 0}}};
  for (const auto& machines : clusters) {
    const Instance instance = long_queue(rng, 1000, machines);
    const std::string what = std::to_string(machines.size()) + " machines";
    const Expected<Schedule> assignment =
        solve(instance.problem(), {.backend = Backend::kAssignment});
    ASSERT_TRUE(assignment.ok()) << what << ": " << assignment.message();
    EXPECT_EQ(plan_problems(instance, *assignment), std::vector<std::string>{}) << what;
    for (Backend reference : {Backend::kLemon, Backend::kTransport}) {
      const Expected<Schedule> other = solve(instance.problem(), {.backend = reference});
      ASSERT_TRUE(other.ok()) << what << ": " << other.message();
      EXPECT_EQ(assignment->objective_ticks, other->objective_ticks)
          << what << " against " << backend_name(reference);
    }
    const Expected<Schedule> chosen = solve(instance.problem(), {.backend = Backend::kAuto});
    ASSERT_TRUE(chosen.ok()) << what << ": " << chosen.message();
    EXPECT_EQ("assignment", backend_name(chosen->backend)) << what;
  }
}

TEST(AssignmentSearch, AutoLeavesAClusterOfOneDeviceTypeToLemon) {
  // One machine, or two of one type (one busy): every job takes the same time on each, the
  // positions tie, and the grouped network is LEMON's to solve; the assignment solver agrees.
  // Queues past the transport solver's 256 slots.
  std::mt19937 rng(136);
  const std::vector<std::vector<std::pair<std::string, double>>> clusters = {
      {{"gpu", 0}}, {{"gpu", 0}, {"gpu", 0}}, {{"gpu", 0}, {"gpu", 30}}};
  for (const auto& machines : clusters) {
    const Instance instance = long_queue(rng, 600, machines);
    const std::string what = std::to_string(machines.size()) + " machine(s) of one type";
    const Expected<Schedule> chosen = solve(instance.problem(), {.backend = Backend::kAuto});
    ASSERT_TRUE(chosen.ok()) << what << ": " << chosen.message();
    EXPECT_EQ("lemon", backend_name(chosen->backend)) << what;
    EXPECT_EQ(plan_problems(instance, *chosen), std::vector<std::string>{}) << what;
    const Expected<Schedule> assignment =
        solve(instance.problem(), {.backend = Backend::kAssignment});
    ASSERT_TRUE(assignment.ok()) << what << ": " << assignment.message();
    EXPECT_EQ(chosen->objective_ticks, assignment->objective_ticks) << what;
  }
}

TEST(AssignmentSearch, RefusesMoreJobMachinePairsThanItsBoundsHoldAndAutoSolvesThem) {
  // 2,048 identical machines and just enough jobs to pass the limit.
  Instance instance;
  instance.machines.reserve(2048);
  for (int m = 0; m < 2048; ++m) instance.machines.push_back({"m" + std::to_string(m), "gpu", 0});
  const std::size_t jobs = kMaxPositionPairs / instance.machines.size() + 1;
  for (std::size_t j = 0; j < jobs; ++j) {
    Job job;
    job.id = "j" + std::to_string(j);
    job.time["gpu"] = 1.0 + static_cast<double>(j % 5);
    instance.jobs.push_back(job);
  }
  instance.pending = pending_jobs(instance.jobs);
  const Expected<Schedule> refused = solve(instance.problem(), {.backend = Backend::kAssignment});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("job-machine pairs, above its limit"), std::string::npos)
      << refused.message();
  const Expected<Schedule> picked = solve(instance.problem(), {.backend = Backend::kAuto});
  ASSERT_TRUE(picked.ok()) << picked.message();
  EXPECT_NE(picked->backend, Backend::kAssignment);
  EXPECT_EQ(plan_problems(instance, *picked), std::vector<std::string>{});
}

}  // namespace
}  // namespace allox::matcher
