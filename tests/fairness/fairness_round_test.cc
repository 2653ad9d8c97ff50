#include "fairness/fairness_round.h"

#include <gtest/gtest.h>

#include <limits>

#include "fairness/share.h"
#include "state_builder.h"

namespace allox {
namespace {

using testing::StateBuilder;

constexpr double kNoGuard = std::numeric_limits<double>::infinity();

TEST(FairnessRoundTest, UserCountIsCeilOfAlphaTimesUsers) {
  struct Case {
    double alpha;
    std::size_t users, want;
  };
  const Case cases[] = {{0.1, 10, 1}, {0.1, 30, 3}, {0.25, 10, 3}, {1, 7, 7},
                        {0.01, 3, 1}, {0.5, 0, 0},  {0.2, 4, 1},   {0.8, 4, 4}};
  for (const Case& c : cases) {
    EXPECT_EQ(c.want, round_user_count(c.alpha, c.users)) << c.alpha << " x " << c.users;
  }
}

// alice holds a GPU (L = 1/2), bob and carol hold nothing (L = 0, tied).
StateBuilder three_users() {
  StateBuilder b(100);
  b.machine("gpu-0", "gpu").machine("gpu-1", "gpu");
  b.running("r", "alice", "gpu-0", 0, {{"gpu", 500}});
  b.queued("a1", "alice", 10, {{"gpu", 5}});
  b.queued("c1", "carol", 20, {{"gpu", 5}});
  b.queued("b1", "bob", 30, {{"gpu", 5}});
  return b;
}

TEST(FairnessRoundTest, LowestShareFirstTiesToTheUserWhoseOldestJobWaitedLongest) {
  StateBuilder b = three_users();
  auto shares = current_shares(b.state());
  // bob and carol tie at L = 0; carol's c1 has waited since 20, bob's b1 since 30. By name bob
  // would win every such tie.
  EXPECT_EQ((std::vector<std::string>{"carol"}),
            fairness_round(b.state(), shares, 0.1, kNoGuard).users);
  // ceil(0.5 * 3) = 2: both zero-share users, alice (L = 1/2) stays out.
  EXPECT_EQ((std::vector<std::string>{"carol", "bob"}),
            fairness_round(b.state(), shares, 0.5, kNoGuard).users);
  FairnessRound all = fairness_round(b.state(), shares, 1.0, kNoGuard);
  EXPECT_EQ((std::vector<std::string>{"carol", "bob", "alice"}), all.users);
  EXPECT_EQ((std::vector<std::size_t>{0, 1, 2}), all.jobs);
}

TEST(FairnessRoundTest, EqualShareAndEqualWaitFallBackToTheName) {
  std::vector<WaitingUser> users = {{"zoe", 0, 5}, {"bob", 0, 5}, {"amy", 0.5, 1}};
  EXPECT_EQ((std::vector<std::string>{"bob", "zoe"}), lowest_share_users(users, 0.5));
}

TEST(FairnessRoundTest, OnlyTheWaitingJobsCount) {
  StateBuilder b = three_users();
  auto shares = current_shares(b.state());
  // c1 (index 1) was placed earlier in the decision: carol no longer waits, bob enters.
  FairnessRound round = fairness_round(b.state(), {0, 2}, shares, 0.1, kNoGuard);
  EXPECT_EQ((std::vector<std::string>{"bob"}), round.users);
  EXPECT_EQ((std::vector<std::size_t>{2}), round.jobs);
}

TEST(FairnessRoundTest, StarvedJobsEnterEveryRoundOldestFirst) {
  StateBuilder b = three_users();  // now = 100; a1 waited 90 s, c1 80 s, b1 70 s
  auto shares = current_shares(b.state());
  EXPECT_EQ((std::vector<std::size_t>{0, 1}), starved_jobs(b.state(), 75));
  // carol enters; alice's a1 (L = 1/2) only as a starved job.
  FairnessRound round = fairness_round(b.state(), shares, 0.1, 85);
  EXPECT_EQ((std::vector<std::string>{"carol"}), round.users);
  EXPECT_EQ((std::vector<std::size_t>{0}), round.starved);
  EXPECT_EQ((std::vector<std::size_t>{0, 1}), round.jobs);
  // At 65 s every job is starved, bob's too.
  round = fairness_round(b.state(), shares, 0.1, 65);
  EXPECT_EQ((std::vector<std::size_t>{0, 1, 2}), round.starved);
  EXPECT_EQ((std::vector<std::size_t>{0, 1, 2}), round.jobs);
  // The guard off: nothing is ever starved, and alice stays out.
  EXPECT_TRUE(starved_jobs(b.state(), kNoGuard).empty());
  EXPECT_EQ((std::vector<std::size_t>{1}), fairness_round(b.state(), shares, 0.1, kNoGuard).jobs);
}

}  // namespace
}  // namespace allox
