// srpt and las decide both starts and preemptions; the expected decisions are worked by hand.
#include <gtest/gtest.h>

#include "decide.h"

namespace allox {
namespace {

using testing::decide_once;
using testing::starts;
using testing::StateBuilder;
using Strings = std::vector<std::string>;

TEST(SrptPolicyTest, ShorterQueuedJobDisplacesTheLongestRemainingRunningJob) {
  StateBuilder b(10);
  b.machine("gpu-0", "gpu").machine("gpu-1", "gpu");
  b.running("r1", "u", "gpu-0", 0, {{"gpu", 100}});  // 90 s left
  b.running("r2", "u", "gpu-1", 5, {{"gpu", 20}});   // 15 s left
  b.queued("q1", "u", 1, {{"gpu", 30}});
  b.queued("q2", "u", 2, {{"gpu", 10}});
  // Ranking: q2 10, r2 15, q1 30, r1 90. q2 takes the machine of the least urgent occupant
  // (gpu-0, r1); r2 keeps gpu-1; q1 finds nothing free; r1 is preempted.
  Decision d = decide_once("srpt", b);
  EXPECT_EQ((Strings{"q2@gpu-0"}), starts(d, b.state()));
  EXPECT_EQ((Strings{"r1"}), d.preempt);
}

TEST(SrptPolicyTest, IdleMachineIsPreferredOverDisplacingOnEqualTime) {
  StateBuilder b(10);
  b.machine("gpu-0", "gpu").machine("gpu-1", "gpu");
  b.running("r", "u", "gpu-0", 0, {{"gpu", 100}});
  b.queued("q", "u", 1, {{"gpu", 5}});
  Decision d = decide_once("srpt", b);
  EXPECT_EQ((Strings{"q@gpu-1"}), starts(d, b.state()));
  EXPECT_TRUE(d.preempt.empty());
}

TEST(SrptPolicyTest, NothingChangesWhenRunningJobsAreShortest) {
  StateBuilder b(10);
  b.machine("gpu-0", "gpu");
  b.running("r", "u", "gpu-0", 0, {{"gpu", 30}});  // 20 s left
  b.queued("q", "u", 1, {{"gpu", 25}});
  Decision d = decide_once("srpt", b);
  EXPECT_TRUE(d.start.empty());
  EXPECT_TRUE(d.preempt.empty());
}

TEST(SrptPolicyTest, NoDisplacementOntoADeviceWhereTheNewcomerIsSlower) {
  StateBuilder b(10);
  b.machine("gpu-0", "gpu").machine("cpu-0", "cpu");
  b.running("r", "u", "gpu-0", 9, {{"gpu", 2}});   // 1 s left: keeps the GPU
  b.running("c", "u", "cpu-0", 0, {{"cpu", 60}});  // 50 s left
  b.queued("q", "u", 5, {{"gpu", 2}, {"cpu", 100}});
  // q ranks before c (2 < 50) but would need 100 s on the CPU node, where c needs 50: stopping c
  // gains nothing, so q waits for the GPU.
  Decision d = decide_once("srpt", b);
  EXPECT_TRUE(d.start.empty());
  EXPECT_TRUE(d.preempt.empty());
}

TEST(SrptPolicyTest, EqualRemainingTimeNeverDisplaces) {
  StateBuilder b(10);
  b.machine("gpu-0", "gpu");
  b.running("r", "u", "gpu-0", 10, {{"gpu", 10}});  // arrived (and started) at 10
  b.queued("q", "u", 0, {{"gpu", 10}});             // arrived earlier, same 10 s
  Decision d = decide_once("srpt", b);
  EXPECT_TRUE(d.start.empty());
  EXPECT_TRUE(d.preempt.empty());
}

// The two ranking rules on hand-worked instances: one GPU at t = 15, a running job r that
// started at 0, a queued job q. Remaining (default): r's key is its remaining time, and q
// displaces it only when q finishes sooner. Original (the reference's): both keys are the full
// original estimates, so a long job near its end loses the GPU to any shorter newcomer.
struct SrptRuleCase {
  const char* name;
  SrptRank rank;
  double r_estimate;  // r's full estimate; r has run 15 s of it
  double q_estimate;
  bool q_displaces_r;
};

TEST(SrptPolicyTest, RankingRules) {
  const SrptRuleCase cases[] = {
      // r: 20 s, 5 s left. q: 10 s. Remaining: 10 > 5, r keeps the GPU. Original: 10 < 20.
      {"remaining, nearly done runner kept", SrptRank::kRemaining, 20, 10, false},
      {"original, nearly done runner displaced", SrptRank::kOriginal, 20, 10, true},
      // r: 100 s, 85 s left. q: 90 s. Remaining: 90 > 85, kept. Original: 90 < 100, displaced.
      {"remaining, long runner kept", SrptRank::kRemaining, 100, 90, false},
      {"original, long runner displaced", SrptRank::kOriginal, 100, 90, true},
      // r: 100 s, 85 s left. q: 50 s. Both rules: q ranks first (50 < 85, 50 < 100).
      {"remaining, short newcomer", SrptRank::kRemaining, 100, 50, true},
      {"original, short newcomer", SrptRank::kOriginal, 100, 50, true},
      // Equal original estimates: the running job wins the tie under either rule.
      {"original, tie kept", SrptRank::kOriginal, 40, 40, false},
  };
  for (const SrptRuleCase& c : cases) {
    SCOPED_TRACE(c.name);
    StateBuilder b(15);
    b.machine("gpu-0", "gpu");
    b.running("r", "u", "gpu-0", 0, {{"gpu", c.r_estimate}});
    b.queued("q", "v", 10, {{"gpu", c.q_estimate}});
    PolicyOptions options;
    options.srpt_rank = c.rank;
    Decision d = decide_once("srpt", b, options);
    if (c.q_displaces_r) {
      EXPECT_EQ((Strings{"q@gpu-0"}), starts(d, b.state()));
      EXPECT_EQ((Strings{"r"}), d.preempt);
    } else {
      EXPECT_TRUE(d.start.empty());
      EXPECT_TRUE(d.preempt.empty());
    }
  }
}

// Original rule on two device types: a CPU node and a GPU, both busy at t = 10. r1 (GPU, 60 s
// estimate) and r2 (CPU node, 300 s) started at 0; q {gpu 50, cpu 200} arrives. Keys: q 50,
// r1 60, r2 300 (r2's least estimate over the types present is its CPU time, the only one it
// has). q claims first and takes the GPU (its faster type), displacing r1, which cannot run on
// the CPU node and waits; r2 keeps the CPU node.
TEST(SrptPolicyTest, OriginalRuleClaimsTheFastestTypeFirst) {
  StateBuilder b(10);
  b.machine("gpu-0", "gpu").machine("cpu-0", "cpu");
  b.running("r1", "u", "gpu-0", 0, {{"gpu", 60}});
  b.running("r2", "u", "cpu-0", 0, {{"cpu", 300}});
  b.queued("q", "v", 5, {{"gpu", 50}, {"cpu", 200}});
  PolicyOptions options;
  options.srpt_rank = SrptRank::kOriginal;
  Decision d = decide_once("srpt", b, options);
  EXPECT_EQ((Strings{"q@gpu-0"}), starts(d, b.state()));
  EXPECT_EQ((Strings{"r1"}), d.preempt);
}

// One GPU at t = 1000 with LAS thresholds {100, 1000}, promotion factor 4. r has run 200 s
// (queue 1); q1 is new (queue 0); q2 has 150 s of service (queue 1) and arrived first.
StateBuilder las_instance(double q2_queued_since) {
  StateBuilder b(1000);
  b.machine("gpu-0", "gpu");
  b.running("r", "u", "gpu-0", 800, {{"gpu", 5000}});
  b.queued("q1", "v", 900, {{"gpu", 50}});
  b.queued("q2", "w", q2_queued_since, {{"gpu", 400}}, /*attained=*/150);
  return b;
}

TEST(LasPolicyTest, LeastAttainedQueueFirstPreemptsTheRunningJob) {
  StateBuilder b = las_instance(/*q2 waiting since*/ 500);
  // q2 waited 500 s <= 4 x 150 s: no promotion. q1 (queue 0) beats r and q2 (queue 1).
  Decision d = decide_once("las", b);
  EXPECT_EQ((Strings{"q1@gpu-0"}), starts(d, b.state()));
  EXPECT_EQ((Strings{"r"}), d.preempt);
}

TEST(LasPolicyTest, StarvingJobIsPromotedToTheTopQueue) {
  StateBuilder b = las_instance(/*q2 waiting since*/ 300);
  // q2 waited 700 s > 4 x 150 s: promoted to queue 0, where it arrived before q1.
  Decision d = decide_once("las", b);
  EXPECT_EQ((Strings{"q2@gpu-0"}), starts(d, b.state()));
  EXPECT_EQ((Strings{"r"}), d.preempt);
}

TEST(LasPolicyTest, WithinAQueueEarlierArrivalKeepsTheMachine) {
  StateBuilder b(1000);
  b.machine("gpu-0", "gpu");
  b.running("r", "u", "gpu-0", 950, {{"gpu", 5000}});  // 50 s run: queue 0, arrived 950
  b.queued("late", "v", 990, {{"gpu", 1}});            // queue 0, arrived 990
  Decision d = decide_once("las", b);
  EXPECT_TRUE(d.start.empty());
  EXPECT_TRUE(d.preempt.empty());
}

TEST(LasPolicyTest, SameQueueNeverDisplacesEvenWithAnEarlierArrival) {
  StateBuilder b(1000);
  b.machine("gpu-0", "gpu");
  b.running("r", "u", "gpu-0", 990, {{"gpu", 5000}});  // 10 s run: queue 0, arrived 990
  b.queued("early", "v", 100, {{"gpu", 1}});           // queue 0, arrived 100, never ran
  Decision d = decide_once("las", b);
  EXPECT_TRUE(d.start.empty());
  EXPECT_TRUE(d.preempt.empty());
}

}  // namespace
}  // namespace allox
