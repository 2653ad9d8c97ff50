// A connection's one deadline on one timer: when it passes, the connection's pending socket
// operation is cancelled (it then fails with operation_aborted, and timed_out() says why).
//
// Every kept-alive request moves the deadline later; that costs no timer operation: the wait in
// progress re-waits when it ends early. Only a deadline earlier than the wait in progress
// re-arms the timer.
//
// Thread-safety: none; used only on its connection's I/O thread (the executor it is built on).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

namespace allox::extender {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  // `expired` runs on `executor` when an armed deadline passes; the connection cancels its
  // socket's operation there.
  Deadline(const boost::asio::any_io_executor& executor, std::function<void()> expired);

  // Arms (or moves) the deadline and clears timed_out(). `owner`, the connection, is held while
  // the timer waits, so it outlives every wait it started; a deadline moved later takes no
  // reference.
  template <class Owner>
  void arm_until(Clock::time_point deadline, Owner& owner) {
    timed_out_ = false;
    deadline_ = deadline;
    if (!waiting_ || deadline_ < wait_until_) wait(owner.shared_from_this());
  }
  template <class Owner>
  void arm(std::chrono::milliseconds timeout, Owner& owner) {
    arm_until(Clock::now() + timeout, owner);
  }
  // No deadline until the next arm: a wait in progress ends without effect.
  void disarm() { deadline_ = Clock::time_point::max(); }
  // Disarms and ends the wait in progress now, letting go of its owner (the connection closes).
  void cancel();
  // The last armed deadline passed (and `expired` ran).
  bool timed_out() const { return timed_out_; }

 private:
  void wait(std::shared_ptr<void> owner);

  boost::asio::steady_timer timer_;
  std::function<void()> expired_;
  Clock::time_point deadline_ = Clock::time_point::max();
  Clock::time_point wait_until_;  // the wait in progress ends then
  bool waiting_ = false;
  bool timed_out_ = false;
  // A wait ended by expires_at() (re-armed earlier) or cancel() finds its generation stale.
  std::uint64_t generation_ = 0;
};

}  // namespace allox::extender
