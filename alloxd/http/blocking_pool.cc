#include "alloxd/http/blocking_pool.h"

#include <cerrno>
#include <exception>
#include <memory>
#include <stdexcept>

#include "alloxd/http/countdown.h"
#include "core/log.h"

namespace allox::extender {

BlockingPool::BlockingPool(std::size_t threads, const std::function<void()>& on_start) {
  if (::sem_init(&pending_, 0, 0) != 0) throw std::runtime_error("blocking pool: no semaphore");
  // Shared: the constructor may return while the last thread is still leaving arrive().
  auto started = std::make_shared<Countdown>(threads);
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) {
    threads_.emplace_back([this, on_start, started] {
      if (on_start) on_start();
      started->arrive();
      run();
    });
  }
  started->wait();
}

BlockingPool::~BlockingPool() {
  join();
  std::function<void()>* left = nullptr;
  while (queue_.pop(left)) delete left;
  ::sem_destroy(&pending_);
}

void BlockingPool::post(std::function<void()> work) {
  auto owned = std::make_unique<std::function<void()>>(std::move(work));
  if (!queue_.push(owned.get())) throw std::runtime_error("blocking pool: out of queue memory");
  (void)owned.release();  // the queue's now, freed by the thread that runs it
  ::sem_post(&pending_);
}

void BlockingPool::join() {
  if (joined_.exchange(true)) return;
  for (std::size_t i = 0; i < threads_.size(); ++i) ::sem_post(&pending_);
  for (std::thread& t : threads_) t.join();
}

void BlockingPool::run() {
  for (;;) {
    while (::sem_wait(&pending_) != 0 && errno == EINTR) {
    }
    std::function<void()>* work = nullptr;
    // Empty only when the count taken was one of join()'s: everything posted before it has a
    // count of its own and is in the queue before that count is.
    if (!queue_.pop(work)) return;
    try {
      (*work)();
    } catch (const std::exception& e) {
      // The work's own errors are its caller's to answer (the server's handlers catch theirs);
      // one that escapes must not end the thread, and is not silent.
      log_warn("blocking pool: work failed", {{"error", e.what()}});
    }
    delete work;
  }
}

}  // namespace allox::extender
