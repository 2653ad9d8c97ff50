#include "sim/metrics.h"

#include <gtest/gtest.h>

#include "tests/sim/sim_test_util.h"

namespace allox {
namespace {

SimJobRecord finished(const char* job, const char* user, double start, double finish) {
  SimJobRecord r;
  r.job = job;
  r.user = user;
  r.start = start;
  r.finish = finish;
  r.device = "gpu";
  r.machine = "gpu-0";
  r.estimated_time = r.true_time = finish - start;
  return r;
}

TEST(Metrics, PercentileInterpolatesLinearly) {
  struct Case {
    std::vector<double> values;
    double p, want;
  };
  const Case cases[] = {
      {{}, 50, 0},          {{7}, 99, 7},           {{1, 2, 3, 4}, 50, 2.5},
      {{4, 1, 3, 2}, 0, 1}, {{4, 1, 3, 2}, 100, 4}, {{0, 10}, 95, 9.5},
  };
  for (const Case& c : cases) EXPECT_DOUBLE_EQ(percentile(c.values, c.p), c.want) << c.p;
}

// Two users, 2 GPUs: each user's slice is 1 GPU, so isolated time = GPU time.
// u1: a (gpu 10) arrives 0, finishes 10 -> rho 1. u2: b (gpu 10) arrives 0, finishes 30 -> rho 3.
TEST(Metrics, HandComputedSummary) {
  Trace t = testing::make_trace({testing::trace_job("a", "u1", 0, {{"gpu", 10}, {"cpu", 40}}),
                                 testing::trace_job("b", "u2", 0, {{"gpu", 10}})});
  SimResult r;
  r.policy = "hand";
  r.users = {"u1", "u2"};
  r.jobs = {finished("a", "u1", 0, 10), finished("b", "u2", 20, 30)};
  SimSummary s = summarize(r, t, testing::make_cluster(0, 2), 0.5);
  EXPECT_EQ(s.completed, 2u);
  EXPECT_DOUBLE_EQ(s.avg_jct, 20);
  EXPECT_DOUBLE_EQ(s.makespan, 30);
  EXPECT_DOUBLE_EQ(s.per_user[0].rho, 1);
  EXPECT_DOUBLE_EQ(s.per_user[1].rho, 3);
  EXPECT_DOUBLE_EQ(s.max_rho, 3);
  // x = (1, 1/3): (4/3)^2 / (2 * (1 + 1/9)) = 0.8
  EXPECT_DOUBLE_EQ(s.jain, 0.8);
}

// A job of 1e-11 s arriving at 1e6 s finishes when it arrives in floating point: JCT 0, ρ 0, and
// Jain's index over 1/ρ was NaN. Such a user has ρ 1 (no slowdown).
TEST(Metrics, AJobThatTakesNoMeasurableTimeLeavesJainFinite) {
  // In arrival order, as the simulator's records are.
  Trace t = testing::make_trace({testing::trace_job("b", "u2", 0, {{"gpu", 10}}),
                                 testing::trace_job("a", "u1", 1e6, {{"gpu", 1e-11}})});
  SimResult r;
  r.users = {"u1", "u2"};
  r.jobs = {finished("b", "u2", 0, 30), finished("a", "u1", 1e6, 1e6 + 1e-11)};
  r.jobs[1].arrival = 1e6;
  ASSERT_EQ(*r.jobs[1].finish, r.jobs[1].arrival);  // 1e6 + 1e-11 == 1e6
  SimSummary s = summarize(r, t, testing::make_cluster(0, 2), 0.5);
  ASSERT_EQ(2u, s.per_user.size());
  EXPECT_EQ("u2", s.per_user[0].user);  // users in order of first job
  EXPECT_DOUBLE_EQ(3, s.per_user[0].rho);
  EXPECT_DOUBLE_EQ(1, s.per_user[1].rho);
  // x = (1, 1/3), as in HandComputedSummary.
  EXPECT_DOUBLE_EQ(0.8, s.jain);
}

// One GPU shared by two users: each slice is half a GPU, so a 10 s job takes 20 s isolated.
TEST(Metrics, FractionalSliceSlowsTheIsolatedBaseline) {
  Trace t = testing::make_trace({testing::trace_job("a", "u1", 0, {{"gpu", 10}}),
                                 testing::trace_job("b", "u2", 0, {{"gpu", 10}})});
  SimResult r;
  r.users = {"u1", "u2"};
  SimJobRecord never_ran;
  never_ran.job = "b";
  never_ran.user = "u2";
  r.jobs = {finished("a", "u1", 0, 10), never_ran};
  SimSummary s = summarize(r, t, testing::make_cluster(0, 1), 1);
  EXPECT_EQ(s.completed, 1u);
  EXPECT_DOUBLE_EQ(s.per_user[0].rho, 0.5);
  EXPECT_EQ(s.per_user[1].completed, 0u);
  EXPECT_DOUBLE_EQ(s.jain, 1);  // only users with completed jobs count
}

}  // namespace
}  // namespace allox
