#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "fairness/policy.h"
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
                           [&](const SimJobRecord& j) { return j.job == w.job; });
    ASSERT_NE(it, r.jobs.end()) << w.job;
    ASSERT_TRUE(it->start && it->finish) << w.job;
    EXPECT_NEAR(*it->start, w.start, 1e-9) << w.job;
    EXPECT_NEAR(*it->finish, w.finish, 1e-9) << w.job;
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

// 100 iterations (the default) and a 1 s start-up: on the CPU node (100 s) an iteration takes
// 0.99 s, on the GPU (50 s) 0.49 s. Profiling runs of 1 and 2 iterations: cpu 1.99 and 2.98 s,
// gpu 1.49 and 1.98 s. t=0: cpu run 1 (to 1.99), gpu run 1 (to 1.49); gpu run 2 to 3.47, cpu
// run 2 to 4.97. The job is schedulable at 4.97 and runs on the GPU until 54.97.
TEST(Simulator, ProfilingDelaysSchedulableTime) {
  SimOptions options;
  options.profiling.enabled = true;
  GreedyFastestIdle policy;
  auto r = simulate(make_trace({trace_job("a", "u", 0, {{"cpu", 100}, {"gpu", 50}})}),
                    make_cluster(1, 1), policy, options);
  ASSERT_TRUE(r.ok()) << r.message();
  expect_schedule(*r, {{"a", 4.97, 54.97, "gpu-0"}});
  EXPECT_NEAR(r->jobs[0].schedulable, 4.97, 1e-9);
  EXPECT_EQ(r->profiling_runs, 4u);
}

// The same runs, measured with the trace's errors (cpu +100%, gpu -50%): samples (1, 3.98) and
// (2, 5.96) on the CPU node fit a = 2, b = 1.98, so T(100) = 200; on the GPU (1, 0.745) and
// (2, 0.99) fit a = 0.5, b = 0.245, so T(100) = 25. The policy sees those fits, the job runs
// its true 50 s.
TEST(Simulator, ProfilerFitsTheProfilingRuns) {
  SimOptions options;
  options.profiling.enabled = true;
  GreedyFastestIdle policy;
  Trace t = make_trace(
      {trace_job("a", "u", 0, {{"cpu", 100}, {"gpu", 50}}, {{"cpu", 200}, {"gpu", 25}})});
  auto r = simulate(t, make_cluster(1, 1), policy, options);
  ASSERT_TRUE(r.ok()) << r.message();
  expect_schedule(*r, {{"a", 4.97, 54.97, "gpu-0"}});
  EXPECT_NEAR(r->jobs[0].estimated_time, 25, 1e-9);
  EXPECT_DOUBLE_EQ(r->jobs[0].true_time, 50);
}

TEST(Simulator, PolicyThatReadsNoEstimatesGetsNoProfiling) {
  SimOptions options;
  options.profiling.enabled = true;
  auto drffifo = make_policy("drffifo", PolicyOptions{});
  ASSERT_TRUE(drffifo.ok());
  auto r = simulate(make_trace({trace_job("a", "u", 0, {{"cpu", 100}, {"gpu", 50}})}),
                    make_cluster(1, 1), **drffifo, options);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->profiling_runs, 0u);
  expect_schedule(*r, {{"a", 0, 50, "gpu-0"}});
}

// L runs on the GPU from 0; q {gpu 5, cpu 600} arrives at 50. allox at alpha = 1 sends q to the
// CPU node only if the GPU looks busy for more than another 595 s, so q's placement shows what
// the policy believes about L's remaining time. No decision may use L's true remaining time.
struct WrongEstimateCase {
  const char* name;
  EstimateMode mode;
  double l_true, l_estimate;
  Expect q;
};

TEST(Simulator, DecisionsFollowEstimatesAndProgressReportsNeverTrueRemainingTime) {
  const WrongEstimateCase cases[] = {
      // The trace's estimate alone: L (truly 100 s) is believed to need 1000 - 50 = 950 s more,
      // so q takes the CPU node at 50. (Scaling the estimate by L's true progress would say
      // 500 s and keep q waiting for the GPU.)
      {"trace, estimate 10x long", EstimateMode::kTrace, 100, 1000, {"q", 50, 650, "cpu-0"}},
      // Believed finished (10 - 50 < 0 s left) although it truly runs to 1000: q waits for the
      // GPU, as the estimate says, until L really ends.
      {"trace, estimate 100x short", EstimateMode::kTrace, 1000, 10, {"q", 1000, 1005, "gpu-0"}},
      // Progress reports: by 50 L reported 49 of 100 iterations at 49.51 s, about 1.01 s per
      // iteration, so about 51 s left: q waits for the GPU, which frees at L's true end, 100.
      {"profiler, estimate 10x long", EstimateMode::kProfiler, 100, 1000, {"q", 100, 105, "gpu-0"}},
      // 4 iterations at 40.96 s: about 10.2 s per iteration, 974 s left: q takes the CPU node.
      {"profiler, estimate 100x short", EstimateMode::kProfiler, 1000, 10, {"q", 50, 650, "cpu-0"}},
  };
  for (const WrongEstimateCase& c : cases) {
    SCOPED_TRACE(c.name);
    PolicyOptions alpha_one;
    alpha_one.alpha = 1;
    auto allox = make_policy("allox", alpha_one);
    ASSERT_TRUE(allox.ok());
    SimOptions options;
    options.estimates = c.mode;
    Trace t = make_trace({trace_job("L", "u1", 0, {{"gpu", c.l_true}}, {{"gpu", c.l_estimate}}),
                          trace_job("q", "u2", 50, {{"gpu", 5}, {"cpu", 600}})});
    auto r = simulate(t, make_cluster(1, 1), **allox, options);
    ASSERT_TRUE(r.ok()) << r.message();
    // Completions use true times whatever the estimates.
    expect_schedule(*r, {{"L", 0, c.l_true, "gpu-0"}, c.q});
  }
}

// Jobs arriving together wait for each other's profiling, round-robin between users u1 and u2.
TEST(Simulator, ProfilingBatchesJobsArrivingTogether) {
  SimOptions options;
  options.profiling.enabled = true;
  options.profiling.fractions = {0.01};
  GreedyFastestIdle policy;
  Trace t =
      make_trace({trace_job("a", "u1", 0, {{"gpu", 50}}), trace_job("b", "u2", 0, {{"gpu", 300}})});
  auto r = simulate(t, make_cluster(0, 1), policy, options);
  ASSERT_TRUE(r.ok()) << r.message();
  // One iteration each after a 1 s start-up: a (1 + 0.49 s, to 1.49), then b (1 + 2.99 s, to
  // 5.48); both schedulable at 5.48.
  expect_schedule(*r, {{"a", 5.48, 55.48, "gpu-0"}, {"b", 55.48, 355.48, "gpu-0"}});
}

// a (10 s: 1 s start-up, 100 iterations of 0.09 s) starts at 0; b (3 s) arrives at 2 and
// preempts it after 11 whole iterations; a resumes at 5 from its checkpoint, paying the start-up
// again: 1 + 89 x 0.09 = 9.01 s.
TEST(Simulator, PreemptionKeepsProgressToTheLastWholeIteration) {
  TinySrpt policy;
  Trace t =
      make_trace({trace_job("a", "u", 0, {{"gpu", 10}}), trace_job("b", "u", 2, {{"gpu", 3}})});
  auto r = simulate(t, make_cluster(0, 1), policy);
  ASSERT_TRUE(r.ok()) << r.message();
  expect_schedule(*r, {{"a", 0, 14.01, "gpu-0"}, {"b", 2, 5, "gpu-0"}});
  EXPECT_EQ(r->jobs[0].preemptions, 1);
  EXPECT_EQ(r->jobs[1].preemptions, 0);
}

// The reference's resume rule on the same instance: a ran 2 s of its 10 s, a fifth of it, and
// resumes at 5 with exactly 8 s left, paying no start-up: it ends at 13.
TEST(Simulator, ExactResumeKeepsFractionalProgressAtNoCost) {
  TinySrpt policy;
  SimOptions options;
  options.resume = ResumeRule::kExact;
  Trace t =
      make_trace({trace_job("a", "u", 0, {{"gpu", 10}}), trace_job("b", "u", 2, {{"gpu", 3}})});
  auto r = simulate(t, make_cluster(0, 1), policy, options);
  ASSERT_TRUE(r.ok()) << r.message();
  expect_schedule(*r, {{"a", 0, 13, "gpu-0"}, {"b", 2, 5, "gpu-0"}});
  EXPECT_EQ(r->jobs[0].preemptions, 1);
}

// The reference's profiling-run length, max(f·T, 1 s), on the job of ProfilingDelaysSchedulable-
// Time: CPU node (100 s) runs of max(1, 1) = 1 s and max(2, 1) = 2 s, GPU (50 s) runs of
// max(0.5, 1) = 1 s and max(1, 1) = 1 s. t=0: cpu run 1 (to 1), gpu run 1 (to 1); t=1: cpu
// run 2 (to 3), gpu run 2 (to 2). Schedulable at 3; the job runs on the GPU until 53.
TEST(Simulator, ReferenceProfilingRunsLastAFractionOfTheJob) {
  SimOptions options;
  options.profiling.enabled = true;
  options.profiling.run_length = ProfilingRunLength::kFractionOfTime;
  GreedyFastestIdle policy;
  auto r = simulate(make_trace({trace_job("a", "u", 0, {{"cpu", 100}, {"gpu", 50}})}),
                    make_cluster(1, 1), policy, options);
  ASSERT_TRUE(r.ok()) << r.message();
  expect_schedule(*r, {{"a", 3, 53, "gpu-0"}});
  EXPECT_NEAR(r->jobs[0].schedulable, 3, 1e-9);
}

// A 5 s start-up (capped at T / 2): on the CPU node s = 5 and an iteration takes 0.95 s, runs
// of 5.95 and 6.9 s; on the GPU s = 5, 0.45 s per iteration, runs of 5.45 and 5.9 s. t=0: cpu
// run 1 (to 5.95), gpu run 1 (to 5.45); gpu run 2 5.45 to 11.35, cpu run 2 5.95 to 12.85. The
// job is schedulable at 12.85 and runs its true 50 s on the GPU.
TEST(Simulator, StartupIsASetting) {
  SimOptions options;
  options.profiling.enabled = true;
  options.profiling.startup = 5;
  GreedyFastestIdle policy;
  auto r = simulate(make_trace({trace_job("a", "u", 0, {{"cpu", 100}, {"gpu", 50}})}),
                    make_cluster(1, 1), policy, options);
  ASSERT_TRUE(r.ok()) << r.message();
  expect_schedule(*r, {{"a", 12.85, 62.85, "gpu-0"}});
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

// With nothing queued or running, rounds until the next arrival could change nothing: a gap of
// 9e12 s (the longest time an input may state) takes a few rounds, not 1.5e11 of them.
TEST(Simulator, PeriodicRoundsSkipAnIdleGap) {
  SimOptions options;
  options.round_period = 60;
  GreedyFastestIdle policy;
  Trace t = make_trace(
      {trace_job("a", "u", 0, {{"gpu", 100}}), trace_job("b", "u", 9e12, {{"gpu", 100}})});
  auto r = simulate(t, make_cluster(0, 1), policy, options);
  ASSERT_TRUE(r.ok()) << r.message();
  expect_schedule(*r, {{"a", 0, 100, "gpu-0"}, {"b", 9e12, 9e12 + 100, "gpu-0"}});
}

// A job running for years under a one-minute period would take rounds without end: past
// kMaxPeriodicRounds the run is an error naming the period.
TEST(Simulator, TooManyPeriodicRoundsIsAnError) {
  SimOptions options;
  options.round_period = 1;
  GreedyFastestIdle policy;
  auto r = simulate(make_trace({trace_job("a", "u", 0, {{"gpu", 1e9}})}), make_cluster(0, 1),
                    policy, options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("over 1000000 periodic rounds of 1 s"), std::string::npos)
      << r.message();
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
    const SimJobRecord& j = r.jobs[i];
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
