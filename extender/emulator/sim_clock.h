// Simulated time for the emulator, the fake kubelet and replays: Unix seconds that run `speedup`
// times faster than the wall clock from the moment the clock is made. alloxd started with
// `--time-scale <speedup>` at about the same moment reads about the same time; tests that run
// alloxd in-process hand it this clock's now() instead. Thread-safe: immutable.
#pragma once

#include <chrono>

namespace allox::emulator {

class SimClock {
 public:
  explicit SimClock(double speedup = 1)
      : speedup_(speedup),
        wall_start_(std::chrono::steady_clock::now()),
        unix_start_(
            std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                .count()) {}

  double speedup() const { return speedup_; }
  // Simulated Unix seconds.
  double now() const {
    return unix_start_ +
           std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start_).count() *
               speedup_;
  }
  // Simulated seconds since the clock was made.
  double elapsed() const { return now() - unix_start_; }
  double start() const { return unix_start_; }
  // The wall-clock instant at which now() reaches `simulated`.
  std::chrono::steady_clock::time_point wall_at(double simulated) const {
    return wall_start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>((simulated - unix_start_) / speedup_));
  }

 private:
  double speedup_;
  std::chrono::steady_clock::time_point wall_start_;
  double unix_start_;
};

}  // namespace allox::emulator
