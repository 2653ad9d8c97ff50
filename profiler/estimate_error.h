// Estimation error for the simulator: what the scheduler believes is true x (1 + e).
//
// e comes per job from the workload (the AlloX trace carries one per device type) or is drawn
// from N(0, sigma) and clipped to [-0.99, 0.99] so that an estimate stays positive. Draws are
// deterministic for a given seed (std::mt19937_64; std::normal_distribution is
// implementation-defined, so the same seed may differ across standard libraries).
// Not thread-safe: one generator per simulation.
#pragma once

#include <cstdint>
#include <random>

#include "core/result.h"

namespace allox {

// true_seconds x (1 + error); error must be > -1 and true_seconds > 0.
Expected<double> apply_estimate_error(double true_seconds, double error);

class EstimateErrorModel {
 public:
  static constexpr double kClip = 0.99;
  // sigma >= 0; sigma = 0 makes every estimate exact.
  static Expected<EstimateErrorModel> normal(double sigma, std::uint64_t seed);

  double draw();  // e ~ N(0, sigma) clipped to [-kClip, kClip]

 private:
  EstimateErrorModel(double sigma, std::uint64_t seed) : sigma_(sigma), rng_(seed) {}
  double sigma_;
  std::mt19937_64 rng_;
};

}  // namespace allox
