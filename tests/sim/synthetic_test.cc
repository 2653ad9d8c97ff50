#include "sim/synthetic.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/metrics.h"

namespace allox {
namespace {

ThroughputTable gavel() {
  auto table =
      ThroughputTable::load_gavel(ALLOX_SOURCE_DIR "/data/gavel/simulation_throughputs.json");
  EXPECT_TRUE(table.ok()) << table.message();
  return *table;
}

TEST(Synthetic, GavelTableHasSingleWorkerTypesOnThreeGpus) {
  auto types = synthetic_job_types(gavel());
  ASSERT_TRUE(types.ok()) << types.message();
  EXPECT_GE(types->size(), 20u);
  for (const JobType& type : *types) {
    EXPECT_EQ(type.model.find('\''), std::string::npos) << type.model;
    for (const auto& [device, rate] : type.steps_per_second) {
      EXPECT_TRUE(device == "k80" || device == "p100" || device == "v100") << device;
      EXPECT_GT(rate, 0);
    }
  }
}

TEST(Synthetic, SameSeedSameTraceOtherSeedOtherTrace) {
  const ThroughputTable table = gavel();
  SyntheticOptions o;
  o.jobs = 300;
  auto a = generate_synthetic_trace(table, o);
  auto b = generate_synthetic_trace(table, o);
  o.seed = 2;
  auto c = generate_synthetic_trace(table, o);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  bool differs = false;
  for (std::size_t i = 0; i < a->jobs.size(); ++i) {
    EXPECT_EQ(a->jobs[i].job.arrival, b->jobs[i].job.arrival);
    EXPECT_EQ(a->jobs[i].true_time, b->jobs[i].true_time);
    EXPECT_EQ(a->jobs[i].job.time, b->jobs[i].job.time);
    differs |= a->jobs[i].true_time != c->jobs[i].true_time;
  }
  EXPECT_TRUE(differs);
}

TEST(Synthetic, DistributionsFollowTheOptions) {
  SyntheticOptions o;
  o.jobs = 4000;
  o.arrival_rate = 0.05;
  o.median_duration = 600;
  o.max_duration_factor = 20;
  o.estimate_error = 0.25;
  auto t = generate_synthetic_trace(gavel(), o);
  ASSERT_TRUE(t.ok()) << t.message();
  std::vector<double> fastest;
  for (std::size_t i = 0; i < t->jobs.size(); ++i) {
    const TraceJob& tj = t->jobs[i];
    if (i > 0) {
      EXPECT_GE(tj.job.arrival, t->jobs[i - 1].job.arrival);
    }
    double best = INFINITY;
    for (const auto& [device, truth] : tj.true_time) {
      best = std::min(best, truth);
      const double ratio = tj.job.time.at(device) / truth;
      EXPECT_GE(ratio, 0.75 - 1e-9);
      EXPECT_LE(ratio, 1.25 + 1e-9);
    }
    EXPECT_LE(best, 600 * 20 * (1 + 1e-9));
    fastest.push_back(best);
  }
  // Sampling noise at 4,000 draws is a few percent; 15% bounds fail only on a wrong formula.
  const double mean_gap = t->jobs.back().job.arrival / (t->jobs.size() - 1);
  EXPECT_NEAR(mean_gap, 1 / o.arrival_rate, 0.15 / o.arrival_rate);
  EXPECT_NEAR(percentile(fastest, 50), 600, 90);
  EXPECT_GT(percentile(fastest, 99), 5 * 600);  // heavy tail
}

TEST(Synthetic, RejectsBadOptions) {
  const ThroughputTable table = gavel();
  SyntheticOptions o;
  o.users = 0;
  EXPECT_FALSE(generate_synthetic_trace(table, o).ok());
  o = {};
  o.estimate_error = 1;
  EXPECT_FALSE(generate_synthetic_trace(table, o).ok());
  // A billion jobs or users would be refused only by bad_alloc (SIGABRT) or the OOM killer.
  o = {};
  o.jobs = kMaxSyntheticJobs + 1;
  auto jobs = generate_synthetic_trace(table, o);
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ("synthetic: jobs must be 1..1000000", jobs.message());
  o = {};
  o.users = kMaxSyntheticUsers + 1;
  auto users = generate_synthetic_trace(table, o);
  ASSERT_FALSE(users.ok());
  EXPECT_EQ("synthetic: users must be 1..1000000", users.message());
  // A table without single-worker configurations gives no job types.
  auto multi = ThroughputTable::parse_gavel(
      R"js({"v100": {"('ResNet-18 (batch size 16)', 2)": {"null": 3}}})js", "t.json");
  ASSERT_TRUE(multi.ok()) << multi.message();
  EXPECT_FALSE(generate_synthetic_trace(*multi, SyntheticOptions{}).ok());
}

}  // namespace
}  // namespace allox
