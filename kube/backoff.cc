#include "kube/backoff.h"

#include <algorithm>

namespace allox::kube {

Backoff::Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max, double jitter,
                 std::uint64_t seed)
    : initial_(initial),
      max_(std::max(initial, max)),
      jitter_(std::clamp(jitter, 0.0, 1.0)),
      random_(seed) {}

std::chrono::milliseconds Backoff::next() {
  double base = static_cast<double>(initial_.count());
  for (int i = 0; i < attempt_ && base < static_cast<double>(max_.count()); ++i) base *= 2;
  base = std::min(base, static_cast<double>(max_.count()));
  ++attempt_;
  double scale = 1.0 - jitter_ * std::uniform_real_distribution<double>(0.0, 1.0)(random_);
  return std::chrono::milliseconds(static_cast<std::int64_t>(base * scale));
}

}  // namespace allox::kube
