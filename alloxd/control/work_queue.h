// A rate-limited, de-duplicating queue of keys, with client-go's workqueue semantics: what the
// controller's watch handlers feed ("look at this job again") and its workers drain.
//
// The problem: events arrive far faster than the work they ask for (hundreds of watch events a
// second while a backlog binds, most for the same few keys), work for one key must never run on
// two workers at once, and a failing key must back off without holding up the others.
//
// Guarantees:
//   - add(key): a key that waits is not added twice (the one entry keeps its place). A key added
//     while a worker processes it (between get() and done()) waits until done(), then is handed
//     out once more: never to two workers at once, never lost.
//   - Priorities: a key added as kAdmit is handed out before every kBackground key (a job the
//     plan starts now must not wait behind thousands of deletions); within a priority, in the
//     order added. Adding a waiting key again as kAdmit raises it; never lowers it.
//   - add_after(key, d): added once d has passed on the injected clock (the earliest of several
//     delays wins); d <= 0 is add(). add_rate_limited(key): add_after with the key's own
//     exponential back-off (kube/backoff.h: initial, 2·initial, … up to max, without jitter),
//     one step further at each call until forget(key).
//   - Bounded: at `capacity` keys waiting (or as many delayed), a new key is dropped and
//     counted; a key already there is never dropped.
//   - get() blocks until a key is ready (or the queue shuts down: then std::nullopt); try_get()
//     does not block (tests drive it with a stepped clock). Delays are measured on `now`; a
//     blocked get() waits for the earliest delay on the real steady clock, so with a stepped
//     clock call tick() after stepping it.
//   - shutdown() drops what waits or is delayed (counted as dropped), wakes every get(), and
//     refuses later adds; keys in process still take done().
//
// Thread-safe: every method from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace allox::extender {

enum class WorkPriority {
  kAdmit,       // starts a job: remove a gate, nudge, admit or roll back a gang
  kBackground,  // tidies up: delete a variant, write an event
};

struct WorkQueueOptions {
  std::chrono::milliseconds backoff_initial{100};
  std::chrono::milliseconds backoff_max{5000};
  std::size_t capacity = 100000;
  // The clock delays are measured on; unset: steady_clock.
  std::function<std::chrono::steady_clock::time_point()> now;
};

class WorkQueue {
 public:
  using Clock = std::chrono::steady_clock;
  struct Item {
    std::string key;
    WorkPriority priority = WorkPriority::kBackground;
  };
  struct Counts {
    std::uint64_t added = 0;    // keys queued (a key waiting already is not counted again)
    std::uint64_t merged = 0;   // adds of a key that waited already, or ran
    std::uint64_t retried = 0;  // add_rate_limited calls
    std::uint64_t dropped = 0;  // refused: full, or dropped by shutdown()
    std::size_t waiting = 0, delayed = 0, processing = 0;
  };

  explicit WorkQueue(WorkQueueOptions options = {});

  // False when the key was dropped (full, or shut down).
  bool add(const std::string& key, WorkPriority priority = WorkPriority::kBackground);
  bool add_after(const std::string& key, Clock::duration delay,
                 WorkPriority priority = WorkPriority::kBackground);
  bool add_rate_limited(const std::string& key, WorkPriority priority = WorkPriority::kBackground);
  // The key's back-off starts over (its work succeeded).
  void forget(const std::string& key);
  // add_rate_limited calls since the key's last forget().
  int retries(const std::string& key) const;

  std::optional<Item> get();
  std::optional<Item> try_get();
  // The worker is through with the key; if it was added meanwhile, it waits again now.
  void done(const std::string& key);
  // Wakes a blocked get() to look at the clock again (a stepped clock moved).
  void tick();
  void shutdown();
  bool shutting_down() const;

  // True while `key` waits (not delayed) or is processed.
  bool pending(const std::string& key) const;
  // True when nothing waits or is processed (delayed keys are future work, not pending work).
  bool idle() const;
  // Blocks until idle(), or until `timeout` of real time; whether it is (tests, quiet points).
  bool wait_idle(std::chrono::milliseconds timeout) const;
  Counts counts() const;

 private:
  struct Waiting {
    WorkPriority priority;
    std::uint64_t ticket;  // the entry in the order that is this key's; older ones are stale
  };
  struct Delayed {
    Clock::time_point due;
    WorkPriority priority;
  };
  Clock::time_point now() const { return options_.now ? options_.now() : Clock::now(); }
  // Each under mu_.
  bool add_locked(const std::string& key, WorkPriority priority);
  void queue_locked(const std::string& key, WorkPriority priority);
  void promote_due_locked();
  std::optional<Item> pop_locked();

  WorkQueueOptions options_;
  mutable std::mutex mu_;
  // Workers blocked in get() wait on cv_, woken one per ready key; wait_idle() on idle_cv_,
  // woken when the last key in process is done.
  mutable std::condition_variable cv_;
  mutable std::condition_variable idle_cv_;
  // Waiting keys. The orders hold (key, ticket); an entry whose ticket is not the key's current
  // one (the key was raised to kAdmit, or handed out) is skipped when reached.
  std::unordered_map<std::string, Waiting> waiting_;
  std::deque<std::pair<std::string, std::uint64_t>> admit_order_, background_order_;
  std::uint64_t next_ticket_ = 0;
  std::unordered_set<std::string> processing_;
  // Keys added while processed: queued again by done(), at this priority.
  std::unordered_map<std::string, WorkPriority> dirty_while_processing_;
  std::unordered_map<std::string, Delayed> delayed_;
  std::multimap<Clock::time_point, std::string> due_;  // delayed_ by time; stale entries skipped
  std::unordered_map<std::string, int> failures_;
  bool shutting_down_ = false;
  Counts counts_;
};

}  // namespace allox::extender
