#include "fairness/fairness_round.h"

#include <gtest/gtest.h>

#include "fairness/share.h"
#include "state_builder.h"

namespace allox {
namespace {

using testing::StateBuilder;

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

TEST(FairnessRoundTest, LowestShareUsersEnterWithTiesByName) {
  StateBuilder b = three_users();
  auto shares = current_shares(b.state());
  EXPECT_EQ((std::vector<std::string>{"bob"}), lowest_share_users(shares, 0.1));
  // ceil(0.5 * 3) = 2: both zero-share users, alice stays out.
  EXPECT_EQ((std::vector<std::string>{"bob", "carol"}), lowest_share_users(shares, 0.5));
  EXPECT_EQ((std::vector<std::string>{"bob", "carol", "alice"}), lowest_share_users(shares, 1.0));
  EXPECT_EQ((std::vector<std::string>{"bob"}),
            fairness_round(b.state(), shares, 0.1, /*starvation_bound=*/1e9).users);
}

TEST(FairnessRoundTest, StarvedJobsEnterEveryRoundOldestFirst) {
  StateBuilder b = three_users();  // now = 100
  EXPECT_EQ((std::vector<std::size_t>{0, 1}), starved_jobs(b.state(), 75));
  FairnessRound round = fairness_round(b.state(), current_shares(b.state()), 0.1, 75);
  EXPECT_EQ((std::vector<std::string>{"bob"}), round.users);
  // bob's b1 (index 2) plus the starved a1 and c1.
  EXPECT_EQ((std::vector<std::size_t>{0, 1, 2}), round.jobs);
  round = fairness_round(b.state(), current_shares(b.state()), 0.1, 85);
  EXPECT_EQ((std::vector<std::size_t>{0, 2}), round.jobs);
}

}  // namespace
}  // namespace allox
