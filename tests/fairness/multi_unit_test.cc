// Multi-unit jobs in the fairness layer: shares count devices, IdleMachines fits jobs to nodes,
// and every policy's decision fits the nodes it names.
#include <gtest/gtest.h>

#include <deque>

#include "fairness/cluster_view.h"
#include "fairness/policy.h"
#include "fairness/share.h"
#include "fairness/usage_window.h"

namespace allox {
namespace {

// Two gpu nodes of 4 units ("a/0".."a/3", "b/0".."b/3"); unit a/0 runs a one-unit job.
struct Snapshot {
  std::deque<Job> jobs;
  ClusterState state;

  Snapshot() {
    for (std::string node : {"a", "b"}) {
      for (int u = 0; u < 4; ++u) {
        state.machines.push_back({node + "/" + std::to_string(u), "gpu", 0, node});
      }
    }
    state.idle.assign(8, true);
    const Job& busy = add("busy", "carol", 1, {{"gpu", 50}});
    state.running.push_back({&busy, 0, 0, 50, 0});
    state.idle[0] = false;
    state.machines[0].busy_until = 50;
  }

  const Job& add(const std::string& id, const std::string& user, int units,
                 std::map<DeviceType, double> time) {
    Job job;
    job.id = id;
    job.user = user;
    job.units = units;
    job.time = std::move(time);
    return jobs.emplace_back(std::move(job));
  }

  void queue(const std::string& id, const std::string& user, int units, double seconds) {
    state.queue.push_back({&add(id, user, units, {{"gpu", seconds}}), 0, 0, {}});
  }
};

TEST(MultiUnitFairness, AFourDeviceJobHoldsFourDevicesOfShare) {
  Snapshot s;
  const Job& wide = s.add("wide", "alice", 4, {{"gpu", 10}});
  s.state.running.push_back({&wide, 4, 0, 10, 0, {5, 6, 7}});
  for (std::size_t m = 4; m < 8; ++m) s.state.idle[m] = false;
  const auto shares = current_shares(s.state);
  EXPECT_DOUBLE_EQ(4.0 / 8, shares.at("alice"));
  EXPECT_DOUBLE_EQ(1.0 / 8, shares.at("carol"));
  // Windowed usage and the isolated time count devices the same way.
  UsageWindow window(100, {{"gpu", 8}});
  window.add_run("wide", "alice", "gpu", 0, 100, 4);
  window.add_run("one", "bob", "gpu", 0, 100, 1);
  EXPECT_DOUBLE_EQ(0.5, window.windowed_shares(100).at("alice"));
  EXPECT_DOUBLE_EQ(0.125, window.windowed_shares(100).at("bob"));
  // Alone on half of 8 devices a 4-device job runs at full speed; on a quarter, at half.
  EXPECT_DOUBLE_EQ(10, isolated_seconds(10, 0.5, 8, 4));
  EXPECT_DOUBLE_EQ(20, isolated_seconds(10, 0.25, 8, 4));
}

TEST(MultiUnitFairness, IdleMachinesFitsJobsToNodesBestFit) {
  Snapshot s;
  IdleMachines idle(s.state);
  EXPECT_EQ(7u, idle.count("gpu"));
  EXPECT_TRUE(idle.fits("gpu", 4));
  EXPECT_FALSE(idle.fits("gpu", 5));
  EXPECT_FALSE(idle.fits("gpu", 0));
  // Two units: node a has 3 idle, b 4: the fuller node a, its lowest idle units.
  EXPECT_EQ(std::optional<std::size_t>(1), idle.take("gpu", 2));
  EXPECT_EQ(std::optional<std::size_t>(4), idle.take("gpu", 4));
  EXPECT_FALSE(idle.fits("gpu", 2));
  EXPECT_EQ(std::optional<std::size_t>(3), idle.take("gpu", 1));
  EXPECT_FALSE(idle.any());
  EXPECT_EQ(std::nullopt, idle.take("gpu", 1));
}

TEST(MultiUnitFairness, GangUnitsAreTheNodesLowestIdleUnits) {
  Snapshot s;
  const std::vector<std::size_t> node_of = node_ids(s.state.machines);
  EXPECT_EQ((std::vector<std::size_t>{1, 2}),
            gang_units(s.state.machines, s.state.idle, node_of, 0, 2).value());
  EXPECT_EQ(std::nullopt, gang_units(s.state.machines, s.state.idle, node_of, 0, 4));
  EXPECT_EQ((std::vector<std::size_t>{4, 5, 6, 7}),
            gang_units(s.state.machines, s.state.idle, node_of, 7, 4).value());
}

// first_machines() gives each node's lowest machine, and a scan started there takes the same
// units as one from machine 0, on nodes whose units are not adjacent too.
TEST(MultiUnitFairness, GangUnitsFromTheNodesFirstMachineAreTheSame) {
  std::vector<Machine> machines;
  for (int u = 0; u < 3; ++u) {
    for (std::string node : {"a", "b", "c"}) {  // a/0, b/0, c/0, a/1, ...: interleaved
      machines.push_back({node + "/" + std::to_string(u), "gpu", 0, node});
    }
  }
  const std::vector<std::size_t> node_of = node_ids(machines);
  const std::vector<std::size_t> first = first_machines(node_of);
  EXPECT_EQ((std::vector<std::size_t>{0, 1, 2}), first);
  std::vector<bool> idle(machines.size(), true);
  idle[1] = false;  // b/0 busy
  for (std::size_t m = 0; m < machines.size(); ++m) {
    for (int units = 1; units <= 4; ++units) {
      EXPECT_EQ(gang_units(machines, idle, node_of, m, units),
                gang_units(machines, idle, node_of, m, units, first[node_of[m]]))
          << machines[m].name << " x" << units;
    }
  }
  EXPECT_EQ((std::vector<std::size_t>{4, 7}),
            gang_units(machines, idle, node_of, 7, 2, first[node_of[7]]).value());
}

// allox's decision carries the shares it started from: current_shares() of its snapshot.
TEST(MultiUnitFairness, AlloxDecisionCarriesTheSharesItStartedFrom) {
  Snapshot s;
  s.queue("two", "alice", 2, 10);
  s.queue("one", "bob", 1, 20);
  auto policy = make_policy("allox", PolicyOptions{});
  ASSERT_TRUE(policy.ok()) << policy.message();
  Expected<Decision> d = (*policy)->decide(s.state);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_FALSE(d->start.empty());
  EXPECT_EQ(current_shares(s.state), d->shares);
  ClusterState empty = s.state;
  empty.queue.clear();
  d = (*policy)->decide(empty);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(current_shares(empty), d->shares);
}

// Applies a decision's starts as the simulator does; fails if one does not fit its node.
void expect_fits(const ClusterState& state, const Decision& d, const std::string& policy) {
  std::vector<bool> idle = state.idle;
  const std::vector<std::size_t> node_of = node_ids(state.machines);
  for (const std::string& id : d.preempt) {
    for (const RunningJob& r : state.running) {
      if (r.job->id != id) continue;
      idle[r.machine] = true;
      for (std::size_t m : r.other_machines) idle[m] = true;
    }
  }
  for (const Placement& p : d.start) {
    int units = 1;
    for (const QueuedJob& q : state.queue) {
      if (q.job->id == p.job_id) units = q.job->units;
    }
    auto taken = gang_units(state.machines, idle, node_of, p.machine, units);
    ASSERT_TRUE(taken) << policy << ": " << p.job_id << " does not fit on the node of "
                       << state.machines[p.machine].name;
    for (std::size_t m : *taken) idle[m] = false;
  }
}

TEST(MultiUnitFairness, EveryPolicysDecisionFitsTheNodesItNames) {
  for (const std::string& name : policy_names()) {
    Snapshot s;
    s.queue("wide", "alice", 4, 30);
    s.queue("pair", "bob", 2, 20);
    s.queue("one", "bob", 1, 10);
    s.queue("other", "dave", 1, 40);
    auto policy = make_policy(name, {});
    ASSERT_TRUE(policy.ok()) << policy.message();
    auto decision = (*policy)->decide(s.state);
    ASSERT_TRUE(decision.ok()) << name << ": " << decision.message();
    expect_fits(s.state, *decision, name);
    // sjf: one (10 s) to the fuller node a, best fit; pair (20 s) to a's last two units; wide
    // (30 s) to node b, the only node left with four idle units; other waits.
    if (name == "sjf") {
      bool wide = false;
      for (const Placement& p : decision->start) {
        if (p.job_id == "wide") {
          wide = true;
          EXPECT_EQ("b", s.state.machines[p.machine].node) << name;
        }
      }
      EXPECT_TRUE(wide) << name;
      EXPECT_EQ(3u, decision->start.size());
    }
  }
}

}  // namespace
}  // namespace allox
