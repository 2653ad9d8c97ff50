// Work handed to one I/O thread (an io_context run by that thread alone) from other threads,
// with the thread woken only after the hand-over's lock is released.
//
// Why not asio::post: posting into an io_context wakes the thread blocked in its epoll_wait (an
// eventfd write) while holding the io_context's mutex. The woken I/O thread then preempts the
// poster, which still holds that mutex; the I/O thread needs the mutex as soon as its wait
// returns, and sleeps until the poster gets a core back. alloxd's /bind pool runs in the
// background (thread_priority.h), so on a busy machine that can be milliseconds, during which
// the I/O thread answers no /filter either (docs/performance.md, "Lock inversions on the request
// path"). Here a push takes a
// mutex of the inbox's own for a vector push_back, releases it, and only then writes the
// eventfd: the woken thread finds nothing held.
//
// push() is thread-safe; the work runs on the I/O thread, in the order pushed. Work pushed
// after the io_context stopped is destroyed with the inbox, never run.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "core/result.h"

namespace allox::extender {

class IoThreadInbox {
 public:
  // An inbox served by `io`'s thread (it starts waiting at once); an error when the kernel
  // gives no eventfd.
  static Expected<std::unique_ptr<IoThreadInbox>> open(boost::asio::io_context& io);
  IoThreadInbox(const IoThreadInbox&) = delete;
  IoThreadInbox& operator=(const IoThreadInbox&) = delete;

  void push(std::function<void()> work);

 private:
  IoThreadInbox(boost::asio::io_context& io, int event_fd);
  void wait();
  void run_pushed();

  boost::asio::posix::stream_descriptor event_;
  std::uint64_t event_count_ = 0;  // read buffer of the eventfd (the I/O thread's only)
  std::mutex mu_;
  std::vector<std::function<void()>> pushed_;   // guarded by mu_
  std::vector<std::function<void()>> running_;  // the I/O thread's only
  // Set by the push that writes the eventfd, cleared by the I/O thread before it takes the
  // work: one write per batch, and no push is left without a wake-up.
  std::atomic<bool> woken_{false};
  // The eventfd read failed: pushes go through asio::post from then on (guarded by mu_).
  bool broken_ = false;
};

}  // namespace allox::extender
