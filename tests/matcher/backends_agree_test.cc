// The backends against each other, and the grouped against the naive graph, on medium instances.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "matcher/matcher.h"
#include "matcher/online.h"
#include "tests/matcher/test_instances.h"

namespace allox::matcher {
namespace {

using testing::Instance;
using testing::InstanceShape;
using testing::plan_problems;
using testing::random_instance;

TEST(BackendsAgree, MediumInstancesWithMixedTypesAndResidualTimes) {
  std::mt19937 rng(42);
  InstanceShape shape;
  shape.max_time = 900;
  shape.max_residual = 300;
  shape.fractional = true;
  for (int round = 0; round < 4; ++round) {
    const Instance instance = random_instance(rng, shape, 200, 20);
    const Expected<Schedule> lemon = solve(instance.problem(), {.backend = Backend::kLemon});
    ASSERT_TRUE(lemon.ok()) << lemon.message();
    EXPECT_EQ(plan_problems(instance, *lemon), std::vector<std::string>{});
    for (Backend backend : {Backend::kBoost, Backend::kGlpk, Backend::kTransport,
                            Backend::kAssignment, Backend::kAuto}) {
      const Expected<Schedule> other = solve(instance.problem(), {.backend = backend});
      ASSERT_TRUE(other.ok()) << backend_name(backend) << ": " << other.message();
      EXPECT_EQ(other->objective_ticks, lemon->objective_ticks) << backend_name(backend);
      EXPECT_EQ(plan_problems(instance, *other), std::vector<std::string>{})
          << backend_name(backend);
    }
  }
}

TEST(BackendsAgree, ManyDistinctResidualsPerTypeAndOverdueMachines) {
  // Two device types of 40 machines, each busy until its own time (80 groups of one machine),
  // a few free by now but flagged busy (an estimate that ran out): every backend finds the same
  // optimum, and no job is told to start now on a flagged machine.
  std::mt19937 rng(2026);
  InstanceShape shape;
  shape.devices = {"cpu", "gpu"};
  shape.max_time = 900;
  shape.fractional = true;
  for (int round = 0; round < 3; ++round) {
    Instance instance = random_instance(rng, shape, 240, 80);
    std::vector<bool> idle(instance.machines.size(), true);
    for (std::size_t m = 0; m < instance.machines.size(); ++m) {
      Machine& machine = instance.machines[m];
      machine.device = m % 2 == 0 ? "cpu" : "gpu";
      if (m % 10 == 0) continue;  // idle
      machine.busy_until =
          m % 10 == 1 ? instance.now
                      : instance.now + std::uniform_int_distribution<int>(1, 600'000)(rng) / 1000.0;
      idle[m] = false;
    }
    MatchingProblem problem = instance.problem();
    problem.idle = idle;
    const Expected<Schedule> lemon = solve(problem, {.backend = Backend::kLemon});
    ASSERT_TRUE(lemon.ok()) << lemon.message();
    EXPECT_EQ(plan_problems(instance, *lemon), std::vector<std::string>{});
    for (Backend backend :
         {Backend::kBoost, Backend::kTransport, Backend::kAssignment, Backend::kAuto}) {
      const Expected<Schedule> other = solve(problem, {.backend = backend});
      ASSERT_TRUE(other.ok()) << backend_name(backend) << ": " << other.message();
      EXPECT_EQ(other->objective_ticks, lemon->objective_ticks) << backend_name(backend);
      EXPECT_EQ(plan_problems(instance, *other), std::vector<std::string>{})
          << backend_name(backend);
      const Expected<OnlineDecision> online = decide_online(problem, {.backend = backend});
      ASSERT_TRUE(online.ok()) << online.message();
      EXPECT_FALSE(online->start_now.empty()) << backend_name(backend);
      for (const StartNow& s : online->start_now) {
        EXPECT_TRUE(idle[s.machine]) << backend_name(backend) << ": machine " << s.machine;
      }
    }
  }
}

// A machine busy for 1e11 s beside a free one: costs near 1e14 ms, where the floating-point
// simplex's tolerances accepted a plan 4 s above the optimum (j3 on the busy machine). Every
// backend, GLPK included, puts the three jobs on the free machine: 1 + 3 + 6 = 10 s.
TEST(BackendsAgree, HugeResidualTimesStayExactOnEveryBackend) {
  const std::vector<Machine> machines = {{"g0", "gpu", 1e11}, {"g1", "gpu", 0}};
  std::vector<Job> jobs;
  for (int t = 1; t <= 3; ++t) {
    jobs.push_back(Job{"j" + std::to_string(t), "u", 0, {{"gpu", double(t)}}, std::nullopt, ""});
  }
  const std::vector<PendingJob> pending = pending_jobs(jobs);
  const MatchingProblem problem{.now = 0, .machines = machines, .jobs = pending, .idle = {}};
  for (Backend backend : {Backend::kLemon, Backend::kBoost, Backend::kGlpk, Backend::kTransport,
                          Backend::kAssignment, Backend::kAuto}) {
    const Expected<Schedule> plan = solve(problem, {.backend = backend});
    ASSERT_TRUE(plan.ok()) << backend_name(backend) << ": " << plan.message();
    EXPECT_DOUBLE_EQ(plan->objective, 10) << backend_name(backend);
  }
}

TEST(BackendsAgree, GroupedGraphMatchesNaiveGraphWithIdenticalMachines) {
  // Many identical idle machines: the grouped graph shares slots, the naive one does not.
  std::mt19937 rng(5);
  InstanceShape shape;
  shape.max_time = 50;
  shape.fractional = true;
  for (int round = 0; round < 3; ++round) {
    Instance instance = random_instance(rng, shape, 60, 8);
    for (Machine& m : instance.machines) m.busy_until = instance.now;
    const Expected<Schedule> grouped = solve(instance.problem(), {.backend = Backend::kLemon});
    const Expected<Schedule> naive = solve(instance.problem(), {.naive_graph = true});
    ASSERT_TRUE(grouped.ok()) << grouped.message();
    ASSERT_TRUE(naive.ok()) << naive.message();
    EXPECT_EQ(grouped->objective_ticks, naive->objective_ticks);
    EXPECT_LT(grouped->stats.arcs, naive->stats.arcs);
    EXPECT_EQ(plan_problems(instance, *grouped), std::vector<std::string>{});
  }
}

TEST(BackendsAgree, LazyLevelsGrowUntilNoTopLevelIsFull) {
  // Half the jobs are fast only on the single gpu, half only on the cpus; by mean speed the
  // types look alike, so the first guess gives the gpu too few levels.
  Instance instance;
  instance.machines.push_back({"gpu-0", "gpu", 0});
  for (int m = 0; m < 5; ++m) instance.machines.push_back({"cpu-" + std::to_string(m), "cpu", 0});
  for (int j = 0; j < 60; ++j) {
    Job job;
    job.id = "j" + std::to_string(j);
    job.time = j % 2 ? std::map<DeviceType, double>{{"gpu", 1 + j % 7}, {"cpu", 400}}
                     : std::map<DeviceType, double>{{"gpu", 400}, {"cpu", 1 + j % 5}};
    instance.jobs.push_back(job);
  }
  instance.pending = pending_jobs(instance.jobs);
  const Expected<Schedule> lazy = solve(instance.problem(), {.backend = Backend::kLemon});
  const Expected<Schedule> naive = solve(instance.problem(), {.naive_graph = true});
  ASSERT_TRUE(lazy.ok()) << lazy.message();
  ASSERT_TRUE(naive.ok()) << naive.message();
  EXPECT_GT(lazy->stats.rounds, 1);
  EXPECT_EQ(lazy->objective_ticks, naive->objective_ticks);
  EXPECT_EQ(plan_problems(instance, *lazy), std::vector<std::string>{});
}

TEST(BackendsAgree, LemonCarriesPricesAcrossLazyRoundsExactly) {
  // As above, with a queue long enough for price hints: the second round starts from the first
  // round's prices without a feasible seed, so its first model may need escape arcs.
  Instance instance;
  instance.machines.push_back({"gpu-0", "gpu", 0});
  for (int m = 0; m < 5; ++m) instance.machines.push_back({"cpu-" + std::to_string(m), "cpu", 0});
  for (int j = 0; j < 300; ++j) {
    Job job;
    job.id = "j" + std::to_string(j);
    job.time = j % 2 ? std::map<DeviceType, double>{{"gpu", 1 + j % 7}, {"cpu", 400}}
                     : std::map<DeviceType, double>{{"gpu", 400}, {"cpu", 1 + j % 5}};
    instance.jobs.push_back(job);
  }
  instance.pending = pending_jobs(instance.jobs);
  const Expected<Schedule> lemon = solve(instance.problem(), {.backend = Backend::kLemon});
  const Expected<Schedule> boost = solve(instance.problem(), {.backend = Backend::kBoost});
  ASSERT_TRUE(lemon.ok()) << lemon.message();
  ASSERT_TRUE(boost.ok()) << boost.message();
  EXPECT_GT(lemon->stats.rounds, 1);
  EXPECT_EQ(lemon->objective_ticks, boost->objective_ticks);
  EXPECT_EQ(plan_problems(instance, *lemon), std::vector<std::string>{});
}

TEST(BackendsAgree, LemonWithPriceHintsMatchesBoost) {
  // Long queues on large groups of identical machines: LEMON starts from a list schedule's
  // prices and a few arcs per job, then prices the rest in. The answer must not change.
  std::mt19937 rng(11);
  InstanceShape shape;
  shape.max_time = 3000;
  shape.fractional = true;
  for (int round = 0; round < 2; ++round) {
    Instance instance = random_instance(rng, shape, 800, 48);
    for (Machine& m : instance.machines) m.busy_until = instance.now;
    const Expected<Schedule> lemon = solve(instance.problem(), {.backend = Backend::kLemon});
    const Expected<Schedule> boost = solve(instance.problem(), {.backend = Backend::kBoost});
    ASSERT_TRUE(lemon.ok()) << lemon.message();
    ASSERT_TRUE(boost.ok()) << boost.message();
    EXPECT_EQ(lemon->objective_ticks, boost->objective_ticks);
    EXPECT_LT(lemon->stats.model_arcs, lemon->stats.arcs);  // column generation was used
    EXPECT_EQ(plan_problems(instance, *lemon), std::vector<std::string>{});
  }
}

TEST(BackendsAgree, LemonOnLongQueuesWithDistinctMachinesMatchesBoost) {
  std::mt19937 rng(12);
  InstanceShape shape;
  shape.devices = {"a", "b", "c", "d"};
  shape.max_time = 3000;
  shape.max_residual = 900;
  shape.fractional = true;
  Instance instance = random_instance(rng, shape, 620, 16);
  const Expected<Schedule> lemon = solve(instance.problem(), {.backend = Backend::kLemon});
  const Expected<Schedule> boost = solve(instance.problem(), {.backend = Backend::kBoost});
  ASSERT_TRUE(lemon.ok()) << lemon.message();
  ASSERT_TRUE(boost.ok()) << boost.message();
  EXPECT_EQ(lemon->objective_ticks, boost->objective_ticks);
  EXPECT_LT(lemon->stats.model_arcs, lemon->stats.arcs);
  EXPECT_EQ(plan_problems(instance, *lemon), std::vector<std::string>{});
}

TEST(BackendsAgree, TransportMatchesLemonOnLongQueuesOfGroupedAndBusyMachines) {
  // Queues far longer than the machines, types with many identical machines plus busy machines
  // with their own residual times (slots with several outlets), and jobs that cannot run on
  // every type: the transport solver starts from a list schedule's prices and must end at
  // LEMON's optimum.
  std::mt19937 rng(13);
  InstanceShape shape;
  shape.max_time = 3000;
  shape.max_residual = 600;
  shape.fractional = true;
  for (int round = 0; round < 3; ++round) {
    Instance instance = random_instance(rng, shape, 900, 40);
    for (std::size_t m = 0; m < instance.machines.size(); m += 2) {
      instance.machines[m].busy_until = instance.now;  // half idle, in three large groups
    }
    const Expected<Schedule> lemon = solve(instance.problem(), {.backend = Backend::kLemon});
    const Expected<Schedule> transport =
        solve(instance.problem(), {.backend = Backend::kTransport});
    ASSERT_TRUE(lemon.ok()) << lemon.message();
    ASSERT_TRUE(transport.ok()) << transport.message();
    EXPECT_EQ(transport->objective_ticks, lemon->objective_ticks);
    EXPECT_EQ(plan_problems(instance, *transport), std::vector<std::string>{});
  }
}

TEST(BackendsAgree, TransportMatchesLemonWhenEachSlotHoldsManyJobs) {
  // Two device types of ~80 machines each under a queue 15 times longer: a level's slot holds a
  // job of most machines of its type, so the transport solver keeps the moves out of a slot in
  // heaps rather than scanning its members again; whole seconds (many ties) and fractional ones.
  std::mt19937 rng(15);
  InstanceShape shape;
  shape.devices = {"cpu", "gpu"};
  shape.max_residual = 600;
  for (const bool fractional : {false, true}) {
    shape.fractional = fractional;
    shape.max_time = fractional ? 3000 : 40;
    Instance instance = random_instance(rng, shape, 2400, 160);
    const Expected<Schedule> lemon = solve(instance.problem(), {.backend = Backend::kLemon});
    const Expected<Schedule> transport =
        solve(instance.problem(), {.backend = Backend::kTransport});
    ASSERT_TRUE(lemon.ok()) << lemon.message();
    ASSERT_TRUE(transport.ok()) << transport.message();
    EXPECT_EQ(transport->objective_ticks, lemon->objective_ticks) << "fractional " << fractional;
    EXPECT_EQ(plan_problems(instance, *transport), std::vector<std::string>{});
  }
}

TEST(BackendsAgree, TransportFromAnyRememberedPricesEqualsColdLemon) {
  // Re-plan a queue as it changes (arrivals, a departure, a machine turning busy) with one
  // PriceMemory, then reuse that memory on an unrelated instance: prices only change the
  // starting point, never the optimum.
  std::mt19937 rng(14);
  InstanceShape shape;
  shape.max_time = 2000;
  shape.max_residual = 300;
  shape.fractional = true;
  Instance instance = random_instance(rng, shape, 400, 24);
  PriceMemory memory;
  for (int step = 0; step < 6; ++step) {
    if (step == 3) instance.machines[0].busy_until = instance.now + 777.5;
    if (step == 4) instance.pending.erase(instance.pending.begin() + 17);
    if (step == 5) instance.pending.pop_back();
    const Expected<Schedule> warm =
        solve(instance.problem(), {.backend = Backend::kTransport, .memory = &memory});
    const Expected<Schedule> cold = solve(instance.problem(), {.backend = Backend::kLemon});
    ASSERT_TRUE(warm.ok()) << warm.message();
    ASSERT_TRUE(cold.ok()) << cold.message();
    EXPECT_EQ(warm->objective_ticks, cold->objective_ticks) << "step " << step;
  }
  shape.devices = {"gpu", "v100"};
  shape.max_time = 90;
  const Instance other = random_instance(rng, shape, 300, 7);
  const Expected<Schedule> foreign =
      solve(other.problem(), {.backend = Backend::kTransport, .memory = &memory});
  const Expected<Schedule> boost = solve(other.problem(), {.backend = Backend::kBoost});
  ASSERT_TRUE(foreign.ok()) << foreign.message();
  ASSERT_TRUE(boost.ok()) << boost.message();
  EXPECT_EQ(foreign->objective_ticks, boost->objective_ticks);
  EXPECT_EQ(plan_problems(other, *foreign), std::vector<std::string>{});
}

TEST(BackendsAgree, TransportRePlansAnOverloadedQueueStartByStartAsLemonDoes) {
  // The simulator's overloaded replay in small: one PriceMemory over every solve, the jobs the
  // plan puts first on idle machines start, the clock moves to the next machine to free, and a
  // job arrives every other solve. Each start leaves the remembered prices off at the levels the
  // started machine still holds, so every warm solve starts from an imbalance its phases repair:
  // every warm plan must cost what a cold LEMON solve does and be a consistent schedule.
  std::mt19937 rng(31);
  InstanceShape shape;
  shape.devices = {"cpu", "gpu"};
  shape.max_time = 600;
  shape.max_residual = 300;
  shape.fractional = true;
  const Instance generated = random_instance(rng, shape, 360, 8);
  std::vector<Machine> machines = generated.machines;
  std::vector<Job> queue(generated.jobs.begin(), generated.jobs.end() - 60);
  std::vector<Job> arrivals(generated.jobs.end() - 60, generated.jobs.end());
  double now = generated.now;
  PriceMemory memory;
  for (int step = 0; step < 60 && !queue.empty(); ++step) {
    Instance instance;
    instance.now = now;
    instance.machines = machines;
    instance.jobs = queue;
    instance.pending = pending_jobs(instance.jobs);
    const Expected<Schedule> warm =
        solve(instance.problem(), {.backend = Backend::kTransport, .memory = &memory});
    const Expected<Schedule> cold = solve(instance.problem(), {.backend = Backend::kLemon});
    ASSERT_TRUE(warm.ok()) << warm.message();
    ASSERT_TRUE(cold.ok()) << cold.message();
    EXPECT_EQ(warm->objective_ticks, cold->objective_ticks) << "step " << step;
    EXPECT_EQ(plan_problems(instance, *warm), std::vector<std::string>{}) << "step " << step;
    const OnlineDecision decision = online_decision(instance.problem(), *warm);
    std::vector<std::size_t> started;
    for (const StartNow& s : decision.start_now) {
      Machine& machine = machines[s.machine];
      machine.busy_until = now + queue[s.job].time.at(machine.device);
      started.push_back(s.job);
    }
    std::sort(started.rbegin(), started.rend());
    for (std::size_t j : started) queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(j));
    if (step % 2 == 0 && !arrivals.empty()) {
      queue.push_back(arrivals.back());
      arrivals.pop_back();
    }
    double next = std::numeric_limits<double>::infinity();
    for (const Machine& m : machines) {
      if (m.busy_until > now) next = std::min(next, m.busy_until);
    }
    if (next < std::numeric_limits<double>::infinity()) now = next;
  }
}

TEST(BackendsAgree, TransportWithManyTiedMovesAcrossDeviceTypesMatchesLemon) {
  // Whole seconds of at most 12 on two device types under queues 30 to 80 times longer than the
  // machines: the moves from one slot to the other type's levels tie often (equal times, and
  // members whose costs cross at a whole level), which the solver settles on the lower hull of
  // a slot's members; re-planned with one PriceMemory as machines turn busy, so scanned moves are
  // kept across joins and leaves. Every plan must cost what LEMON's does and be consistent.
  std::mt19937 rng(47);
  InstanceShape shape;
  shape.devices = {"cpu", "gpu"};
  shape.max_time = 12;
  shape.max_residual = 8;
  for (const int jobs : {180, 320, 480}) {
    Instance instance = random_instance(rng, shape, jobs, 6);
    for (std::size_t m = 0; m < instance.machines.size(); ++m) {
      instance.machines[m].device = shape.devices[m % 2];  // both types present
    }
    PriceMemory memory;
    for (int step = 0; step < 8; ++step) {
      const Expected<Schedule> warm =
          solve(instance.problem(), {.backend = Backend::kTransport, .memory = &memory});
      const Expected<Schedule> lemon = solve(instance.problem(), {.backend = Backend::kLemon});
      ASSERT_TRUE(warm.ok()) << warm.message();
      ASSERT_TRUE(lemon.ok()) << lemon.message();
      EXPECT_EQ(warm->objective_ticks, lemon->objective_ticks) << jobs << " jobs, step " << step;
      EXPECT_EQ(plan_problems(instance, *warm), std::vector<std::string>{}) << jobs << " jobs";
      // The machine planned to free first turns busy for a while; one job leaves the queue.
      Machine& machine =
          instance.machines[static_cast<std::size_t>(step) % instance.machines.size()];
      machine.busy_until = instance.now + 1 + step % 5;
      instance.jobs.erase(instance.jobs.begin() + step * 7 % 40);
      instance.pending = pending_jobs(instance.jobs);
    }
  }
}

TEST(BackendsAgree, PriceMemoryKeepsOneLevelBelowTheDeepestUsedAndStaysExact) {
  // A long queue, then the same cluster with a tenth of it: the memory keeps, per device type,
  // the levels down to one below the deepest the plan used, so the short queue's network is not
  // as deep as the long one's; every warm plan still costs what LEMON's does.
  std::mt19937 rng(53);
  InstanceShape shape;
  shape.devices = {"cpu", "gpu"};
  shape.max_time = 900;
  shape.max_residual = 200;
  shape.fractional = true;
  Instance instance = random_instance(rng, shape, 500, 8);
  for (std::size_t m = 0; m < instance.machines.size(); ++m) {
    instance.machines[m].device = shape.devices[m % 2];
  }
  PriceMemory memory;
  for (const std::size_t keep : {500, 50}) {
    instance.jobs.resize(keep);
    instance.pending = pending_jobs(instance.jobs);
    const Expected<Schedule> warm =
        solve(instance.problem(), {.backend = Backend::kTransport, .memory = &memory});
    const Expected<Schedule> lemon = solve(instance.problem(), {.backend = Backend::kLemon});
    ASSERT_TRUE(warm.ok()) << warm.message();
    ASSERT_TRUE(lemon.ok()) << lemon.message();
    EXPECT_EQ(warm->objective_ticks, lemon->objective_ticks) << keep << " jobs";
    EXPECT_EQ(plan_problems(instance, *warm), std::vector<std::string>{}) << keep << " jobs";
    for (const std::string& device : shape.devices) {
      std::size_t deepest = 0;
      for (const Assignment& a : warm->assignments) {
        if (instance.machines[a.machine].device == device) deepest = std::max(deepest, a.position);
      }
      EXPECT_GE(memory.levels(device), 1u) << device;
      EXPECT_LE(memory.levels(device), deepest + 1) << device << ", " << keep << " jobs";
    }
  }
}

TEST(BackendsAgree, TransportOnDistinctMachinesMatchesBoost) {
  // Every machine its own type and residual: many slots of capacity one.
  std::mt19937 rng(15);
  InstanceShape shape;
  shape.devices = {"a", "b", "c", "d", "e", "f"};
  shape.max_time = 3000;
  shape.max_residual = 900;
  shape.fractional = true;
  const Instance instance = random_instance(rng, shape, 300, 6);
  const Expected<Schedule> transport = solve(instance.problem(), {.backend = Backend::kTransport});
  const Expected<Schedule> boost = solve(instance.problem(), {.backend = Backend::kBoost});
  ASSERT_TRUE(transport.ok()) << transport.message();
  ASSERT_TRUE(boost.ok()) << boost.message();
  EXPECT_EQ(transport->objective_ticks, boost->objective_ticks);
  EXPECT_EQ(plan_problems(instance, *transport), std::vector<std::string>{});
}

TEST(BackendsAgree, AssignmentOnLongQueuesWithDistinctMachinesMatchesBoost) {
  // Many device types with one machine each (the grouped network has hundreds of slots), busy
  // machines and jobs that cannot run everywhere: positions deep in every machine's queue.
  std::mt19937 rng(16);
  InstanceShape shape;
  shape.devices.clear();
  for (int d = 0; d < 24; ++d) shape.devices.push_back("d" + std::to_string(d));
  shape.max_time = 3000;
  shape.max_residual = 900;
  shape.fractional = true;
  const Instance instance = random_instance(rng, shape, 360, 24);
  const Expected<Schedule> assignment =
      solve(instance.problem(), {.backend = Backend::kAssignment});
  const Expected<Schedule> boost = solve(instance.problem(), {.backend = Backend::kBoost});
  ASSERT_TRUE(assignment.ok()) << assignment.message();
  ASSERT_TRUE(boost.ok()) << boost.message();
  EXPECT_EQ(assignment->objective_ticks, boost->objective_ticks);
  EXPECT_EQ(plan_problems(instance, *assignment), std::vector<std::string>{});
}

TEST(BackendsAgree, AutoPicksTransportAssignmentOrLemonAndStaysExact) {
  // Three shapes, one per pick: few large groups (transport), machines of nearly all distinct
  // device types (assignment, medium and long queues), a few device types with deep queues
  // (LEMON). Each answer equals an independent backend's.
  struct Case {
    int devices, jobs, machines;
    Backend expected, reference;
  };
  for (const Case& c : {Case{3, 900, 40, Backend::kTransport, Backend::kLemon},
                        Case{40, 400, 40, Backend::kAssignment, Backend::kLemon},
                        Case{60, 1100, 60, Backend::kAssignment, Backend::kLemon},
                        Case{6, 900, 20, Backend::kLemon, Backend::kAssignment}}) {
    std::mt19937 rng(17);
    InstanceShape shape;
    shape.devices.clear();
    for (int d = 0; d < c.devices; ++d) shape.devices.push_back("d" + std::to_string(d));
    shape.max_time = 3000;
    shape.max_residual = c.devices == 3 ? 0 : 900;
    shape.fractional = true;
    const Instance instance = random_instance(rng, shape, c.jobs, c.machines);
    const Expected<Schedule> picked = solve(instance.problem(), {.backend = Backend::kAuto});
    const Expected<Schedule> reference = solve(instance.problem(), {.backend = c.reference});
    ASSERT_TRUE(picked.ok()) << picked.message();
    ASSERT_TRUE(reference.ok()) << reference.message();
    EXPECT_EQ(picked->backend, c.expected) << c.jobs;
    EXPECT_EQ(picked->objective_ticks, reference->objective_ticks) << c.jobs;
    EXPECT_EQ(plan_problems(instance, *picked), std::vector<std::string>{}) << c.jobs;
  }
}

}  // namespace
}  // namespace allox::matcher

namespace allox::matcher {
namespace {

TEST(BackendsAgree, AutoRePlansAWarmQueueOnTransportPastTheColdSlotLimit) {
  // 3,000 jobs on 20 machines of 2 types: ~390 slots, past the cold limit (256), so the first
  // solve runs LEMON; once the PriceMemory remembers both types, the same queue re-plans on
  // transport (up to 512 slots) at the same optimum.
  std::mt19937 rng(23);
  InstanceShape shape;
  shape.devices = {"cpu", "gpu"};
  shape.max_time = 3000;
  shape.max_residual = 900;
  shape.fractional = true;
  const Instance instance = random_instance(rng, shape, 3000, 20);
  PriceMemory memory;
  const Expected<Schedule> cold = solve(instance.problem(), {.memory = &memory});
  const Expected<Schedule> warm = solve(instance.problem(), {.memory = &memory});
  ASSERT_TRUE(cold.ok()) << cold.message();
  ASSERT_TRUE(warm.ok()) << warm.message();
  EXPECT_EQ(cold->backend, Backend::kLemon);
  EXPECT_EQ(warm->backend, Backend::kTransport);
  EXPECT_EQ(warm->objective_ticks, cold->objective_ticks);
  EXPECT_EQ(plan_problems(instance, *warm), std::vector<std::string>{});
}

}  // namespace
}  // namespace allox::matcher
