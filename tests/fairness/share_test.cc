#include "fairness/share.h"

#include <gtest/gtest.h>

#include "state_builder.h"

namespace allox {
namespace {

using testing::StateBuilder;

TEST(ShareTest, FastPlacementCountsOneMachineOfTheFastestType) {
  StateBuilder b;
  b.machine("gpu-0", "gpu").machine("gpu-1", "gpu");
  for (int i = 0; i < 4; ++i) b.machine("cpu-" + std::to_string(i), "cpu");
  b.running("a", "alice", "gpu-0", 0, {{"gpu", 10}, {"cpu", 40}});
  // One of two GPUs.
  EXPECT_DOUBLE_EQ(0.5, current_shares(b.state()).at("alice"));
}

TEST(ShareTest, SlowPlacementIsDiscountedBySpeedRatio) {
  StateBuilder b;
  b.machine("gpu-0", "gpu").machine("gpu-1", "gpu");
  for (int i = 0; i < 4; ++i) b.machine("cpu-" + std::to_string(i), "cpu");
  b.running("a", "alice", "cpu-0", 0, {{"gpu", 10}, {"cpu", 40}});
  b.running("b", "alice", "cpu-1", 0, {{"gpu", 30}, {"cpu", 15}});  // CPU is its fast type
  // a: 1/2 GPUs * 10/40 = 0.125; b: 1/4 CPU nodes, undiscounted = 0.25.
  EXPECT_DOUBLE_EQ(0.375, current_shares(b.state()).at("alice"));
}

TEST(ShareTest, FastestTypeIsTakenAmongTypesPresent) {
  StateBuilder b;
  b.machine("gpu-0", "gpu").machine("cpu-0", "cpu").machine("cpu-1", "cpu");
  b.running("a", "alice", "cpu-0", 0, {{"tpu", 1}, {"gpu", 10}, {"cpu", 20}});
  // No TPU here: the fastest present type is the GPU (1 of 1), discounted 10/20.
  EXPECT_DOUBLE_EQ(0.5, current_shares(b.state()).at("alice"));
}

TEST(ShareTest, TiedFastestTypesTakeTheFirstByName) {
  StateBuilder b;
  b.machine("cpu-0", "cpu").machine("gpu-0", "gpu").machine("gpu-1", "gpu");
  b.running("a", "alice", "gpu-0", 0, {{"gpu", 10}, {"cpu", 10}});
  // CPU and GPU tie at 10 s: the dominant type is "cpu" (1 of 1), undiscounted.
  EXPECT_DOUBLE_EQ(1.0, current_shares(b.state()).at("alice"));
}

TEST(ShareTest, WeightDividesShareAndQueuedOnlyUsersStartAtZero) {
  StateBuilder b;
  b.machine("gpu-0", "gpu").machine("gpu-1", "gpu");
  b.user("alice", 2);
  b.running("a", "alice", "gpu-0", 0, {{"gpu", 10}});
  b.running("c", "carol", "gpu-1", 0, {{"gpu", 10}});
  b.queued("q", "bob", 0, {{"gpu", 5}});
  auto shares = current_shares(b.state());
  EXPECT_DOUBLE_EQ(0.25, shares.at("alice"));
  EXPECT_DOUBLE_EQ(0.5, shares.at("carol"));
  EXPECT_DOUBLE_EQ(0.0, shares.at("bob"));
}

}  // namespace
}  // namespace allox
