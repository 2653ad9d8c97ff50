#include "profiler/estimate_error.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace allox {

Expected<double> apply_estimate_error(double true_seconds, double error) {
  if (!std::isfinite(true_seconds) || true_seconds <= 0) {
    return Error{"true time must be > 0 seconds, got " + std::to_string(true_seconds)};
  }
  if (!std::isfinite(error) || error <= -1) {
    return Error{"estimation error must be > -1 (an estimate must stay positive), got " +
                 std::to_string(error)};
  }
  return true_seconds * (1 + error);
}

Expected<EstimateErrorModel> EstimateErrorModel::normal(double sigma, std::uint64_t seed) {
  if (!std::isfinite(sigma) || sigma < 0) {
    return Error{"error sigma must be >= 0, got " + std::to_string(sigma)};
  }
  return EstimateErrorModel(sigma, seed);
}

double EstimateErrorModel::draw() {
  if (sigma_ == 0) return 0;
  std::normal_distribution<double> noise(0, sigma_);
  return std::clamp(noise(rng_), -kClip, kClip);
}

}  // namespace allox
