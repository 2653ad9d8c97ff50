// Multi-unit jobs on multi-unit nodes through the simulator, every policy the comparison runs,
// the synthetic multi-device generator and the planner's node-shaped what-ifs.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "fairness/policy.h"
#include "profiler/throughput_table.h"
#include "sim/experiment.h"
#include "sim/metrics.h"
#include "sim/planner.h"
#include "sim/simulator.h"
#include "sim/synthetic.h"
#include "tests/sim/sim_test_util.h"

namespace allox {
namespace {

using testing::make_trace;
using testing::trace_job;

// Wraps a policy and checks, at every decision, what the simulator shows it: each running job on
// exactly its units, all on one node of one type, busy; no unit held by two jobs.
class CheckingPolicy : public SchedulingPolicy {
 public:
  explicit CheckingPolicy(std::unique_ptr<SchedulingPolicy> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  bool preemptive() const override { return inner_->preemptive(); }
  bool uses_estimates() const override { return inner_->uses_estimates(); }
  std::optional<PlanQuality> plan_quality() const override { return inner_->plan_quality(); }

  Expected<Decision> decide(const ClusterState& state) override {
    const std::vector<std::size_t> node_of = node_ids(state.machines);
    std::vector<int> holders(state.machines.size(), 0);
    for (const RunningJob& r : state.running) {
      std::vector<std::size_t> units = r.other_machines;
      units.push_back(r.machine);
      if (units.size() != static_cast<std::size_t>(r.job->units)) {
        violations.push_back(r.job->id + " holds " + std::to_string(units.size()) + " units");
      }
      for (std::size_t m : units) {
        ++holders[m];
        if (node_of[m] != node_of[r.machine]) violations.push_back(r.job->id + " spans nodes");
        if (state.idle[m]) violations.push_back(r.job->id + " on an idle unit");
      }
    }
    for (std::size_t m = 0; m < holders.size(); ++m) {
      if (holders[m] > 1) violations.push_back(state.machines[m].name + " held twice");
    }
    ++decisions;
    return inner_->decide(state);
  }

  std::vector<std::string> violations;
  std::size_t decisions = 0;

 private:
  std::unique_ptr<SchedulingPolicy> inner_;
};

ThroughputTable gavel() {
  auto table =
      ThroughputTable::load_gavel(ALLOX_SOURCE_DIR "/data/gavel/simulation_throughputs.json");
  EXPECT_TRUE(table.ok()) << table.message();
  return *table;
}

Trace multi_device_trace(std::size_t jobs, double rate, std::uint64_t seed) {
  SyntheticOptions o;
  o.jobs = jobs;
  o.users = 4;
  o.arrival_rate = rate;
  o.median_duration = 600;
  o.multi_device = true;
  o.seed = seed;
  auto trace = generate_synthetic_trace(gavel(), o);
  EXPECT_TRUE(trace.ok()) << trace.message();
  return *trace;
}

TEST(MultiUnitSim, EveryPolicyRunsEveryJobWithoutOverCommittingANode) {
  const Trace trace = multi_device_trace(120, 0.02, 3);
  // Three types; nodes of 8, 4 and 2 units, and a one-unit machine.
  const Cluster cluster = [] {
    Cluster c = make_uniform_cluster({{"v100", 1}, {"p100", 2}, {"k80", 2}},
                                     {{"v100", 8}, {"p100", 4}, {"k80", 8}});
    c.machines.push_back({"k80-solo", "k80", 0});
    return c;
  }();
  for (const std::string name :
       {"allox", "fifo", "sjf", "las", "maxmin", "drf", "srpt", "es", "drf-ext", "drffifo"}) {
    PolicyOptions options;
    auto inner = make_policy(name, options);
    ASSERT_TRUE(inner.ok()) << inner.message();
    CheckingPolicy policy(std::move(*inner));
    SimOptions sim;
    if (name == "las") sim.round_period = 60;
    auto result = simulate(trace, cluster, policy, sim);
    ASSERT_TRUE(result.ok()) << name << ": " << result.message();
    EXPECT_TRUE(policy.violations.empty()) << name << ": " << policy.violations.front();
    EXPECT_GT(policy.decisions, 0u);
    for (const SimJobRecord& r : result->jobs) {
      ASSERT_TRUE(r.finish) << name << ": job " << r.job << " never finished";
    }
    // Devices in use never exceed the cluster's.
    for (const ShareSample& s : result->shares) {
      int busy = 0;
      for (int n : s.machines) busy += n;
      EXPECT_LE(busy, static_cast<int>(cluster.machines.size())) << name << " at " << s.time;
    }
    if (name == "allox") {
      ASSERT_TRUE(result->plan_quality) << "allox reports its multi-unit plans' bound";
      EXPECT_GT(result->plan_quality->solves, 0u);
      EXPECT_GE(result->plan_quality->cost, result->plan_quality->bound);
    }
  }
}

TEST(MultiUnitSim, NonPreemptiveRunsNeverExceedANodesUnits) {
  const Trace trace = multi_device_trace(80, 0.05, 11);
  const Cluster cluster = make_uniform_cluster({{"v100", 2}, {"p100", 2}, {"k80", 1}},
                                               {{"v100", 8}, {"p100", 4}, {"k80", 8}});
  const std::vector<std::size_t> node_of = node_ids(cluster.machines);
  std::map<std::string, std::size_t> node_of_name;
  std::map<std::size_t, int> capacity;
  for (std::size_t m = 0; m < cluster.machines.size(); ++m) {
    node_of_name[cluster.machines[m].name] = node_of[m];
    ++capacity[node_of[m]];
  }
  for (const std::string name : {"allox", "fifo", "sjf", "maxmin", "drf"}) {
    auto policy = make_policy(name, {});
    ASSERT_TRUE(policy.ok());
    auto result = simulate(trace, cluster, **policy);
    ASSERT_TRUE(result.ok()) << result.message();
    // Sweep each node's runs: the units held at every start stay within the node's.
    std::map<std::size_t, std::vector<std::pair<double, int>>> events;
    for (std::size_t j = 0; j < result->jobs.size(); ++j) {
      const SimJobRecord& r = result->jobs[j];
      ASSERT_TRUE(r.start && r.finish);
      EXPECT_EQ(r.units, trace.jobs[j].job.units);
      const std::size_t node = node_of_name.at(r.machine);
      events[node].push_back({*r.start, r.units});
      events[node].push_back({*r.finish, -r.units});
    }
    for (auto& [node, list] : events) {
      std::sort(list.begin(), list.end());  // a finish (-) before a start (+) at equal times
      int held = 0;
      for (const auto& [time, delta] : list) {
        held += delta;
        EXPECT_LE(held, capacity[node]) << name << ": node " << node << " at " << time;
      }
    }
  }
}

TEST(MultiUnitSim, ASharesCountsDevicesNotJobs) {
  Trace trace = make_trace({trace_job("wide", "alice", 0, {{"gpu", 100}}),
                            trace_job("narrow", "bob", 0, {{"gpu", 100}})});
  trace.jobs[0].job.units = 4;
  const Cluster cluster = make_uniform_cluster({{"gpu", 2}}, {{"gpu", 4}});
  auto policy = make_policy("fifo", {});
  ASSERT_TRUE(policy.ok());
  auto result = simulate(trace, cluster, **policy);
  ASSERT_TRUE(result.ok()) << result.message();
  ASSERT_FALSE(result->shares.empty());
  EXPECT_EQ((std::vector<int>{4, 1}), result->shares.front().machines);
  EXPECT_EQ(4, result->jobs[0].units);
}

TEST(MultiUnitSim, AJobNoNodeCanHoldIsRefusedNamingItsUnits) {
  Trace trace = make_trace({trace_job("huge", "alice", 0, {{"gpu", 100}, {"cpu", 400}})});
  trace.jobs[0].job.units = 8;
  const Cluster cluster = make_uniform_cluster({{"gpu", 2}, {"cpu", 1}}, {{"gpu", 4}});
  auto policy = make_policy("allox", {});
  ASSERT_TRUE(policy.ok());
  auto result = simulate(trace, cluster, **policy);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(
      "simulate: job huge has units 8, but no node of a device type it can use has that "
      "many (largest: 4)",
      result.message());
  trace.jobs[0].job.units = 0;
  EXPECT_FALSE(simulate(trace, cluster, **policy).ok());
}

TEST(MultiUnitSim, SyntheticMultiDeviceTracesDrawGavelsScaleFactors) {
  const Trace a = multi_device_trace(2000, 0.01, 5);
  const Trace b = multi_device_trace(2000, 0.01, 5);
  std::map<int, int> by_units;
  for (std::size_t j = 0; j < a.jobs.size(); ++j) {
    ++by_units[a.jobs[j].job.units];
    EXPECT_EQ(a.jobs[j].job.units, b.jobs[j].job.units);
    EXPECT_EQ(a.jobs[j].true_time, b.jobs[j].true_time);
    EXPECT_GE(a.jobs[j].job.time.size(), 2u) << "v100 and p100 for every model and scale";
  }
  EXPECT_EQ((std::set<int>{1, 2, 4, 8}), [&] {
    std::set<int> s;
    for (const auto& [k, n] : by_units) s.insert(k);
    return s;
  }());
  // 0.7 / 0.1 / 0.15 / 0.05 of 2,000, within a few standard deviations.
  EXPECT_NEAR(by_units[1], 1400, 80);
  EXPECT_NEAR(by_units[2], 200, 60);
  EXPECT_NEAR(by_units[4], 300, 60);
  EXPECT_NEAR(by_units[8], 100, 40);
  // Off, every job needs one device.
  SyntheticOptions o;
  o.jobs = 300;
  auto single = generate_synthetic_trace(gavel(), o);
  ASSERT_TRUE(single.ok());
  for (const TraceJob& tj : single->jobs) EXPECT_EQ(1, tj.job.units);
}

TEST(MultiUnitSim, PlannerAddsNodesShapedLikeTheClusters) {
  Workload w;
  Job a{"a", "alice", 0, {{"v100", 100}}, std::nullopt, "", 4};
  Job b{"b", "bob", 0, {{"v100", 100}}, std::nullopt, "", 4};
  w.jobs = {a, b};
  const Cluster cluster = make_uniform_cluster({{"v100", 1}}, {{"v100", 4}});
  auto add = parse_alternative("v100=8");
  ASSERT_TRUE(add.ok()) << add.message();
  auto shaped = parse_alternative("v100=1x4");
  ASSERT_TRUE(shaped.ok()) << shaped.message();
  auto scenarios = plan(w, cluster, {*add, *shaped});
  ASSERT_TRUE(scenarios.ok()) << scenarios.message();
  ASSERT_EQ(scenarios->size(), 3u);
  EXPECT_EQ((*scenarios)[0].summary.makespan, 200);  // one 4-unit node: one job after the other
  EXPECT_EQ((*scenarios)[1].cluster.machines.size(), 12u);
  EXPECT_EQ((*scenarios)[1].cluster.machines.back().name, "v100-added-1/3");
  EXPECT_EQ((*scenarios)[1].summary.makespan, 100);
  EXPECT_EQ((*scenarios)[2].summary.makespan, 100);

  auto uneven = parse_alternative("v100=6");
  ASSERT_TRUE(uneven.ok());
  auto refused = plan(w, cluster, {*uneven});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(
      "--add v100=6: the cluster's v100 nodes have 4 units; add a multiple of 4 or give the "
      "node shape (v100=NxU)",
      refused.message());
  for (const char* bad : {"v100=0x4", "v100=2x0", "v100=2x65", "v100=2x", "v100=x4",
                          "v100=99999999999", "=4", "v100=1x4,v100=4"}) {
    EXPECT_FALSE(parse_alternative(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace allox
