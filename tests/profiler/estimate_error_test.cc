#include "profiler/estimate_error.h"

#include <gtest/gtest.h>

#include <cmath>

namespace allox {
namespace {

TEST(EstimateErrorTest, AppliesTheWorkloadsPerJobError) {
  EXPECT_DOUBLE_EQ(110, *apply_estimate_error(100, 0.1));
  EXPECT_DOUBLE_EQ(40, *apply_estimate_error(100, -0.6));
  EXPECT_FALSE(apply_estimate_error(100, -1).ok());
  EXPECT_FALSE(apply_estimate_error(0, 0.1).ok());
}

TEST(EstimateErrorTest, NormalDrawsAreClippedCenteredAndReproducible) {
  ASSERT_FALSE(EstimateErrorModel::normal(-1, 1).ok());
  auto exact = EstimateErrorModel::normal(0, 1);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(0, exact->draw());

  auto wide = EstimateErrorModel::normal(5, 7);
  ASSERT_TRUE(wide.ok());
  int clipped = 0;
  for (int i = 0; i < 1000; ++i) {
    double e = wide->draw();
    ASSERT_LE(std::abs(e), EstimateErrorModel::kClip);
    clipped += std::abs(e) == EstimateErrorModel::kClip;
  }
  EXPECT_GT(clipped, 800);  // P(|N(0,5)| > 0.99) is about 0.84

  auto a = EstimateErrorModel::normal(0.1, 42);
  auto b = EstimateErrorModel::normal(0.1, 42);
  double sum = 0, squares = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    double x = a->draw();
    ASSERT_EQ(x, b->draw());
    sum += x;
    squares += x * x;
  }
  EXPECT_NEAR(0, sum / n, 0.005);
  EXPECT_NEAR(0.1, std::sqrt(squares / n), 0.005);
}

}  // namespace
}  // namespace allox
