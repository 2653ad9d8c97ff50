#include "fairness/usage_window.h"

#include <gtest/gtest.h>

namespace allox {
namespace {

TEST(UsageWindowTest, WindowedDominantShareCountsOnlyOverlap) {
  UsageWindow usage(100, {{"gpu", 2}, {"cpu", 4}}, {{"bob", 2}});
  usage.add_run("a1", "alice", "gpu", 50, 150);  // 50 s inside [100, 200]
  usage.add_run("a2", "alice", "cpu", 120);      // open: 80 s
  usage.add_run("b1", "bob", "gpu", 0, 200);     // 100 s, weight 2
  usage.add_run("old", "carol", "gpu", 0, 90);   // before the window
  auto shares = usage.windowed_shares(200);
  // alice: gpu 50 / (2 x 100) = 0.25, cpu 80 / (4 x 100) = 0.2 -> 0.25. bob: 0.5 / 2.
  EXPECT_DOUBLE_EQ(0.25, shares.at("alice"));
  EXPECT_DOUBLE_EQ(0.25, shares.at("bob"));
  EXPECT_FALSE(shares.contains("carol"));

  usage.close_run("a2", 130);  // now only 10 s of CPU: alice stays at 0.25 (GPU dominates)
  usage.close_run("a1", 110);  // GPU 10 s -> 0.05; CPU 10 s -> 0.025
  EXPECT_DOUBLE_EQ(0.05, usage.windowed_shares(200).at("alice"));
}

TEST(UsageWindowTest, PruneDropsOnlyRunsThatEndedBeforeTheWindow) {
  UsageWindow usage(100, {{"gpu", 1}});
  usage.add_run("early", "u", "gpu", 0, 50);
  usage.add_run("late", "u", "gpu", 150, 180);
  usage.add_run("open", "v", "gpu", 0);
  usage.prune(200);  // window starts at 100
  EXPECT_DOUBLE_EQ(0.3, usage.windowed_shares(200).at("u"));
  EXPECT_DOUBLE_EQ(1.0, usage.windowed_shares(200).at("v"));
  // After pruning, a query at an earlier time no longer sees the dropped run (0..50 would
  // overlap [20, 120]).
  EXPECT_FALSE(usage.windowed_shares(120).contains("u"));
}

TEST(JainIndexTest, EqualIsOneAndMonopolyIsOneOverN) {
  EXPECT_DOUBLE_EQ(1, jain_index({0.3, 0.3, 0.3}));
  EXPECT_DOUBLE_EQ(0.25, jain_index({1, 0, 0, 0}));
  EXPECT_DOUBLE_EQ(0.25 / 0.26, jain_index({0.2, 0.3}));
  EXPECT_DOUBLE_EQ(1, jain_index({}));
}

}  // namespace
}  // namespace allox
