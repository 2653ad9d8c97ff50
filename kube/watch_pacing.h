// When an informer (informer.h) may send its next LIST or WATCH: the rules that keep a broken
// or hostile API server from turning alloxd into a request loop.
//
//   - Every failure waits a back-off (backoff.h: exponential, jittered, capped): a LIST that
//     fails, a watch that fails, a 410 Gone, and a watch that ends cleanly but early (it
//     lasted less than `healthy_watch`, or less than half the watch's own timeout when that is
//     shorter), which is what a server ending every watch at once looks like.
//   - The back-off is reset only by a watch that stayed open for that long: a successful LIST
//     proves nothing while the watches after it keep failing (a server that answers every
//     watch with 410 lists fine).
//   - Two LISTs are at least `min_relist_interval` apart, whatever asked for the second (a
//     410 after a healthy watch, a relist() from a new Lease holder).
//   - A watch that ends cleanly after a healthy run is opened again at once (its timeout: the
//     normal case every few minutes).
//
// A pure policy over the times it is given: the informer reads its clock and sleeps; tests
// drive it with a fake one. Not thread-safe: one per informer thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "kube/backoff.h"

namespace allox::kube {

struct WatchPacingOptions {
  std::chrono::milliseconds backoff_initial{200};
  std::chrono::milliseconds backoff_max{30000};
  std::chrono::milliseconds min_relist_interval{1000};
  std::chrono::milliseconds healthy_watch{10000};
  std::chrono::milliseconds watch_timeout{300000};  // what the informer asks the server for
};

class WatchPacing {
 public:
  using Clock = std::chrono::steady_clock;
  explicit WatchPacing(WatchPacingOptions options, std::uint64_t seed = 1);

  enum class WatchEnd { kClean, kGone, kFailed };

  // How long to wait before the next LIST, after one failed at `now`.
  std::chrono::milliseconds list_failed(Clock::time_point now);
  // A LIST is about to be sent at `now` (after any wait this class asked for): how much longer
  // to wait so that it keeps min_relist_interval from the last one. Records it when 0.
  std::chrono::milliseconds before_list(Clock::time_point now);
  // A watch opened at `opened` ended at `now` as `end`: how long to wait before the next
  // request (a WATCH after kClean, a LIST otherwise).
  std::chrono::milliseconds watch_ended(WatchEnd end, Clock::time_point opened,
                                        Clock::time_point now);

  int failures_in_a_row() const { return backoff_.attempts(); }

 private:
  WatchPacingOptions options_;
  Backoff backoff_;
  std::optional<Clock::time_point> last_list_;
};

}  // namespace allox::kube
