// Threads arrive; wait() returns once the given number have. For a start-up that returns only
// when every thread it started is ready (named, in its class). A mutex and a condition
// variable, not std::latch: with GCC 12's libstdc++ a latch lost wake-ups and left threads
// asleep for good (a server's destructor then waited on them forever).
//
// Thread-safe. Share it (shared_ptr) when the waiter may return while the last thread to arrive
// is still leaving arrive().
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace allox::extender {

class Countdown {
 public:
  explicit Countdown(std::size_t threads) : left_(threads) {}
  void arrive() {
    std::lock_guard lock(mu_);
    if (left_ > 0 && --left_ == 0) all_arrived_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mu_);
    all_arrived_.wait(lock, [this] { return left_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable all_arrived_;
  std::size_t left_;
};

}  // namespace allox::extender
