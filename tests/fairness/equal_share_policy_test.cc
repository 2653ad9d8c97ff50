#include <gtest/gtest.h>

#include "decide.h"

namespace allox {
namespace {

using testing::decide_once;
using testing::starts;
using testing::StateBuilder;
using Starts = std::vector<std::string>;

TEST(EqualSharePolicyTest, StaticWeightedPartitionLeavesOtherUsersMachinesIdle) {
  StateBuilder b;
  b.machine("gpu-0", "gpu").machine("gpu-1", "gpu").machine("gpu-2", "gpu").machine("gpu-3", "gpu");
  b.machine("cpu-0", "cpu").machine("cpu-1", "cpu");
  b.user("carol", 2);  // known, weight 2, nothing queued
  b.queued("a1", "alice", 0, {{"gpu", 5}, {"cpu", 10}});
  b.queued("a2", "alice", 0, {{"gpu", 6}, {"cpu", 7}});
  b.queued("a3", "alice", 0, {{"gpu", 1}});
  b.queued("b1", "bob", 0, {{"gpu", 8}, {"cpu", 9}});
  b.queued("b2", "bob", 0, {{"gpu", 2}, {"cpu", 3}});
  // Weights 1:1:2 of 4 GPUs: alice 1, bob 1, carol 2. Of 2 CPU nodes: exact 0.5, 0.5, 1; the
  // leftover node goes to the larger fraction, alice before bob by name: alice 1, bob 0, carol 1.
  // Shortest first: a3 (1) takes alice's GPU, b2 (2) bob's GPU, a1 (5) finds alice's GPU used
  // and takes her CPU node; a2 and b1 are over quota. carol's machines stay idle.
  auto d = decide_once("es", b);
  EXPECT_EQ((Starts{"a3@gpu-0", "b2@gpu-1", "a1@cpu-0"}), starts(d, b.state()));
}

}  // namespace
}  // namespace allox
