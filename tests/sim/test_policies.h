// Tiny policies for exercising the event engine without the fairness module.
#pragma once

#include <algorithm>
#include <limits>
#include <string>

#include "fairness/policy.h"

namespace allox::testing {

// Queue order; each job goes to the idle machine whose device has its smallest estimate.
// Starts as many jobs as it can per call.
class GreedyFastestIdle : public SchedulingPolicy {
 public:
  std::string name() const override { return "greedy"; }
  Expected<Decision> decide(const ClusterState& state) override {
    Decision d;
    std::vector<bool> idle = state.idle;
    for (const QueuedJob& q : state.queue) {
      std::size_t best = idle.size();
      double best_time = std::numeric_limits<double>::infinity();
      for (std::size_t m = 0; m < idle.size(); ++m) {
        if (!idle[m]) continue;
        auto t = q.job->time_on(state.machines[m].device);
        if (t && *t < best_time) best_time = *t, best = m;
      }
      if (best == idle.size()) continue;
      idle[best] = false;
      d.start.push_back({q.job->id, best});
    }
    return d;
  }
};

// Like GreedyFastestIdle but one start per call, to exercise the re-decide loop.
class OneAtATime : public GreedyFastestIdle {
 public:
  std::string name() const override { return "one-at-a-time"; }
  Expected<Decision> decide(const ClusterState& state) override {
    Expected<Decision> d = GreedyFastestIdle::decide(state);
    if (d.ok() && d->start.size() > 1) d->start.resize(1);
    return d;
  }
};

// Single-device preemptive shortest-remaining-estimate-first: preempts the running job with the
// longest remaining estimate when a queued job's remaining estimate is shorter, and starts the
// queued job on the freed machine in the same decision.
class TinySrpt : public SchedulingPolicy {
 public:
  std::string name() const override { return "tiny-srpt"; }
  bool preemptive() const override { return true; }
  Expected<Decision> decide(const ClusterState& state) override {
    Decision d;
    auto remaining = [](const QueuedJob& q) {
      return q.remaining.empty() ? q.job->time.begin()->second : q.remaining.begin()->second;
    };
    std::vector<const QueuedJob*> queue;
    for (const QueuedJob& q : state.queue) queue.push_back(&q);
    std::stable_sort(queue.begin(), queue.end(),
                     [&](auto* a, auto* b) { return remaining(*a) < remaining(*b); });
    std::size_t next = 0;
    for (std::size_t m = 0; m < state.idle.size() && next < queue.size(); ++m) {
      if (state.idle[m]) d.start.push_back({queue[next++]->job->id, m});
    }
    if (!d.start.empty() || next >= queue.size()) return d;
    const RunningJob* longest = nullptr;
    for (const RunningJob& r : state.running) {
      if (!longest || r.estimated_finish > longest->estimated_finish) longest = &r;
    }
    if (longest && longest->estimated_finish - state.now > remaining(*queue[next])) {
      d.preempt.push_back(longest->job->id);
      d.start.push_back({queue[next]->job->id, longest->machine});  // the freed machine
    }
    return d;
  }
};

// Returns a fixed decision once, then nothing: for contract-violation tests.
class Scripted : public SchedulingPolicy {
 public:
  explicit Scripted(Decision d, bool preemptive = false)
      : d_(std::move(d)), preemptive_(preemptive) {}
  std::string name() const override { return "scripted"; }
  bool preemptive() const override { return preemptive_; }
  Expected<Decision> decide(const ClusterState&) override {
    Decision out;
    std::swap(out, d_);
    return out;
  }

 private:
  Decision d_;
  bool preemptive_;
};

}  // namespace allox::testing
