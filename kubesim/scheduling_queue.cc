#include "kubesim/scheduling_queue.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace allox::emulator {

const char* cluster_event_name(ClusterEvent event) {
  switch (event) {
    case ClusterEvent::kAssignedPodDelete:
      return "AssignedPodDelete";
    case ClusterEvent::kNodeAdd:
      return "NodeAdd";
    case ClusterEvent::kNodeUpdate:
      return "NodeUpdate";
    case ClusterEvent::kUnschedulableTimeout:
      return "UnschedulableTimeout";
  }
  return "?";
}

double SchedulingQueue::backoff_for(const Entry& e) const {
  if (e.attempts <= 0) return 0;
  double backoff = timings_.initial_backoff * std::pow(2.0, e.attempts - 1);
  return std::min(backoff, timings_.max_backoff);
}

void SchedulingQueue::detach(const std::string& key, Entry& e) {
  if (e.where == Entry::Where::kActive) active_.erase({e.priority, e.queued_at, key});
  if (e.where == Entry::Where::kBackoff) backoff_.erase({e.backoff_until, key});
  if (e.where == Entry::Where::kUnschedulable) unschedulable_.erase(key);
  if (e.where == Entry::Where::kGated) gated_.erase(key);
}

void SchedulingQueue::to_gated(const std::string& key, Entry& e) {
  detach(key, e);
  e.where = Entry::Where::kGated;
  gated_.insert(key);
}

void SchedulingQueue::to_active(const std::string& key, Entry& e, double now) {
  detach(key, e);
  e.where = Entry::Where::kActive;
  e.queued_at = now;
  active_.insert({e.priority, e.queued_at, key});
}

void SchedulingQueue::to_active_or_backoff(const std::string& key, Entry& e, double now) {
  if (e.gated) {
    to_gated(key, e);
    return;
  }
  if (e.backoff_until > now) {
    detach(key, e);
    e.where = Entry::Where::kBackoff;
    backoff_.insert({e.backoff_until, key});
  } else {
    to_active(key, e, now);
  }
}

void SchedulingQueue::add(const std::string& key, int priority, bool gated, double now) {
  auto [it, fresh] = entries_.try_emplace(key);
  Entry& e = it->second;
  if (!fresh) return;
  e.priority = priority;
  e.gated = gated;
  e.where = Entry::Where::kInFlight;  // attached nowhere yet
  if (gated) {
    to_gated(key, e);
  } else {
    to_active(key, e, now);
  }
}

bool SchedulingQueue::update(const std::string& key, int priority, bool gated, double now) {
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    add(key, priority, gated, now);
    return !gated;
  }
  Entry& e = it->second;
  const bool was_waiting =
      e.where == Entry::Where::kUnschedulable || e.where == Entry::Where::kGated;
  if (e.where == Entry::Where::kActive && e.priority != priority) {
    active_.erase({e.priority, e.queued_at, key});
    e.priority = priority;
    active_.insert({e.priority, e.queued_at, key});
  }
  e.priority = priority;
  e.gated = gated;
  if (e.where == Entry::Where::kInFlight) {
    // Being tried now: remember that something changed, like a move request.
    move_request_cycle_ = cycle_;
    return false;
  }
  if (!was_waiting) return false;
  if (gated) return false;
  to_active_or_backoff(key, e, now);
  return true;
}

void SchedulingQueue::remove(const std::string& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  detach(key, it->second);
  entries_.erase(it);
}

bool SchedulingQueue::contains(const std::string& key) const {
  return entries_.count(key) > 0;
}

void SchedulingQueue::flush(double now) {
  while (!backoff_.empty() && backoff_.begin()->first <= now) {
    const std::string key = backoff_.begin()->second;
    backoff_.erase(backoff_.begin());
    Entry& e = entries_.at(key);
    e.where = Entry::Where::kActive;  // already out of backoff_
    e.queued_at = now;
    active_.insert({e.priority, e.queued_at, key});
  }
  if (last_leftover_flush_ < 0) last_leftover_flush_ = now;
  while (now - last_leftover_flush_ >= timings_.leftover_flush_period) {
    last_leftover_flush_ += timings_.leftover_flush_period;
    const double at = last_leftover_flush_;
    std::vector<std::string> due;
    for (const std::string& key : unschedulable_) {
      if (at - entries_.at(key).unschedulable_since >= timings_.unschedulable_timeout)
        due.push_back(key);
    }
    for (const std::string& key : due) {
      to_active_or_backoff(key, entries_.at(key), now);
      timed_out_.push_back(key);
    }
  }
}

std::optional<std::string> SchedulingQueue::pop(double now) {
  flush(now);
  if (active_.empty()) return std::nullopt;
  const std::string key = active_.begin()->key;
  active_.erase(active_.begin());
  Entry& e = entries_.at(key);
  e.where = Entry::Where::kInFlight;
  e.popped_cycle = ++cycle_;
  return key;
}

SchedulingQueue::Entry* SchedulingQueue::attempt_failed(const std::string& key, double now) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return nullptr;
  Entry& e = it->second;
  detach(key, e);
  e.attempts++;
  e.backoff_until = now + backoff_for(e);
  return &e;
}

void SchedulingQueue::unschedulable(const std::string& key, const std::set<std::string>& plugins,
                                    double now) {
  Entry* found = attempt_failed(key, now);
  if (found == nullptr) return;
  Entry& e = *found;
  e.plugins = plugins;
  if (move_request_cycle_ >= e.popped_cycle) {
    // Something moved while this pod was being tried: it may help, so only back off.
    e.where = Entry::Where::kBackoff;
    backoff_.insert({e.backoff_until, key});
    return;
  }
  e.where = Entry::Where::kUnschedulable;
  e.unschedulable_since = now;
  unschedulable_.insert(key);
}

void SchedulingQueue::failed(const std::string& key, double now) {
  Entry* e = attempt_failed(key, now);
  if (e == nullptr) return;
  e->where = Entry::Where::kBackoff;
  backoff_.insert({e->backoff_until, key});
}

bool SchedulingQueue::event_helps(const Entry& e, ClusterEvent event) const {
  if (event == ClusterEvent::kUnschedulableTimeout || e.plugins.empty()) return true;
  for (const std::string& plugin : e.plugins) {
    if (plugin == "NodeResourcesFit" &&
        (event == ClusterEvent::kAssignedPodDelete || event == ClusterEvent::kNodeAdd ||
         event == ClusterEvent::kNodeUpdate)) {
      return true;
    }
    if ((plugin == "NodeUnschedulable" || plugin == "NodeName" || plugin == "TaintToleration" ||
         plugin == "NodeAffinity") &&
        (event == ClusterEvent::kNodeAdd || event == ClusterEvent::kNodeUpdate)) {
      return true;
    }
  }
  return false;
}

std::vector<std::string> SchedulingQueue::move_all(ClusterEvent event, double now) {
  move_request_cycle_ = cycle_;
  std::vector<std::string> moved;
  for (const std::string& key : unschedulable_) {
    if (event_helps(entries_.at(key), event)) moved.push_back(key);
  }
  for (const std::string& key : moved) to_active_or_backoff(key, entries_.at(key), now);
  return moved;
}

std::vector<std::string> SchedulingQueue::take_timed_out() {
  std::vector<std::string> out;
  out.swap(timed_out_);
  return out;
}

double SchedulingQueue::next_due(double now) const {
  if (!active_.empty()) return now;
  double due = std::numeric_limits<double>::infinity();
  if (!backoff_.empty()) due = backoff_.begin()->first;
  if (unschedulable_count() > 0) {
    double next_flush =
        (last_leftover_flush_ < 0 ? now : last_leftover_flush_) + timings_.leftover_flush_period;
    due = std::min(due, next_flush);
  }
  return due;
}

std::size_t SchedulingQueue::unschedulable_count() const {
  return unschedulable_.size();
}

std::size_t SchedulingQueue::gated() const {
  return gated_.size();
}

}  // namespace allox::emulator
