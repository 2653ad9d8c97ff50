// Runs short sections (a change to the book under its exclusive lock) on one thread of its own,
// in the class of the threads that read what they change.
//
// Why: alloxd's writers to the book are its background threads (the watch, the controller, the
// planner, /bind's pool), which may run in the idle class (thread_priority.h). A /filter that
// needs the book's shared lock while such a writer holds it exclusively waits for the writer, and
// a writer preempted by anything of a higher class gets its core back only when nothing else
// wants it: the reader waits on the lowest class on the machine (priority inversion; docs/
// performance.md, "Writers of the book"). Run on the delegate, the section holds the lock in
// the request threads' class (RequestClass), so a reader waits only for the section's own work.
//
// run() is thread-safe and synchronous: it returns the section's result, or rethrows what it
// threw, once the section has run. A section must not call run() (it would wait on itself).
#pragma once

#include <semaphore.h>

#include <exception>
#include <functional>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "alloxd/http/blocking_pool.h"

namespace allox::extender {

class WriteDelegate {
 public:
  // Starts the thread; it runs `on_start` (naming itself, entering its class) before any section.
  explicit WriteDelegate(const std::function<void()>& on_start) : thread_(1, on_start) {}

  template <typename Section>
  std::invoke_result_t<Section&> run(Section&& section) {
    using Result = std::invoke_result_t<Section&>;
    Done done;
    if constexpr (std::is_void_v<Result>) {
      thread_.post([&] {
        try {
          section();
        } catch (...) {
          done.error = std::current_exception();
        }
        done.signal();
      });
      done.wait();
      if (done.error) std::rethrow_exception(done.error);
    } else {
      std::optional<Result> result;
      thread_.post([&] {
        try {
          result.emplace(section());
        } catch (...) {
          done.error = std::current_exception();
        }
        done.signal();
      });
      done.wait();
      if (done.error) std::rethrow_exception(done.error);
      return std::move(*result);
    }
  }

 private:
  // One section's completion: a POSIX semaphore (see blocking_pool.h for why not std's).
  struct Done {
    Done() {
      if (::sem_init(&posted, 0, 0) != 0) throw std::runtime_error("write delegate: no semaphore");
    }
    ~Done() { ::sem_destroy(&posted); }
    Done(const Done&) = delete;
    Done& operator=(const Done&) = delete;
    void signal() { ::sem_post(&posted); }
    void wait() {
      while (::sem_wait(&posted) != 0) {
      }
    }
    sem_t posted{};
    std::exception_ptr error;
  };

  BlockingPool thread_;
};

}  // namespace allox::extender
