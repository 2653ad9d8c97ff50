#include "alloxd/control/work_queue.h"

#include <algorithm>

#include "kube/backoff.h"

namespace allox::extender {

WorkQueue::WorkQueue(WorkQueueOptions options) : options_(std::move(options)) {}

bool WorkQueue::add(const std::string& key, WorkPriority priority) {
  bool queued;
  {
    std::lock_guard lock(mu_);
    queued = add_locked(key, priority);
  }
  if (queued) cv_.notify_one();  // one key: one worker (get() wakes another for the next)
  return queued;
}

bool WorkQueue::add_locked(const std::string& key, WorkPriority priority) {
  if (shutting_down_) {
    ++counts_.dropped;
    return false;
  }
  if (processing_.count(key)) {
    // Handed out again after done(): the worker that has it may have read the state too early.
    auto [it, fresh] = dirty_while_processing_.try_emplace(key, priority);
    if (!fresh) it->second = std::min(it->second, priority);
    ++counts_.merged;
    return true;
  }
  if (auto it = waiting_.find(key); it != waiting_.end()) {
    ++counts_.merged;
    if (priority < it->second.priority) queue_locked(key, priority);  // raised: a new entry
    return true;
  }
  if (waiting_.size() >= options_.capacity) {
    ++counts_.dropped;
    return false;
  }
  ++counts_.added;
  queue_locked(key, priority);
  return true;
}

void WorkQueue::queue_locked(const std::string& key, WorkPriority priority) {
  const std::uint64_t ticket = ++next_ticket_;
  waiting_[key] = {priority, ticket};
  (priority == WorkPriority::kAdmit ? admit_order_ : background_order_).emplace_back(key, ticket);
}

bool WorkQueue::add_after(const std::string& key, Clock::duration delay, WorkPriority priority) {
  if (delay <= Clock::duration::zero()) return add(key, priority);
  bool sooner = false;
  {
    std::lock_guard lock(mu_);
    if (shutting_down_) {
      ++counts_.dropped;
      return false;
    }
    const Clock::time_point due = now() + delay;
    // Blocked get()s wait for the earliest delay: only an earlier one changes that.
    const bool earliest = due_.empty() || due < due_.begin()->first;
    auto it = delayed_.find(key);
    if (it == delayed_.end()) {
      if (delayed_.size() >= options_.capacity) {
        ++counts_.dropped;
        return false;
      }
      delayed_[key] = {due, priority};
      due_.emplace(due, key);
      sooner = earliest;
    } else {
      it->second.priority = std::min(it->second.priority, priority);
      if (due < it->second.due) {
        it->second.due = due;
        due_.emplace(due, key);  // the later entry goes stale
        sooner = earliest;
      }
    }
  }
  // One blocked get() is enough to wait for it (it wakes another when it takes the key and more
  // are ready); waking every worker for each requeue had them all find nothing and sleep again.
  if (sooner) cv_.notify_one();
  return true;
}

bool WorkQueue::add_rate_limited(const std::string& key, WorkPriority priority) {
  int attempt;
  {
    std::lock_guard lock(mu_);
    attempt = ++failures_[key];
    ++counts_.retried;
  }
  kube::Backoff backoff(options_.backoff_initial, options_.backoff_max, /*jitter=*/0);
  std::chrono::milliseconds delay{0};
  for (int i = 0; i < attempt; ++i) delay = backoff.next();
  return add_after(key, delay, priority);
}

void WorkQueue::forget(const std::string& key) {
  std::lock_guard lock(mu_);
  failures_.erase(key);
}

int WorkQueue::retries(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void WorkQueue::promote_due_locked() {
  const Clock::time_point at = now();
  while (!due_.empty() && due_.begin()->first <= at) {
    auto [due, key] = *due_.begin();
    due_.erase(due_.begin());
    auto it = delayed_.find(key);
    if (it == delayed_.end() || it->second.due != due) continue;  // stale
    const WorkPriority priority = it->second.priority;
    delayed_.erase(it);
    add_locked(key, priority);
  }
}

std::optional<WorkQueue::Item> WorkQueue::pop_locked() {
  promote_due_locked();
  for (auto* order : {&admit_order_, &background_order_}) {
    while (!order->empty()) {
      auto [key, ticket] = std::move(order->front());
      order->pop_front();
      auto it = waiting_.find(key);
      if (it == waiting_.end() || it->second.ticket != ticket) continue;  // stale
      Item item{key, it->second.priority};
      waiting_.erase(it);
      processing_.insert(key);
      return item;
    }
  }
  return std::nullopt;
}

std::optional<WorkQueue::Item> WorkQueue::get() {
  std::unique_lock lock(mu_);
  while (!shutting_down_) {
    if (auto item = pop_locked()) {
      if (!waiting_.empty()) cv_.notify_one();  // keys a promotion made ready: another worker
      return item;
    }
    if (due_.empty()) {
      cv_.wait(lock);
    } else {
      // The earliest delay, in real time from now (a stepped clock wakes it by tick()).
      cv_.wait_for(lock, std::max(Clock::duration::zero(), due_.begin()->first - now()));
    }
  }
  return std::nullopt;
}

std::optional<WorkQueue::Item> WorkQueue::try_get() {
  std::lock_guard lock(mu_);
  if (shutting_down_) return std::nullopt;
  return pop_locked();
}

void WorkQueue::done(const std::string& key) {
  bool requeued = false, now_idle = false;
  {
    std::lock_guard lock(mu_);
    processing_.erase(key);
    auto it = dirty_while_processing_.find(key);
    if (it != dirty_while_processing_.end()) {
      const WorkPriority priority = it->second;
      dirty_while_processing_.erase(it);
      if (!shutting_down_) {
        ++counts_.added;
        queue_locked(key, priority);  // it had its place: never dropped for capacity
        requeued = true;
      } else {
        ++counts_.dropped;
      }
    }
    now_idle = waiting_.empty() && processing_.empty();
  }
  if (requeued) cv_.notify_one();
  if (now_idle) idle_cv_.notify_all();
}

void WorkQueue::tick() {
  std::lock_guard lock(mu_);
  cv_.notify_all();  // every blocked get() looks at the stepped clock again
}

void WorkQueue::shutdown() {
  {
    std::lock_guard lock(mu_);
    shutting_down_ = true;
    counts_.dropped += waiting_.size() + delayed_.size();
    waiting_.clear();
    admit_order_.clear();
    background_order_.clear();
    delayed_.clear();
    due_.clear();
  }
  cv_.notify_all();
  idle_cv_.notify_all();
}

bool WorkQueue::shutting_down() const {
  std::lock_guard lock(mu_);
  return shutting_down_;
}

bool WorkQueue::pending(const std::string& key) const {
  std::lock_guard lock(mu_);
  return waiting_.count(key) > 0 || processing_.count(key) > 0;
}

bool WorkQueue::idle() const {
  std::lock_guard lock(mu_);
  return waiting_.empty() && processing_.empty();
}

bool WorkQueue::wait_idle(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return idle_cv_.wait_for(lock, timeout,
                           [&] { return waiting_.empty() && processing_.empty(); });
}

WorkQueue::Counts WorkQueue::counts() const {
  std::lock_guard lock(mu_);
  Counts counts = counts_;
  counts.waiting = waiting_.size();
  counts.delayed = delayed_.size();
  counts.processing = processing_.size();
  return counts;
}

}  // namespace allox::extender
