#include "profiler/linear_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace allox {
namespace {

TEST(LinearFitTest, ExactOnNoiselessSamples) {
  // T(n) = 5 + 0.2 n at 1% and 2% of a 1000-iteration job, plus a third point.
  std::vector<TimingSample> samples = {{10, 7}, {20, 9}, {50, 15}};
  auto fit = fit_time_model(samples);
  ASSERT_TRUE(fit.ok()) << fit.message();
  EXPECT_NEAR(5, fit->startup_seconds, 1e-9);
  EXPECT_NEAR(0.2, fit->seconds_per_iteration, 1e-12);
  EXPECT_NEAR(0, fit->rms_residual, 1e-9);
  EXPECT_EQ(3u, fit->samples);
  EXPECT_EQ(3u, fit->distinct_iterations);
  EXPECT_NEAR(205, fit->time_for(1000), 1e-9);
}

TEST(LinearFitTest, SensibleOnNoisySamples) {
  // T(n) = 30 + 0.5 n with a deterministic +-2 s wobble at 20 points.
  std::vector<TimingSample> samples;
  for (int i = 1; i <= 20; ++i) {
    double n = 50.0 * i;
    samples.push_back({n, 30 + 0.5 * n + (i % 2 ? 2.0 : -2.0)});
  }
  auto fit = fit_time_model(samples);
  ASSERT_TRUE(fit.ok()) << fit.message();
  EXPECT_NEAR(0.5, fit->seconds_per_iteration, 0.01);
  EXPECT_NEAR(30, fit->startup_seconds, 3);
  EXPECT_NEAR(2, fit->rms_residual, 0.1);  // the wobble, recovered as the residual
}

TEST(LinearFitTest, OneDistinctIterationCountAssumesNoStartUp) {
  std::vector<TimingSample> samples = {{10, 4}, {10, 6}};
  auto fit = fit_time_model(samples);
  ASSERT_TRUE(fit.ok()) << fit.message();
  EXPECT_EQ(0, fit->startup_seconds);
  EXPECT_DOUBLE_EQ(0.5, fit->seconds_per_iteration);
  EXPECT_DOUBLE_EQ(1, fit->rms_residual);
}

TEST(LinearFitTest, NegativeStartUpFallsBackToALineThroughTheOrigin) {
  // Least squares gives a = -1, b = 0.2; through the origin b = (10*1 + 20*3) / (100 + 400).
  std::vector<TimingSample> samples = {{10, 1}, {20, 3}};
  auto fit = fit_time_model(samples);
  ASSERT_TRUE(fit.ok()) << fit.message();
  EXPECT_EQ(0, fit->startup_seconds);
  EXPECT_DOUBLE_EQ(0.14, fit->seconds_per_iteration);
}

TEST(LinearFitTest, RefusesNonPositiveTimesAndIterationsNamingTheSample) {
  struct Case {
    TimingSample bad;
    const char* says;
  };
  const Case cases[] = {
      {{10, 0}, "time must be > 0"},
      {{10, -3}, "time must be > 0"},
      {{10, std::numeric_limits<double>::quiet_NaN()}, "time must be > 0"},
      {{0, 5}, "iterations must be > 0"},
      {{-10, 5}, "iterations must be > 0"},
  };
  for (const Case& c : cases) {
    std::vector<TimingSample> samples = {{10, 7}, c.bad};
    auto fit = fit_time_model(samples);
    ASSERT_FALSE(fit.ok()) << c.says;
    EXPECT_NE(std::string::npos, fit.message().find(c.says)) << fit.message();
    EXPECT_NE(std::string::npos, fit.message().find("sample 1")) << fit.message();
  }
  EXPECT_FALSE(fit_time_model(std::vector<TimingSample>{}).ok());
}

}  // namespace
}  // namespace allox
