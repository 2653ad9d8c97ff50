#include <gtest/gtest.h>

#include "decide.h"

namespace allox {
namespace {

using testing::decide_once;
using testing::starts;
using testing::StateBuilder;
using Starts = std::vector<std::string>;

TEST(MaxMinPolicyTest, UserWithoutRunningWorkGetsTheIdleMachineFirst) {
  StateBuilder b(10);
  b.machine("gpu-0", "gpu").machine("gpu-1", "gpu");
  b.running("r", "alice", "gpu-0", 0, {{"gpu", 100}});
  b.queued("a1", "alice", 1, {{"gpu", 10}});
  b.queued("b1", "bob", 2, {{"gpu", 10}});
  // max t, t <= 1 + x_a1, t <= x_b1, x_a1 + x_b1 <= 1: x_b1 = 1, t = 1. bob's job starts even
  // though alice's is older (FIFO would pick a1).
  EXPECT_EQ((Starts{"b1@gpu-1"}), starts(decide_once("maxmin", b), b.state()));
}

TEST(MaxMinPolicyTest, HeterogeneityAwareSplitGivesTheGpuToTheJobThatNeedsIt) {
  StateBuilder b(10);
  b.machine("gpu-0", "gpu").machine("cpu-0", "cpu");
  b.queued("a1", "alice", 1, {{"gpu", 10}, {"cpu", 20}});  // rate on CPU 0.5
  b.queued("b1", "bob", 2, {{"gpu", 10}, {"cpu", 100}});   // rate on CPU 0.1
  // Integral options: a1 GPU + b1 CPU gives min(1, 0.1) = 0.1; b1 GPU + a1 CPU gives
  // min(0.5, 1) = 0.5. The LP's fractional optimum leans the same way (x_b1,gpu = 9/14), so
  // rounding gives b1 the GPU and a1 the CPU node.
  EXPECT_EQ((Starts{"b1@gpu-0", "a1@cpu-0"}), starts(decide_once("maxmin", b), b.state()));
}

TEST(MaxMinPolicyTest, WeightedUserReceivesMoreMachines) {
  StateBuilder b(10);
  b.machine("gpu-0", "gpu").machine("gpu-1", "gpu").machine("gpu-2", "gpu");
  b.user("alice", 2);
  b.queued("a1", "alice", 1, {{"gpu", 10}});
  b.queued("a2", "alice", 2, {{"gpu", 10}});
  b.queued("a3", "alice", 3, {{"gpu", 10}});
  b.queued("b1", "bob", 4, {{"gpu", 10}});
  b.queued("b2", "bob", 5, {{"gpu", 10}});
  // max t with t <= (x_a1 + x_a2 + x_a3) / 2, t <= x_b1 + x_b2, total <= 3: alice 2, bob 1.
  Decision d = decide_once("maxmin", b);
  ASSERT_EQ(3u, d.start.size());
  int alice = 0;
  for (const Placement& p : d.start) alice += p.job_id[0] == 'a';
  EXPECT_EQ(2, alice);
}

}  // namespace
}  // namespace allox
