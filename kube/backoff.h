// Bounded exponential back-off between retries of a failing API call or watch:
// initial, 2·initial, 4·initial, … capped at `max`, each scaled by a jitter in [1 - jitter, 1]
// so replicas that failed together do not retry together. reset() after a success.
//
// Not thread-safe: one per retry loop. Deterministic for a given seed.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace allox::kube {

class Backoff {
 public:
  Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max, double jitter = 0.2,
          std::uint64_t seed = 1);
  // The delay before the next retry; doubles the next one up to the cap.
  std::chrono::milliseconds next();
  void reset() { attempt_ = 0; }
  int attempts() const { return attempt_; }

 private:
  std::chrono::milliseconds initial_, max_;
  double jitter_;
  int attempt_ = 0;
  std::mt19937_64 random_;
};

}  // namespace allox::kube
