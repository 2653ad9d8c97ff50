#include "kube/watch_pacing.h"

#include <algorithm>

namespace allox::kube {

using std::chrono::milliseconds;

WatchPacing::WatchPacing(WatchPacingOptions options, std::uint64_t seed)
    : options_(options), backoff_(options.backoff_initial, options.backoff_max, 0.2, seed) {}

milliseconds WatchPacing::list_failed(Clock::time_point) {
  return backoff_.next();
}

milliseconds WatchPacing::before_list(Clock::time_point now) {
  if (last_list_) {
    const auto due = *last_list_ + options_.min_relist_interval;
    if (now < due) {
      // Rounded up: a wait of the truncated remainder would come back a hair early, again.
      return std::chrono::ceil<milliseconds>(due - now);
    }
  }
  last_list_ = now;
  return milliseconds(0);
}

milliseconds WatchPacing::watch_ended(WatchEnd end, Clock::time_point opened,
                                      Clock::time_point now) {
  // A server ends a healthy watch at its timeout; one shorter than half of it is not that.
  const auto healthy = std::min<milliseconds>(options_.healthy_watch, options_.watch_timeout / 2);
  if (now - opened >= healthy) {
    backoff_.reset();
    if (end != WatchEnd::kFailed) return milliseconds(0);  // a LIST still keeps its interval
  }
  return backoff_.next();
}

}  // namespace allox::kube
