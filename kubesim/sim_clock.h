// Simulated time for the emulator, the fake kubelet and replays (Unix seconds), in one of two
// modes:
//
//   free-running  SimClock(speedup): `speedup` times faster than the wall clock from the moment
//                 the clock is made. alloxd started with `--time-scale <speedup>` at about the
//                 same moment reads about the same time. A real millisecond of reaction costs
//                 `speedup` simulated milliseconds, so latencies read from it are magnified.
//   stepped       SimClock::Stepped{}: a discrete-event clock. It runs at wall speed (one
//                 simulated second per real second) and only a driver moves it further, with
//                 advance_to(), when nothing in the system is in flight (replay.h jumps to the
//                 next kubelet completion, arrival or scheduler timer once the cluster is
//                 quiet). A reaction's simulated duration is therefore its real duration, 1:1,
//                 and hours of idle cluster take no wall time.
//
// Components that sleep until a simulated instant (wall_at) register a listener to be woken
// when the clock jumps. Thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>

namespace allox::emulator {

class SimClock {
 public:
  struct Stepped {};

  explicit SimClock(double speedup = 1)
      : speedup_(speedup),
        wall_base_(std::chrono::steady_clock::now()),
        unix_start_(
            std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                .count()),
        sim_base_(unix_start_) {}
  explicit SimClock(Stepped) : SimClock(1) { stepped_ = true; }
  SimClock(const SimClock&) = delete;
  SimClock& operator=(const SimClock&) = delete;

  bool stepped() const { return stepped_; }
  // Simulated seconds per wall-clock second while the clock runs on its own (1 when stepped).
  double speedup() const { return speedup_; }
  // Simulated Unix seconds.
  double now() const {
    std::lock_guard lock(mu_);
    return sim_base_ + seconds_since(wall_base_) * speedup_;
  }
  // Simulated seconds since the clock was made.
  double elapsed() const { return now() - unix_start_; }
  double start() const { return unix_start_; }
  // The wall-clock instant at which now() reaches `simulated`, unless the clock jumps first.
  std::chrono::steady_clock::time_point wall_at(double simulated) const {
    std::lock_guard lock(mu_);
    return wall_base_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>((simulated - sim_base_) / speedup_));
  }

  // Stepped clocks only (ignored otherwise): jumps to `simulated` when that is later than now,
  // then wakes every listener. Returns the simulated seconds skipped.
  double advance_to(double simulated) {
    std::map<int, std::function<void()>> listeners;
    double skipped = 0;
    {
      std::lock_guard lock(mu_);
      if (!stepped_) return 0;
      const auto wall = std::chrono::steady_clock::now();
      const double current = sim_base_ + seconds_since(wall_base_, wall);
      if (simulated <= current) return 0;
      skipped = simulated - current;
      sim_base_ = simulated;
      wall_base_ = wall;
      listeners = listeners_;
    }
    std::lock_guard calling(call_mu_);
    for (auto& [id, listener] : listeners) listener();
    return skipped;
  }

  // Called after every jump (on the advancing thread). Returns an id for remove_listener.
  int add_listener(std::function<void()> listener) const {
    std::lock_guard lock(mu_);
    listeners_[++next_id_] = std::move(listener);
    return next_id_;
  }
  // Once it returns, the listener is not running and is never called again.
  void remove_listener(int id) const {
    {
      std::lock_guard lock(mu_);
      listeners_.erase(id);
    }
    std::lock_guard calling(call_mu_);
  }

 private:
  static double seconds_since(
      std::chrono::steady_clock::time_point from,
      std::chrono::steady_clock::time_point to = std::chrono::steady_clock::now()) {
    return std::chrono::duration<double>(to - from).count();
  }

  bool stepped_ = false;
  double speedup_;
  mutable std::mutex mu_;
  mutable std::mutex call_mu_;                       // held while listeners run
  std::chrono::steady_clock::time_point wall_base_;  // the wall instant sim_base_ was read at
  double unix_start_;
  double sim_base_;
  mutable std::map<int, std::function<void()>> listeners_;
  mutable int next_id_ = 0;
};

}  // namespace allox::emulator
