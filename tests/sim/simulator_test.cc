#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "sim/allox_trace.h"
#include "tests/sim/sim_test_util.h"
#include "tests/sim/test_policies.h"

namespace allox {
namespace {

using testing::GreedyFastestIdle;
using testing::make_cluster;
using testing::make_trace;
using testing::OneAtATime;
using testing::Scripted;
using testing::TinySrpt;
using testing::trace_job;

struct Expect {
  std::string job;
  double start, finish;
  std::string machine;
};

void expect_schedule(const SimResult& r, const std::vector<Expect>& want) {
  ASSERT_EQ(r.jobs.size(), want.size());
  for (const Expect& w : want) {
    auto it = std::find_if(r.jobs.begin(), r.jobs.end(),
                           [&](const JobRecord& j) { return j.job == w.job; });
    ASSERT_NE(it, r.jobs.end()) << w.job;
    ASSERT_TRUE(it->start && it->finish) << w.job;
    EXPECT_DOUBLE_EQ(*it->start, w.start) << w.job;
    EXPECT_DOUBLE_EQ(*it->finish, w.finish) << w.job;
    EXPECT_EQ(it->machine, w.machine) << w.job;
  }
}

// One GPU and one CPU node. At t=0 a takes the GPU (4 < 10), b the CPU (only idle machine);
// c arrives at t=1 to a full cluster and takes the GPU when a finishes at 4.
Trace three_jobs() {
  return make_trace({trace_job("a", "u1", 0, {{"cpu", 10}, {"gpu", 4}}),
                     trace_job("b", "u2", 0, {{"cpu", 6}, {"gpu", 3}}),
                     trace_job("c", "u1", 1, {{"cpu", 5}, {"gpu", 2}})});
}

TEST(Simulator, HandWorkedGreedySchedule) {
  GreedyFastestIdle policy;
  auto r = simulate(three_jobs(), make_cluster(1, 1), policy);
  ASSERT_TRUE(r.ok()) << r.message();
  expect_schedule(*r, {{"a", 0, 4, "gpu-0"}, {"b", 0, 6, "cpu-0"}, {"c", 4, 6, "gpu-0"}});
}

TEST(Simulator, OneStartPerCallIsAskedAgainUntilStable) {
  OneAtATime policy;
  auto r = simulate(three_jobs(), make_cluster(1, 1), policy);
  ASSERT_TRUE(r.ok()) << r.message();
  expect_schedule(*r, {{"a", 0, 4, "gpu-0"}, {"b", 0, 6, "cpu-0"}, {"c", 4, 6, "gpu-0"}});
}

// The policy believes a is faster on the CPU (estimate 1 s); it really takes 10 s there.
TEST(Simulator, DecisionsUseEstimatesCompletionsUseTrueTimes) {
  Trace t =
      make_trace({trace_job("a", "u", 0, {{"cpu", 10}, {"gpu", 4}}, {{"cpu", 1}, {"gpu", 4}})});
  GreedyFastestIdle policy;
  auto r = simulate(t, make_cluster(1, 1), policy);
  ASSERT_TRUE(r.ok()) << r.message();
  expect_schedule(*r, {{"a", 0, 10, "cpu-0"}});
  EXPECT_DOUBLE_EQ(r->jobs[0].estimated_time, 1);
  EXPECT_DOUBLE_EQ(r->jobs[0].true_time, 10);
}

TEST(Simulator, InitiallyBusyMachineWaits) {
  Cluster c = make_cluster(0, 1);
  c.machines[0].busy_until = 5;
  GreedyFastestIdle policy;
  auto r = simulate(make_trace({trace_job("a", "u", 1, {{"gpu", 2}})}), c, policy);
  ASSERT_TRUE(r.ok()) << r.message();
  expect_schedule(*r, {{"a", 5, 7, "gpu-0"}});
}

// Profiling runs: cpu 1% (1 s) and 2% (2 s) of 100 s; gpu 1% and 2% of 50 s, each raised to
// the 1 s minimum. t=0: cpu run 1 (to 1), gpu run 1 (to 1); t=1: cpu run 2 (to 3), gpu run 2
// (to 2). The job is schedulable at 3 and runs on the GPU until 53.
TEST(Simulator, ProfilingDelaysSchedulableTime) {
  SimOptions options;
  options.profiling.enabled = true;
  GreedyFastestIdle policy;
  auto r = simulate(make_trace({trace_job("a", "u", 0, {{"cpu", 100}, {"gpu", 50}})}),
                    make_cluster(1, 1), policy, options);
  ASSERT_TRUE(r.ok()) << r.message();
  expect_schedule(*r, {{"a", 3, 53, "gpu-0"}});
  EXPECT_DOUBLE_EQ(r->jobs[0].schedulable, 3);
  EXPECT_EQ(r->profiling_runs, 4u);
}

// Jobs arriving together wait for each other's profiling: b's runs (1 s each) end at 2 on the
// single GPU, a's at 2 too, round-robin between users u1 and u2.
TEST(Simulator, ProfilingBatchesJobsArrivingTogether) {
  SimOptions options;
  options.profiling.enabled = true;
  options.profiling.fractions = {0.01};
  GreedyFastestIdle policy;
  Trace t =
      make_trace({trace_job("a", "u1", 0, {{"gpu", 50}}), trace_job("b", "u2", 0, {{"gpu", 300}})});
  auto r = simulate(t, make_cluster(0, 1), policy, options);
  ASSERT_TRUE(r.ok()) << r.message();
  // Runs: a (1 s, to 1), then b (3 s, to 4); both schedulable at 4.
  expect_schedule(*r, {{"a", 4, 54, "gpu-0"}, {"b", 54, 354, "gpu-0"}});
}

// a (10 s) starts at 0; b (3 s) arrives at 2 and preempts it; a resumes at 5 with 8 s left.
TEST(Simulator, PreemptionKeepsProgress) {
  TinySrpt policy;
  Trace t =
      make_trace({trace_job("a", "u", 0, {{"gpu", 10}}), trace_job("b", "u", 2, {{"gpu", 3}})});
  auto r = simulate(t, make_cluster(0, 1), policy);
  ASSERT_TRUE(r.ok()) << r.message();
  expect_schedule(*r, {{"a", 0, 13, "gpu-0"}, {"b", 2, 5, "gpu-0"}});
  EXPECT_EQ(r->jobs[0].preemptions, 1);
  EXPECT_EQ(r->jobs[1].preemptions, 0);
}

TEST(Simulator, PeriodicRoundsCallThePolicy) {
  SimOptions options;
  options.round_period = 10;
  GreedyFastestIdle policy;
  Trace t =
      make_trace({trace_job("a", "u", 0, {{"gpu", 100}}), trace_job("b", "u", 0, {{"gpu", 100}})});
  auto r = simulate(t, make_cluster(0, 1), policy, options);
  ASSERT_TRUE(r.ok()) << r.message();
  // Every round with a queued job and no idle machine skips the policy; the run still ends.
  expect_schedule(*r, {{"a", 0, 100, "gpu-0"}, {"b", 100, 200, "gpu-0"}});
}

TEST(Simulator, JobThatCannotRunAnywhereStaysUnfinished) {
  GreedyFastestIdle policy;
  Trace t =
      make_trace({trace_job("a", "u", 0, {{"tpu", 5}}), trace_job("b", "u", 0, {{"gpu", 5}})});
  auto r = simulate(t, make_cluster(0, 1), policy);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_FALSE(r->jobs[0].start);
  EXPECT_TRUE(r->jobs[1].finish);
}

struct ViolationCase {
  const char* name;
  Decision decision;
  bool preemptive;
  const char* message_part;
};

TEST(Simulator, PolicyContractViolationsAreErrors) {
  const ViolationCase cases[] = {
      {"unknown job", Decision{{{"zz", 0}}, {}, {}}, false, "unknown job zz"},
      {"bad machine", Decision{{{"a", 7}}, {}, {}}, false, "machine index 7"},
      {"twice", Decision{{{"a", 0}, {"a", 1}}, {}, {}}, false, "not queued"},
      {"busy", Decision{{{"a", 0}, {"b", 0}}, {}, {}}, false, "busy machine gpu-0"},
      {"device", Decision{{{"d", 0}}, {}, {}}, false, "cannot run on gpu"},
      {"preempt", Decision{{}, {"a"}, {}}, false, "non-preemptive"},
      {"preempt idle", Decision{{}, {"a"}, {}}, true, "not running"},
  };
  Trace t =
      make_trace({trace_job("a", "u", 0, {{"gpu", 1}, {"cpu", 1}}),
                  trace_job("b", "u", 0, {{"gpu", 1}}), trace_job("d", "u", 0, {{"cpu", 1}})});
  for (const ViolationCase& c : cases) {
    Scripted policy(c.decision, c.preemptive);
    auto r = simulate(t, make_cluster(1, 1), policy);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_NE(r.message().find(c.message_part), std::string::npos) << c.name << ": " << r.message();
  }
}

Trace google_slice(std::size_t jobs) {
  auto t = load_allox_trace(ALLOX_SOURCE_DIR "/data/allox-google/jobs_input_10_Google.txt");
  EXPECT_TRUE(t.ok()) << t.message();
  Trace slice = *t;
  slice.jobs.resize(std::min(jobs, slice.jobs.size()));
  return slice;
}

// Every job finishes exactly once, after it arrives, for exactly its true time on its device,
// and no machine holds two jobs at once.
void expect_conservation(const Trace& trace, const SimResult& r) {
  ASSERT_EQ(r.jobs.size(), trace.jobs.size());
  std::map<std::string, std::vector<std::pair<double, double>>> busy;
  for (std::size_t i = 0; i < r.jobs.size(); ++i) {
    const JobRecord& j = r.jobs[i];
    ASSERT_EQ(j.job, trace.jobs[i].job.id);
    ASSERT_TRUE(j.start && j.finish) << j.job;
    EXPECT_GE(*j.start, j.arrival) << j.job;
    EXPECT_DOUBLE_EQ(j.true_time, trace.jobs[i].true_time.at(j.device)) << j.job;
    EXPECT_NEAR(*j.finish - *j.start, j.true_time, 1e-6) << j.job;
    busy[j.machine].push_back({*j.start, *j.finish});
  }
  for (auto& [machine, spans] : busy) {
    std::sort(spans.begin(), spans.end());
    for (std::size_t k = 1; k < spans.size(); ++k) {
      EXPECT_LE(spans[k - 1].second, spans[k].first + 1e-9) << machine;
    }
  }
}

TEST(Simulator, ConservationOnGoogleSlice) {
  Trace t = google_slice(600);
  for (bool profiling : {false, true}) {
    SimOptions options;
    options.profiling.enabled = profiling;
    GreedyFastestIdle policy;
    auto r = simulate(t, make_cluster(3, 3), policy, options);
    ASSERT_TRUE(r.ok()) << r.message();
    expect_conservation(t, *r);
  }
}

TEST(Simulator, DeterministicForSameInput) {
  Trace t = google_slice(400);
  SimOptions options;
  options.profiling.enabled = true;
  GreedyFastestIdle p1, p2;
  auto a = simulate(t, make_cluster(2, 2), p1, options);
  auto b = simulate(t, make_cluster(2, 2), p2, options);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->jobs.size(), b->jobs.size());
  for (std::size_t i = 0; i < a->jobs.size(); ++i) {
    EXPECT_EQ(a->jobs[i].start, b->jobs[i].start) << a->jobs[i].job;
    EXPECT_EQ(a->jobs[i].finish, b->jobs[i].finish) << a->jobs[i].job;
    EXPECT_EQ(a->jobs[i].machine, b->jobs[i].machine) << a->jobs[i].job;
  }
  EXPECT_EQ(a->decide_calls, b->decide_calls);
}

TEST(Simulator, SharesCountBusyMachinesPerUser) {
  GreedyFastestIdle policy;
  auto r = simulate(three_jobs(), make_cluster(1, 1), policy);
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r->users, (std::vector<std::string>{"u1", "u2"}));
  // t=0: u1 on gpu, u2 on cpu; t=4: c (u1) replaces a; t=6: nothing runs.
  ASSERT_EQ(r->shares.size(), 2u);
  EXPECT_EQ(r->shares[0].time, 0);
  EXPECT_EQ(r->shares[0].machines, (std::vector<int>{1, 1}));
  EXPECT_EQ(r->shares[1].time, 6);
  EXPECT_EQ(r->shares[1].machines, (std::vector<int>{0, 0}));
}

TEST(Simulator, RejectsBadInput) {
  GreedyFastestIdle policy;
  EXPECT_FALSE(simulate(three_jobs(), Cluster{}, policy).ok());
  Trace dup = three_jobs();
  dup.jobs[1].job.id = "a";
  EXPECT_FALSE(simulate(dup, make_cluster(1, 1), policy).ok());
}

}  // namespace
}  // namespace allox
