#include "alloxd/control/action_queue.h"

#include <algorithm>
#include <future>

#include "core/log.h"
#include "core/thread_priority.h"
#include "kube/backoff.h"

namespace allox::extender {

ActionQueue::ActionQueue(ActionQueueOptions options, std::function<bool()> allowed)
    : options_(options), allowed_(std::move(allowed)) {}

ActionQueue::~ActionQueue() {
  stop();
}

void ActionQueue::start() {
  std::vector<std::future<void>> running;
  {
    std::lock_guard lock(mu_);
    if (!workers_.empty() || stopping_) return;
    for (int i = 0; i < std::max(1, options_.workers); ++i) {
      std::promise<void> named;
      running.push_back(named.get_future());
      workers_.emplace_back([this, named = std::move(named)]() mutable {
        become_background_thread("allox-actions");
        named.set_value();
        loop();
      });
    }
  }
  for (std::future<void>& worker : running) worker.wait();
}

void ActionQueue::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    counts_.dropped += entries_.size();
    entries_.clear();
    admit_order_.clear();
    background_order_.clear();
  }
  cv_.notify_all();
  for (std::thread& worker : workers_) worker.join();
  workers_.clear();
}

bool ActionQueue::submit(const std::string& key, std::function<Status()> action,
                         ActionPriority priority) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      it->second.action = std::move(action);  // the latest intent; keeps its place and attempts
      return true;
    }
    if (entries_.size() >= options_.capacity) {
      ++counts_.dropped;
      return false;
    }
    entries_[key] = Entry{std::move(action), 0, {}, priority};
    ++submissions_;
    order_of(priority).push_back(key);
  }
  cv_.notify_all();
  return true;
}

bool ActionQueue::pending(const std::string& key) const {
  std::lock_guard lock(mu_);
  return entries_.count(key) > 0 || running_.count(key) > 0;
}

ActionQueue::Counts ActionQueue::counts() const {
  std::lock_guard lock(mu_);
  Counts counts = counts_;
  counts.waiting = entries_.size();
  return counts;
}

bool ActionQueue::idle() const {
  std::lock_guard lock(mu_);
  return entries_.empty() && running_.empty();
}

bool ActionQueue::wait_idle(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return entries_.empty() && running_.empty(); });
}

void ActionQueue::loop() {
  kube::Backoff backoff(options_.backoff_initial, options_.backoff_max);
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !entries_.empty(); });
    if (stopping_) return;
    // The first action whose back-off has passed and whose key no other worker runs,
    // admissions first; else wait for the earliest one, or for another worker to finish.
    auto now = std::chrono::steady_clock::now();
    auto is_ready = [&](const std::string& k) {
      return entries_[k].not_before <= now && running_.count(k) == 0;
    };
    std::deque<std::string>* order = &admit_order_;
    auto ready = std::find_if(order->begin(), order->end(), is_ready);
    if (ready == order->end()) {
      order = &background_order_;
      ready = std::find_if(order->begin(), order->end(), is_ready);
    }
    if (ready == order->end()) {
      auto earliest = now + options_.backoff_max;
      for (const auto& [k, entry] : entries_) earliest = std::min(earliest, entry.not_before);
      // A new submission wakes it (an admission must not wait out another action's back-off),
      // and so does the end of an action (its key, re-submitted meanwhile, may run now).
      const std::uint64_t seen = submissions_, ended = finished_;
      cv_.wait_until(lock, earliest,
                     [&] { return stopping_ || submissions_ != seen || finished_ != ended; });
      continue;
    }
    std::string key = *ready;
    order->erase(ready);
    Entry entry = std::move(entries_[key]);
    entries_.erase(key);
    running_.insert(key);
    lock.unlock();
    bool allowed = !allowed_ || allowed_();
    Status status = allowed ? entry.action() : OkStatus();
    lock.lock();
    running_.erase(key);
    ++finished_;
    if (!allowed) {
      ++counts_.refused;
    } else if (status) {
      ++counts_.done;
    } else if (++entry.attempts >= options_.max_attempts || stopping_) {
      ++counts_.failed;
      // Nobody waits on an action: this line is the only trace of one that gave up.
      log_warn("action failed; giving up",
               {{"action", key}, {"attempts", entry.attempts}, {"error", status.message()}});
    } else if (!entries_.count(key)) {  // not re-submitted meanwhile: retry later
      ++counts_.retried;
      backoff.reset();
      for (int i = 0; i < entry.attempts - 1; ++i) backoff.next();
      const auto delay = backoff.next();
      log_debug("action failed; retrying", {{"action", key},
                                            {"attempt", entry.attempts},
                                            {"retry_in_ms", static_cast<long long>(delay.count())},
                                            {"error", status.message()}});
      entry.not_before = std::chrono::steady_clock::now() + delay;
      const ActionPriority priority = entry.priority;
      entries_[key] = std::move(entry);
      order_of(priority).push_back(key);
    }
    cv_.notify_all();
  }
}

}  // namespace allox::extender
