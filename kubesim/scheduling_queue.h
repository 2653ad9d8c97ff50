// kube-scheduler v1.28's scheduling queue (pkg/scheduler/internal/queue), on simulated time:
//   activeQ         pods ready to be tried, highest spec.priority first, then oldest first;
//   backoffQ        pods that failed and wait out their back-off (1 s doubling to 10 s per
//                   attempt) before they return to activeQ;
//   unschedulable   pods no node fits. They leave only when
//                   - a cluster event that may help them happens (move_all): the event must be
//                     one the plugins that rejected the pod register for (NodeResourcesFit:
//                     an assigned pod deleted, a node added or updated; NodeUnschedulable,
//                     TaintToleration and NodeAffinity: a node added or updated, a change of
//                     its taints among them); a pod rejected by an
//                     extender alone has no such plugin and moves on any event;
//                   - the pod itself is updated (not its status): update();
//                   - it has sat there for the unschedulable timeout (5 min), checked every 30 s.
//                   A moved pod goes to backoffQ while its back-off lasts, else to activeQ.
//   gated           pods with spec.schedulingGates; never tried until an update removes them.
// A move requested while a pod is being tried (between pop() and its failure) sends the pod to
// backoffQ instead of unschedulable, as kube-scheduler's moveRequestCycle does: the event it
// missed may be the one that helps it.
// Not thread-safe: owned by the emulator's scheduling thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace allox::emulator {

enum class ClusterEvent { kAssignedPodDelete, kNodeAdd, kNodeUpdate, kUnschedulableTimeout };
const char* cluster_event_name(ClusterEvent event);

struct QueueTimings {
  double initial_backoff = 1;          // podInitialBackoffSeconds
  double max_backoff = 10;             // podMaxBackoffSeconds
  double unschedulable_timeout = 300;  // podMaxInUnschedulablePodsDuration
  double leftover_flush_period = 30;   // how often that timeout is checked
  double backoff_flush_period = 1;
};

class SchedulingQueue {
 public:
  explicit SchedulingQueue(QueueTimings timings = {}) : timings_(timings) {}

  // A new pending pod (or one the cache saw again).
  void add(const std::string& key, int priority, bool gated, double now);
  // The pod itself changed (not only its status). Gated pods whose gates are gone and
  // unschedulable pods move to activeQ or backoffQ; returns true when it moved.
  bool update(const std::string& key, int priority, bool gated, double now);
  void remove(const std::string& key);
  bool contains(const std::string& key) const;

  // The next pod to try, after moving due back-offs and timed-out unschedulable pods.
  std::optional<std::string> pop(double now);
  // The pod popped last failed: no node fits. plugins: the in-tree filters that rejected a
  // node (empty when only extenders did).
  void unschedulable(const std::string& key, const std::set<std::string>& plugins, double now);
  // The pod popped last failed with an error (extender fault, bind failure): back-off.
  void failed(const std::string& key, double now);

  // A cluster event; returns the keys it moved out of unschedulable.
  std::vector<std::string> move_all(ClusterEvent event, double now);
  // Pods moved by the unschedulable timeout since the last call (for logs and tests).
  std::vector<std::string> take_timed_out();

  // The earliest simulated time at which pop() may return something new, or +inf.
  double next_due(double now) const;

  std::size_t active() const { return active_.size(); }
  std::size_t backoff() const { return backoff_.size(); }
  std::size_t unschedulable_count() const;
  std::size_t gated() const;

 private:
  struct Entry {
    int priority = 0;
    bool gated = false;
    int attempts = 0;
    double queued_at = 0;  // when it entered activeQ (ordering)
    double backoff_until = 0;
    double unschedulable_since = 0;
    std::set<std::string> plugins;
    std::uint64_t popped_cycle = 0;
    enum class Where {
      kActive,
      kBackoff,
      kUnschedulable,
      kGated,
      kInFlight
    } where = Where::kActive;
  };
  struct ActiveKey {
    int priority;
    double queued_at;
    std::string key;
    bool operator<(const ActiveKey& o) const {
      if (priority != o.priority) return priority > o.priority;
      if (queued_at != o.queued_at) return queued_at < o.queued_at;
      return key < o.key;
    }
  };
  void to_active(const std::string& key, Entry& e, double now);
  void to_active_or_backoff(const std::string& key, Entry& e, double now);
  void detach(const std::string& key, Entry& e);
  // A popped pod's attempt failed: detached, attempts counted, its back-off set. Null if unknown.
  Entry* attempt_failed(const std::string& key, double now);
  void to_gated(const std::string& key, Entry& e);
  void flush(double now);
  double backoff_for(const Entry& e) const;
  bool event_helps(const Entry& e, ClusterEvent event) const;

  QueueTimings timings_;
  std::map<std::string, Entry> entries_;
  std::set<ActiveKey> active_;
  std::set<std::pair<double, std::string>> backoff_;
  std::set<std::string> unschedulable_, gated_;
  std::uint64_t cycle_ = 0, move_request_cycle_ = 0;
  double last_leftover_flush_ = -1;
  std::vector<std::string> timed_out_;
};

}  // namespace allox::emulator
