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

// The message around the one drawn number: `head` before it, `tail` after it.
void expect_message(const std::string& head, const std::string& tail, const std::string& got) {
  EXPECT_EQ(0u, got.find(head)) << got;
  ASSERT_GE(got.size(), head.size() + tail.size()) << got;
  EXPECT_EQ(tail, got.substr(got.size() - tail.size())) << got;
  const std::string number = got.substr(head.size(), got.size() - head.size() - tail.size());
  EXPECT_EQ(std::string::npos, number.find(' ')) << got;
}

// Arrivals and times past what a trace file may state (9e12 s) were generated as asked: 300-digit
// figures in every output. Each is refused naming the option that put it there.
TEST(Synthetic, ATracePastTheInputLimitsIsRefusedNamingItsCause) {
  const ThroughputTable table = gavel();
  SyntheticOptions o;
  o.jobs = 3;
  o.arrival_rate = 1e-300;
  auto slow = generate_synthetic_trace(table, o);
  ASSERT_FALSE(slow.ok());
  expect_message("synthetic: job1 would arrive at ",
                 " s, past the 9e+12 s a trace may state: arrival_rate 1e-300 is too low "
                 "for 3 jobs",
                 slow.message());

  o = {};
  o.jobs = 3;
  o.median_duration = 9e12;
  SyntheticOptionNames names;
  names.median_duration = "--median-duration";
  auto is_long = generate_synthetic_trace(table, o, names);
  ASSERT_FALSE(is_long.ok());
  expect_message("synthetic: job0 would take ",
                 " s on its fastest device, past the 9e+12 s a trace may state "
                 "(estimates up to 1.2x that): --median-duration 9e+12 is too high",
                 is_long.message());

  // One device a hundred orders of magnitude slower than the other.
  auto crawl = ThroughputTable::parse_gavel(
      R"js({"v100": {"('A', 1)": {"null": 3}}, "k80": {"('A', 1)": {"null": 1e-300}}})js",
      "t.json");
  ASSERT_TRUE(crawl.ok()) << crawl.message();
  o = {};
  o.jobs = 3;
  names.table = "--gavel t.json";
  auto slow_device = generate_synthetic_trace(*crawl, o, names);
  ASSERT_FALSE(slow_device.ok());
  expect_message("synthetic: job0 (A) would take ",
                 " s on k80 at 1e-300 steps/s, past the 9e+12 s a trace may state: "
                 "--gavel t.json states too low a throughput beside 3 steps/s on another device",
                 slow_device.message());

  // Iterations past a whole double (and past int64: the conversion was undefined).
  auto fast = ThroughputTable::parse_gavel(R"js({"v100": {"('A', 1)": {"null": 1e300}}})js",
                                           "t.json");
  ASSERT_TRUE(fast.ok()) << fast.message();
  auto many = generate_synthetic_trace(*fast, o, names);
  ASSERT_FALSE(many.ok());
  expect_message("synthetic: job0 (A) would count ",
                 " iterations at 1e+300 steps/s, over 9e+15: --gavel t.json states too high a "
                 "throughput",
                 many.message());
}

}  // namespace
}  // namespace allox
