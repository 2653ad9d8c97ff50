#include "profiler/profiler.h"

#include <gtest/gtest.h>

namespace allox {
namespace {

Job make_job(const std::string& id, std::optional<std::int64_t> iterations,
             const std::string& family = "", std::map<DeviceType, double> time = {}) {
  Job job;
  job.id = id;
  job.iterations = iterations;
  job.family = family;
  job.time = std::move(time);
  return job;
}

// T(n) = 5 + 0.2 n on the GPU, profiled at 1% and 2% of 1000 iterations.
void profile_gpu(Profiler& p, const std::string& job) {
  ASSERT_TRUE(p.add_profile({job, "gpu", 10, 7}).ok());
  ASSERT_TRUE(p.add_profile({job, "gpu", 20, 9}).ok());
}

TEST(ProfilerTest, ProfileFitTimesIterations) {
  Profiler p;
  Job j = make_job("j", 1000);
  p.add_job(j);
  profile_gpu(p, "j");
  auto e = p.estimate(j, "gpu");
  ASSERT_TRUE(e.ok()) << e.message();
  EXPECT_NEAR(205, e->total_seconds, 1e-9);
  EXPECT_NEAR(205, e->remaining_seconds, 1e-9);
  EXPECT_EQ(EstimateSource::kProfile, e->source);
  EXPECT_EQ(Confidence::kHigh, e->confidence);
  EXPECT_EQ(2u, e->samples);
}

TEST(ProfilerTest, ProgressRefinesPerIterationTimeAndGivesRemainingTime) {
  ProfilerOptions options;
  options.progress_weight = 0.5;
  Profiler p(options);
  Job j = make_job("j", 1000);
  p.add_job(j);
  profile_gpu(p, "j");
  // 100 iterations in 35 s, 5 s of it start-up: 0.3 s/iteration observed, averaged with the
  // profile's 0.2: 0.25. Remaining 900 x 0.25 = 225.
  ASSERT_TRUE(p.add_progress({"j", "gpu", 100, 35}).ok());
  auto e = p.estimate(j, "gpu");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(EstimateSource::kProgress, e->source);
  EXPECT_NEAR(225, e->remaining_seconds, 1e-9);
  EXPECT_NEAR(260, e->total_seconds, 1e-9);
  // Next 100 iterations in 35 s: 0.35 observed, average 0.3; 800 left: 240.
  ASSERT_TRUE(p.add_progress({"j", "gpu", 200, 70}).ok());
  EXPECT_NEAR(240, p.estimate(j, "gpu")->remaining_seconds, 1e-9);
  EXPECT_EQ(4u, p.estimate(j, "gpu")->samples);
}

TEST(ProfilerTest, ResumedRunPaysStartUpAgainAndKeepsItsIterations) {
  ProfilerOptions options;
  options.progress_weight = 0.5;
  Profiler p(options);
  Job j = make_job("j", 1000);
  profile_gpu(p, "j");
  ASSERT_TRUE(p.add_progress({"j", "gpu", 100, 35}).ok());  // 0.25 s/iteration, as above
  // Preempted and resumed: the new run's clock restarts. 50 more iterations in 20 s, 5 s of
  // them start-up: 0.3 observed, average 0.275; 850 left.
  ASSERT_TRUE(p.add_progress({"j", "gpu", 150, 20}).ok());
  EXPECT_NEAR(0.275 * 850, p.estimate(j, "gpu")->remaining_seconds, 1e-9);
}

TEST(ProfilerTest, IterationsDoneCarryOverToOtherDevices) {
  Profiler p;
  Job j = make_job("j", 1000, "", {{"tpu", 100}});
  profile_gpu(p, "j");                                    // T = 5 + 0.2 n
  ASSERT_TRUE(p.add_profile({"j", "cpu", 10, 20}).ok());  // T = 10 + 1.0 n
  ASSERT_TRUE(p.add_profile({"j", "cpu", 20, 30}).ok());
  ASSERT_TRUE(p.add_progress({"j", "gpu", 500, 110}).ok());
  // On the CPU the 500 iterations left cost start-up plus 500 s; the declared TPU time scales.
  EXPECT_NEAR(510, p.estimate(j, "cpu")->remaining_seconds, 1e-9);
  EXPECT_NEAR(1010, p.estimate(j, "cpu")->total_seconds, 1e-9);
  EXPECT_NEAR(50, p.estimate(j, "tpu")->remaining_seconds, 1e-9);
}

TEST(ProfilerTest, ProgressAloneGivesAnEstimate) {
  Profiler p;
  Job j = make_job("j", 1000);
  EXPECT_FALSE(p.estimate(j, "gpu").ok());
  ASSERT_TRUE(p.add_progress({"j", "gpu", 200, 50}).ok());  // 0.25 s/iteration
  auto e = p.estimate(j, "gpu");
  ASSERT_TRUE(e.ok()) << e.message();
  EXPECT_EQ(EstimateSource::kProgress, e->source);
  EXPECT_DOUBLE_EQ(200, e->remaining_seconds);
  EXPECT_DOUBLE_EQ(250, e->total_seconds);
}

TEST(ProfilerTest, ProgressThatGoesBackwardsOrIsNegativeIsRefused) {
  Profiler p;
  ASSERT_TRUE(p.add_progress({"j", "gpu", 100, 30}).ok());
  auto back = p.add_progress({"j", "gpu", 50, 40});
  ASSERT_FALSE(back.ok());
  EXPECT_NE(std::string::npos, back.message().find("backwards"));
  EXPECT_FALSE(p.add_progress({"j", "gpu", -1, 40}).ok());
  EXPECT_FALSE(p.add_progress({"j", "gpu", 200, 0}).ok());
}

TEST(ProfilerTest, DeclaredTimeWithoutIterationsCountsDownByElapsedTime) {
  Profiler p;
  Job j = make_job("j", std::nullopt, "", {{"gpu", 50}});
  ASSERT_TRUE(p.add_progress({"j", "gpu", 10, 20}).ok());
  auto e = p.estimate(j, "gpu");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(EstimateSource::kDeclared, e->source);
  EXPECT_EQ(50, e->total_seconds);
  EXPECT_EQ(30, e->remaining_seconds);
}

TEST(ProfilerTest, FamilyMedianSpeedRatioPredictsAnUnprofiledDevice) {
  Profiler p;
  // Three profiled peers with CPU/GPU per-iteration ratios 4, 5 and 10: median 5.
  const double cpu_per_iteration[] = {0.8, 1.0, 2.0};
  for (int i = 0; i < 3; ++i) {
    std::string id = "peer" + std::to_string(i);
    p.add_job(make_job(id, 500, "resnet"));
    profile_gpu(p, id);
    ASSERT_TRUE(p.add_profile({id, "cpu", 10, cpu_per_iteration[i] * 10}).ok());
  }
  Job j = make_job("j", 1000, "resnet");
  p.add_job(j);
  profile_gpu(p, "j");  // 205 s on the GPU
  auto e = p.estimate(j, "cpu");
  ASSERT_TRUE(e.ok()) << e.message();
  EXPECT_EQ(EstimateSource::kFamily, e->source);
  EXPECT_NEAR(205 * 5, e->total_seconds, 1e-9);
  EXPECT_EQ(Confidence::kMedium, e->confidence);
  EXPECT_NE(std::string::npos, e->detail.find("resnet")) << e->detail;
}

TEST(ProfilerTest, FamilyMedianTimeForAJobProfiledNowhere) {
  Profiler p;
  const double startup[] = {1, 3, 100};  // times for 1000 iterations: 201, 203, 300
  for (int i = 0; i < 3; ++i) {
    std::string id = "peer" + std::to_string(i);
    p.add_job(make_job(id, 500, "bert"));
    ASSERT_TRUE(p.add_profile({id, "gpu", 10, startup[i] + 2}).ok());
    ASSERT_TRUE(p.add_profile({id, "gpu", 20, startup[i] + 4}).ok());
  }
  Job j = make_job("new", 1000, "bert");
  auto e = p.estimate(j, "gpu");
  ASSERT_TRUE(e.ok()) << e.message();
  EXPECT_EQ(EstimateSource::kFamily, e->source);
  EXPECT_NEAR(203, e->total_seconds, 1e-9);
}

TEST(ProfilerTest, ThroughputTableThenDefaultThenError) {
  auto table = ThroughputTable::parse_gavel(
      R"js({"v100": {"('ResNet-18 (batch size 16)', 1)": {"null": 25.0}}})js", "inline");
  ASSERT_TRUE(table.ok()) << table.message();
  ProfilerOptions options;
  options.default_seconds = {{"cpu", 600}};
  options.throughputs = &*table;
  Profiler p(options);
  Job j = make_job("j", 1000, "ResNet-18 (batch size 16)");
  auto on_v100 = p.estimate(j, "v100");
  ASSERT_TRUE(on_v100.ok()) << on_v100.message();
  EXPECT_EQ(EstimateSource::kThroughputTable, on_v100->source);
  EXPECT_DOUBLE_EQ(40, on_v100->total_seconds);  // 1000 iterations / 25 steps/s
  EXPECT_EQ(Confidence::kLow, on_v100->confidence);

  auto on_cpu = p.estimate(j, "cpu");
  ASSERT_TRUE(on_cpu.ok());
  EXPECT_EQ(EstimateSource::kDefault, on_cpu->source);
  EXPECT_EQ(600, on_cpu->total_seconds);

  auto on_tpu = p.estimate(j, "tpu");
  ASSERT_FALSE(on_tpu.ok());
  EXPECT_NE(std::string::npos, on_tpu.message().find("job j on tpu")) << on_tpu.message();

  Job with = p.with_estimates(j, {"v100", "cpu", "tpu"});
  EXPECT_EQ((std::map<DeviceType, double>{{"cpu", 600}, {"v100", 40}}), with.time);
}

// alloxd passes pods' families through here: one that is a Gavel key with an absurd scale
// factor, or 60,000 bytes long, has no table estimate (it threw std::out_of_range, or overflowed
// the stack in std::regex_match).
TEST(ProfilerTest, AFamilyThatIsNoUsableGavelKeyHasNoTableEstimate) {
  auto table = ThroughputTable::parse_gavel(
      R"js({"v100": {"('ResNet-18 (batch size 16)', 1)": {"null": 25.0}}})js", "inline");
  ASSERT_TRUE(table.ok()) << table.message();
  ProfilerOptions options;
  options.throughputs = &*table;
  Profiler p(options);
  for (const std::string& family :
       {std::string("('ResNet-18 (batch size 16)', 99999999999)"),
        "('" + std::string(60000, 'A') + "', 1)", "('" + std::string(60000, 'A')}) {
    auto e = p.estimate(make_job("j", 1000, family), "v100");
    ASSERT_FALSE(e.ok()) << family.substr(0, 60);
    EXPECT_NE(std::string::npos, e.message().find("job j on v100")) << e.message();
  }
  auto gavel_key = p.estimate(make_job("k", 1000, "('ResNet-18 (batch size 16)', 1)"), "v100");
  ASSERT_TRUE(gavel_key.ok()) << gavel_key.message();
  EXPECT_DOUBLE_EQ(40, gavel_key->total_seconds);
}

TEST(ProfilerTest, RejectedSampleLeavesTheProfileUnchanged) {
  Profiler p;
  Job j = make_job("j", 1000);
  profile_gpu(p, "j");
  auto bad = p.add_profile({"j", "gpu", 30, 0});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string::npos, bad.message().find("job j on gpu")) << bad.message();
  EXPECT_NEAR(205, p.estimate(j, "gpu")->total_seconds, 1e-9);
  EXPECT_FALSE(p.add_profile({"k", "gpu", 10, -1}).ok());
  EXPECT_FALSE(p.estimate(make_job("k", 1000), "gpu").ok());
}

}  // namespace
}  // namespace allox
