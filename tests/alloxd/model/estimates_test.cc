// alloxd/model/estimates.h: profile fits, hints, defaults and remaining time.
#include "alloxd/model/estimates.h"

#include <gtest/gtest.h>

namespace allox::extender {
namespace {

ProfileSample profile(std::int64_t iterations, double seconds) {
  return {"j", "gpu", ProfileSample::Kind::kProfile, iterations, seconds, 0};
}

TEST(EstimatesTest, TwoSampleSizesFitStartupPlusPerIteration) {
  // T(n) = 5 + 0.1 n, measured at 1% and 2% of 1000 iterations.
  auto e = estimate_time({profile(10, 6), profile(20, 7)}, 1000, 999.0, 3600);
  EXPECT_EQ(TimeEstimate::Source::kProfile, e.source);
  EXPECT_EQ(2, e.samples);
  EXPECT_NEAR(105, e.seconds, 1e-9);
}

TEST(EstimatesTest, OneSampleSizeScalesItsPerIterationTime) {
  auto e = estimate_time({profile(10, 6)}, 1000, std::nullopt, 3600);
  EXPECT_NEAR(600, e.seconds, 1e-9);
}

TEST(EstimatesTest, HintThenDefaultWithoutUsableProfiles) {
  EXPECT_EQ(TimeEstimate::Source::kHint, estimate_time({}, 1000, 42.0, 3600).source);
  EXPECT_DOUBLE_EQ(42, estimate_time({profile(10, 6)}, std::nullopt, 42.0, 3600).seconds);
  auto fallback = estimate_time({}, std::nullopt, std::nullopt, 3600);
  EXPECT_EQ(TimeEstimate::Source::kDefault, fallback.source);
  EXPECT_DOUBLE_EQ(3600, fallback.seconds);
}

TEST(EstimatesTest, RemainingUsesProgressWhenReported) {
  EXPECT_DOUBLE_EQ(70, estimate_remaining(100, 1000, 1030, std::nullopt, std::nullopt));
  EXPECT_DOUBLE_EQ(1, estimate_remaining(100, 1000, 1500, std::nullopt, std::nullopt));
  // 250 of 1000 iterations took 50 s, reported 10 s ago: 750 × 0.2 − 10.
  ProfileSample progress{"j", "gpu", ProfileSample::Kind::kProgress, 250, 50, 1050};
  EXPECT_DOUBLE_EQ(140, estimate_remaining(100, 1000, 1060, 1000, progress));
}

}  // namespace
}  // namespace allox::extender
