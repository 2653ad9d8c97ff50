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
