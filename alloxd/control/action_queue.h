// Background actions on the cluster (remove a gate, delete a variant, nudge, write an event),
// kept off every request path: kube-scheduler's verbs never wait for them.
//
// `workers` threads run them, admissions first: a gate removal or a nudge starts a job and is
// what a freed machine waits for, so it never queues behind another job's thousands of
// deletions or events (one tenant's 3,000 variants must not delay another's start). Each action
// is one API round trip, mostly waiting on the network: several run at once, so a plan that
// starts a thousand jobs costs a thousand round trips over `workers`, not one after another.
// Within a priority, actions start in submission order (and may end in any order). Each action
// has a key ("delete lab/bert-cpu"); submitting a key that is already waiting replaces it (the
// latest intent wins, never twice), and a key never runs on two workers at once.
// A failing action is retried with bounded exponential back-off (kube/backoff.h) up to
// max_attempts, then dropped, counted and logged as a warning (a retry is a debug line): the
// controller is level-triggered and submits it again on its next pass if it is still wanted.
// `allowed()` is asked before each run (only the Lease holder acts); a refused action is dropped.
//
// Thread-safe. stop() drops what waits and returns once the actions in flight have ended (each
// is one bounded API call).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/result.h"

namespace allox::extender {

struct ActionQueueOptions {
  int max_attempts = 5;
  std::chrono::milliseconds backoff_initial{100};
  std::chrono::milliseconds backoff_max{5000};
  std::size_t capacity = 100000;  // beyond this, submissions are dropped (and counted)
  int workers = 4;
};

enum class ActionPriority {
  kAdmit,       // starts a job: remove a gate, nudge
  kBackground,  // tidies up: delete a variant, write an event
};

class ActionQueue {
 public:
  explicit ActionQueue(ActionQueueOptions options = {}, std::function<bool()> allowed = nullptr);
  ~ActionQueue();

  // start() returns once every worker runs, named and in its class (thread_priority.h), as
  // HttpServer::start's: whoever looks at the process after start-up (`top -H`, a test) sees them.
  void start();
  void stop();

  // False when the queue is full or stopped. A key re-submitted while it waits keeps its place
  // (and the priority it was first given).
  bool submit(const std::string& key, std::function<Status()> action,
              ActionPriority priority = ActionPriority::kBackground);
  // True while `key` waits or runs.
  bool pending(const std::string& key) const;

  struct Counts {
    std::uint64_t done = 0, retried = 0, failed = 0, refused = 0, dropped = 0;
    std::size_t waiting = 0;
  };
  Counts counts() const;
  // True when nothing waits or runs.
  bool idle() const;
  // Waits until nothing waits or runs (tests), at most `timeout`. True when idle.
  bool wait_idle(std::chrono::milliseconds timeout) const;

 private:
  struct Entry {
    std::function<Status()> action;
    int attempts = 0;
    std::chrono::steady_clock::time_point not_before{};
    ActionPriority priority = ActionPriority::kBackground;
  };
  void loop();
  std::deque<std::string>& order_of(ActionPriority priority) {
    return priority == ActionPriority::kAdmit ? admit_order_ : background_order_;
  }

  ActionQueueOptions options_;
  std::function<bool()> allowed_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::deque<std::string> admit_order_, background_order_;
  std::map<std::string, Entry> entries_;
  std::set<std::string> running_;  // keys a worker runs now
  std::uint64_t submissions_ = 0, finished_ = 0;
  bool stopping_ = false;
  Counts counts_;
  std::vector<std::thread> workers_;
};

}  // namespace allox::extender
