// Threads for the handlers that may wait long (binds: an fsync and the API server), fed by the
// I/O threads without a lock.
//
// Why not asio::thread_pool: posting to it takes the pool's mutex, which its own threads take
// to pick work. alloxd's pool threads run in the background (thread_priority.h), and an I/O
// thread that wakes preempts one of them on its core, possibly while it holds that mutex; the
// I/O thread's next post then sleeps until the preempted thread gets a core back, and the
// /filter calls on its connections wait with it (docs/performance.md, "Lock inversions on the
// request path"). Here a post is a
// push on a lock-free queue and a semaphore release (an atomic add, and a futex wake only when
// a thread sleeps): nothing a pool thread holds.
//
// post() is thread-safe. join() runs everything posted before it, then ends the threads; post()
// after join() is an error the caller must not make (the work would never run).
#pragma once

#include <semaphore.h>

#include <atomic>
#include <boost/lockfree/queue.hpp>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

namespace allox::extender {

class BlockingPool {
 public:
  // Starts `threads` threads; each runs `on_start` (naming itself, entering its class) before
  // any work, and the constructor returns once all have.
  BlockingPool(std::size_t threads, const std::function<void()>& on_start);
  ~BlockingPool();  // join()
  BlockingPool(const BlockingPool&) = delete;
  BlockingPool& operator=(const BlockingPool&) = delete;

  void post(std::function<void()> work);
  // Idempotent. Not from one of the pool's own threads.
  void join();

 private:
  void run();

  // Owned pointers (the queue holds trivially copyable values only); freed as they run, or by
  // the destructor for any left.
  boost::lockfree::queue<std::function<void()>*> queue_{64};
  // One count per work posted, and one per thread at join(): a thread that takes a count and
  // finds the queue empty was told to end. A POSIX semaphore, not std::counting_semaphore:
  // GCC 12's can lose a wake-up and leave a thread asleep for good (GCC bug 104928).
  sem_t pending_{};
  std::vector<std::thread> threads_;
  std::atomic<bool> joined_{false};
};

}  // namespace allox::extender
