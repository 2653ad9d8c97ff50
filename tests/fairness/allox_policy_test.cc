// The allox policy: fairness rounds over the exact matcher, on hand-worked instances, and the
// starvation bound on a small event loop.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <limits>
#include <optional>
#include <random>
#include <tuple>

#include "decide.h"

namespace allox {
namespace {

using testing::decide_once;
using testing::starts;
using testing::StateBuilder;
using Starts = std::vector<std::string>;

PolicyOptions with_alpha(double alpha) {
  PolicyOptions options;
  options.alpha = alpha;
  return options;
}

TEST(AlloxPolicyTest, AlphaOneIsCompletionTimeOptimalEvenIfAMachineStaysIdle) {
  StateBuilder b;
  b.machine("gpu-0", "gpu").machine("cpu-0", "cpu");
  b.queued("a", "u", 0, {{"gpu", 1}, {"cpu", 10}});
  b.queued("b", "u", 0, {{"gpu", 2}, {"cpu", 4}});
  // a then b on the GPU finish at 1 and 3 (sum 4); a on the GPU and b on the CPU node at 1 and 4
  // (sum 5); the other way round 10 + 2. So only a starts; b waits for the GPU (start at 1).
  Decision d = decide_once("allox", b, with_alpha(1));
  EXPECT_EQ((Starts{"a@gpu-0"}), starts(d, b.state()));
  ASSERT_TRUE(d.estimated_start.contains("b"));
  EXPECT_DOUBLE_EQ(1, d.estimated_start.at("b"));
}

// Two GPUs; alice runs on gpu-0 until t = 100 (L = 1/2); bob holds nothing.
StateBuilder alice_and_bob() {
  StateBuilder b;
  b.machine("gpu-0", "gpu").machine("gpu-1", "gpu");
  b.running("r", "alice", "gpu-0", 0, {{"gpu", 100}});
  b.queued("a1", "alice", 0, {{"gpu", 1}});
  b.queued("b1", "bob", 0, {{"gpu", 5}});
  return b;
}

TEST(AlloxPolicyTest, OnlyTheLowestShareUsersEnterTheRound) {
  StateBuilder b = alice_and_bob();
  // ceil(0.5 x 2) = 1 user: bob (L = 0) gets the idle GPU.
  EXPECT_EQ((Starts{"b1@gpu-1"}), starts(decide_once("allox", b, with_alpha(0.5)), b.state()));
  // With everyone in, a1 then b1 on gpu-1 finish at 1 and 6 (sum 7) beats b1 now and a1 after
  // alice's job (5 + 101): a1 starts.
  EXPECT_EQ((Starts{"a1@gpu-1"}), starts(decide_once("allox", b, with_alpha(1)), b.state()));
}

TEST(AlloxPolicyTest, WeightsDivideShares) {
  StateBuilder b;
  b.machine("gpu-0", "gpu").machine("gpu-1", "gpu").machine("gpu-2", "gpu");
  b.user("zoe", 2);
  b.running("rz", "zoe", "gpu-0", 0, {{"gpu", 100}});  // L = (1/3) / 2
  b.running("rb", "bob", "gpu-1", 0, {{"gpu", 100}});  // L = 1/3
  b.queued("z1", "zoe", 0, {{"gpu", 5}});
  b.queued("b1", "bob", 0, {{"gpu", 5}});
  // Unweighted they would tie and bob would win by name.
  EXPECT_EQ((Starts{"z1@gpu-2"}), starts(decide_once("allox", b, with_alpha(0.5)), b.state()));
}

TEST(AlloxPolicyTest, AlphaDoublesWhenARoundPlacesNothing) {
  StateBuilder b;
  b.machine("gpu-0", "gpu").machine("cpu-0", "cpu");
  b.running("r", "alice", "cpu-0", 0, {{"cpu", 20}});  // L_alice = 1
  b.queued("a1", "alice", 0, {{"gpu", 3}});
  b.queued("b1", "bob", 0, {{"cpu", 5}});
  // alpha 0.1, 0.2 and 0.4 admit bob alone (ceil(alpha x 2) = 1); his CPU-only job can only be
  // planned after t = 20, so nothing starts. At 0.8 both users enter and a1 takes the GPU.
  EXPECT_EQ((Starts{"a1@gpu-0"}), starts(decide_once("allox", b, with_alpha(0.1)), b.state()));
}

TEST(AlloxPolicyTest, StarvedJobStartsFirstWhateverItsUsersShare) {
  StateBuilder b(1000);
  b.machine("gpu-0", "gpu").machine("cpu-0", "cpu");
  b.running("r", "zed", "cpu-0", 990, {{"cpu", 100}});
  b.queued("z1", "zed", 10, {{"gpu", 50}});  // waiting 990 s
  b.queued("b1", "bob", 990, {{"gpu", 1}});  // bob has the lower share
  PolicyOptions options = with_alpha(0.1);
  options.starvation_bound = 600;
  EXPECT_EQ((Starts{"z1@gpu-0"}), starts(decide_once("allox", b, options), b.state()));
  options.starvation_bound = 1000;
  EXPECT_EQ((Starts{"b1@gpu-0"}), starts(decide_once("allox", b, options), b.state()));
}

// The guard's placements by definition: starved jobs oldest first (ties by id), each on the idle
// machine that runs it fastest, ties to the lower machine index.
Starts starved_by_definition(const ClusterState& state, double bound) {
  std::vector<const QueuedJob*> starved;
  for (const QueuedJob& q : state.queue) {
    if (state.now - q.queued_since > bound) starved.push_back(&q);
  }
  std::stable_sort(starved.begin(), starved.end(), [](const QueuedJob* a, const QueuedJob* b) {
    return std::tie(a->queued_since, a->job->id) < std::tie(b->queued_since, b->job->id);
  });
  std::vector<bool> idle = state.idle;
  Starts out;
  for (const QueuedJob* q : starved) {
    std::optional<std::size_t> best;
    for (std::size_t m = 0; m < state.machines.size(); ++m) {
      const DeviceType& device = state.machines[m].device;
      if (!idle[m] || !q->job->time.contains(device)) continue;
      if (!best || q->job->time.at(device) < q->job->time.at(state.machines[*best].device)) {
        best = m;
      }
    }
    if (!best) continue;
    idle[*best] = false;
    out.push_back(q->job->id + "@" + state.machines[*best].name);
  }
  return out;
}

TEST(AlloxPolicyTest, StarvedJobsTakeTheFastestIdleMachineOldestFirst) {
  // Random small clusters with ties everywhere (times of 1-3 s, equal waits, device types
  // interleaved by index): the guard's starts open the decision, exactly as defined above.
  std::mt19937 rng(13);
  const std::vector<DeviceType> devices = {"cpu", "gpu", "tpu"};
  for (int instance = 0; instance < 200; ++instance) {
    StateBuilder b(1000);
    const int machines = 1 + static_cast<int>(rng() % 9);
    for (int m = 0; m < machines; ++m) b.machine("m" + std::to_string(m), devices[rng() % 3]);
    for (int m = 0; m < machines; ++m) {
      if (rng() % 3 == 0) {
        b.running("r" + std::to_string(m), "busy", "m" + std::to_string(m), 990,
                  {{b.state().machines[m].device, 100}});
      }
    }
    const int jobs = 1 + static_cast<int>(rng() % 10);
    for (int j = 0; j < jobs; ++j) {
      std::map<DeviceType, double> time;
      for (const DeviceType& device : devices) {
        if (rng() % 4 != 0) time[device] = 1 + static_cast<double>(rng() % 3);
      }
      if (time.empty()) time["gpu"] = 2;
      // Waited 700, 800 or 900 s (starved) or 100 s (not); ids out of order.
      const double since = rng() % 4 == 0 ? 900 : 100 + 100 * static_cast<double>(rng() % 3);
      b.queued("j" + std::to_string(jobs - 1 - j), "u" + std::to_string(j % 3), since, time);
    }
    PolicyOptions options = with_alpha(0.5);
    options.starvation_bound = 600;
    const Starts expected = starved_by_definition(b.state(), options.starvation_bound);
    const Starts got = starts(decide_once("allox", b, options), b.state());
    ASSERT_GE(got.size(), expected.size()) << "instance " << instance;
    EXPECT_EQ(expected,
              Starts(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(expected.size())))
        << "instance " << instance;
  }
}

TEST(AlloxPolicyTest, EstimatedStartsOnRequest) {
  StateBuilder b = alice_and_bob();
  PolicyOptions options = with_alpha(0.5);
  options.estimate_starts = true;
  Decision d = decide_once("allox", b, options);
  // b1 took gpu-1 until 5; a1 waits for it (gpu-0 is busy until 100).
  EXPECT_EQ((Starts{"b1@gpu-1"}), starts(d, b.state()));
  ASSERT_TRUE(d.estimated_start.contains("a1"));
  EXPECT_DOUBLE_EQ(5, d.estimated_start.at("a1"));
}

// A small non-preemptive event loop with exact estimates: returns each job's start time.
struct Arrival {
  std::string id, user;
  double at;
  std::map<DeviceType, double> time;
};

std::map<std::string, double> replay(SchedulingPolicy& policy, const std::vector<Machine>& machines,
                                     const std::vector<Arrival>& arrivals) {
  std::deque<Job> jobs;
  for (const Arrival& a : arrivals) {
    Job j;
    j.id = a.id;
    j.user = a.user;
    j.arrival = a.at;
    j.time = a.time;
    jobs.push_back(j);
  }
  ClusterState state;
  state.machines = machines;
  state.idle.assign(machines.size(), true);
  std::map<std::string, double> started;
  std::size_t next = 0;
  const double inf = std::numeric_limits<double>::infinity();
  while (started.size() < jobs.size()) {
    double t = next < jobs.size() ? jobs[next].arrival : inf;
    for (const RunningJob& r : state.running) t = std::min(t, r.estimated_finish);
    EXPECT_LT(t, inf) << "stuck with queued jobs and nothing running";
    if (t == inf) break;
    state.now = t;
    std::erase_if(state.running, [&](const RunningJob& r) {
      if (r.estimated_finish > t) return false;
      state.idle[r.machine] = true;
      return true;
    });
    for (; next < jobs.size() && jobs[next].arrival <= t; ++next) {
      state.queue.push_back({&jobs[next], jobs[next].arrival, 0, {}});
    }
    for (;;) {
      auto decision = policy.decide(state);
      EXPECT_TRUE(decision.ok()) << decision.message();
      if (!decision.ok() || decision->start.empty()) break;
      for (const Placement& p : decision->start) {
        auto q = std::find_if(state.queue.begin(), state.queue.end(),
                              [&](const QueuedJob& q) { return q.job->id == p.job_id; });
        double finish = t + q->job->time.at(state.machines[p.machine].device);
        state.running.push_back({q->job, p.machine, t, finish, 0});
        state.machines[p.machine].busy_until = finish;
        state.idle[p.machine] = false;
        started[p.job_id] = t;
        state.queue.erase(q);
      }
    }
  }
  return started;
}

// Two GPUs. zed's 1,000 s job holds gpu-1 from t = 0 (L_zed = 1/2 throughout) and zed queues a
// 100 s job at 0; nine other users (L = 0) send a 10 s job every 5 s for 300 s, so some
// lower-share user always has a job waiting when gpu-0 frees.
std::vector<Arrival> long_job_among_short_ones() {
  std::vector<Arrival> arrivals = {{"hold", "zed", 0, {{"gpu", 1000}}},
                                   {"long", "zed", 0, {{"gpu", 100}}}};
  for (int i = 0; i < 60; ++i) {
    arrivals.push_back(
        {"s" + std::to_string(i), "u" + std::to_string(i % 9), 5.0 * i, {{"gpu", 10}}});
  }
  std::stable_sort(arrivals.begin(), arrivals.end(),
                   [](const Arrival& a, const Arrival& b) { return a.at < b.at; });
  return arrivals;
}

TEST(AlloxPolicyTest, StarvationBoundHoldsUnderAnyAlpha) {
  const std::vector<Machine> gpu = {{"gpu-0", "gpu", 0}, {"gpu-1", "gpu", 0}};
  for (double alpha : {0.1, 0.5, 1.0}) {
    PolicyOptions options = with_alpha(alpha);
    options.starvation_bound = 60;
    auto policy = make_policy("allox", options);
    ASSERT_TRUE(policy.ok()) << policy.message();
    auto started = replay(**policy, gpu, long_job_among_short_ones());
    // The GPU frees every 10 s; at t = 60 the long job has waited exactly the bound, at 70 more.
    EXPECT_EQ(70, started.at("long")) << "alpha " << alpha;
  }
  // Without the guard (the default) the long job waits for the whole stream: 60 jobs x 10 s.
  auto policy = make_policy("allox", with_alpha(0.1));
  ASSERT_TRUE(policy.ok());
  EXPECT_EQ(600, replay(**policy, gpu, long_job_among_short_ones()).at("long"));
}

// Two idle GPUs; zoe and bob hold nothing (L = 0). zoe's jobs have waited since 0, bob's since 1,
// so zoe wins the tie (by name bob would). alpha = 0.5 admits one user of two per round.
StateBuilder zoe_and_bob() {
  StateBuilder b(10);
  b.machine("gpu-0", "gpu").machine("gpu-1", "gpu");
  b.queued("z1", "zoe", 0, {{"gpu", 5}});
  b.queued("z2", "zoe", 0, {{"gpu", 6}});
  b.queued("b1", "bob", 1, {{"gpu", 7}});
  return b;
}

TEST(AlloxPolicyTest, OneStartPerRoundThenUsersAreReRanked) {
  StateBuilder b = zoe_and_bob();
  // Round 1: zoe's plan puts z1 and z2 first on the two GPUs; only z1 (the shorter) starts.
  // zoe's L becomes 1/2, so round 2 admits bob, and b1 takes the other GPU.
  EXPECT_EQ((Starts{"z1@gpu-0", "b1@gpu-1"}),
            starts(decide_once("allox", b, with_alpha(0.5)), b.state()));
}

TEST(AlloxPolicyTest, BatchRoundsStartTheWholePlanFront) {
  StateBuilder b = zoe_and_bob();
  PolicyOptions options = with_alpha(0.5);
  options.batch_rounds = true;
  EXPECT_EQ((Starts{"z1@gpu-0", "z2@gpu-1"}), starts(decide_once("allox", b, options), b.state()));
}

TEST(AlloxPolicyTest, UnknownMatcherBackendIsAnError) {
  PolicyOptions options;
  options.matcher_backend = "cplex";
  auto made = make_policy("allox", options);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(std::string::npos, made.message().find("matcher_backend")) << made.message();
}

}  // namespace
}  // namespace allox
