// A kube-scheduler v1.28 emulator: schedules the pending pods of an ApiObjects store the way the
// real scheduler does with extenders (data/kube-extender/real-v1.28/README.md is the spec), on
// a SimClock. It follows the store's changes as kube-scheduler follows its informers, and calls
// the extenders over HTTP with the exact bodies kube-scheduler sends.
//
// One pod at a time (scheduleOne):
//   1. the pod's nominated node (after a preemption) is evaluated alone first;
//   2. in-tree filters, in the default profile's order: NodeUnschedulable (a cordoned node,
//      unless the pod tolerates node.kubernetes.io/unschedulable:NoSchedule), TaintToleration
//      (spec.taints with effect NoSchedule or NoExecute against spec.tolerations), NodeAffinity
//      (spec.nodeSelector and required node affinity; a pod pinned by `metadata.name In` is
//      evaluated on the named nodes alone, as its PreFilter result makes it) and
//      NodeResourcesFit (requests, including cpu and memory, against allocatable minus the
//      assigned non-terminal pods and pods nominated there), on node_snapshot.h's integers,
//      from a rotating start while percentageOfNodesToScore allows. A pod no node passes never
//      reaches an extender, and an extender is asked only about the nodes that passed. A node's
//      cordon, taints, labels and allocatable are re-read on every update of the node, and a
//      change of any is a NodeUpdate for the parked pods;
//   3. extenders' /filter, in order, for extenders interested in the pod (managedResources;
//      empty means every pod), with NodeNames (nodeCacheCapable) or full Nodes;
//   4. no node left: DefaultPreemption looks for lower-priority victims (extenders' /preempt
//      can veto nodes); victims are deleted and the pod's status.nominatedNodeName set (cleared
//      when no node had candidates). The pod is unschedulable: PodScheduled=False condition and
//      a FailedScheduling event with kube-scheduler's FitError text (diagnosis.h), e.g.
//      "0/3 nodes are available: 1 Insufficient cpu, 1 queued: ..., 2 Insufficient
//      nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for
//      incoming pod..";
//   5. one node left: no scoring and no /prioritize. Several: LeastAllocated plus each
//      extender's /prioritize score × weight × 10, best total wins (ties: seeded random);
//   6. assume the pod on the node (its resources are taken in the scheduler's cache) and bind
//      it asynchronously, as kube-scheduler's binding cycle runs in a goroutine: the next pod
//      is scheduled while this one binds, and up to `parallel_binds` binds are in flight at
//      once. A bind goes through the first interested extender with a bindVerb (its /bind is
//      expected to POST the Binding to the API server, as alloxd does), else the default
//      binder (the binding subresource). A failed bind forgets the assumed pod (its node's
//      resources return, an AssignedPodDelete for the other pods) and backs the pod off.
// Pods wait in a SchedulingQueue (scheduling_queue.h): gated pods are never tried, a parked
// pod is retried only on an event that may help it or after 5 simulated minutes.
// The pods of every profile (scheduler name) are scheduled and every extender applies to all.
//
// Thread-safe: start() runs the scheduling thread and `parallel_binds` binder threads; stop()
// ends them (binds not yet sent are dropped); stats() and the observer are safe from any thread
// (the observer is called on the scheduling thread, a bind's outcome included). A stepped
// clock's jumps wake it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "kubesim/api_objects.h"
#include "kubesim/scheduler_config.h"
#include "kubesim/scheduling_queue.h"
#include "kubesim/sim_clock.h"

namespace allox::emulator {

// What the emulator did, for logs, replays and tests.
struct SchedulerEvent {
  enum class Kind {
    kBound,          // node
    kUnschedulable,  // message: kube-scheduler's FitError text
    kMoved,          // message: the cluster event (AssignedPodDelete, UnschedulableTimeout ...)
    kPreempted,      // node: the nominated node; message: the victims
    kBindFailed,     // message
    kError,          // message: an extender fault
  } kind = Kind::kBound;
  double at = 0;    // simulated Unix seconds
  std::string pod;  // namespace/name
  std::string node;
  std::string message;
};
const char* scheduler_event_name(SchedulerEvent::Kind kind);

struct SchedulerStats {
  std::uint64_t attempts = 0, bound = 0, unschedulable = 0, bind_failures = 0, errors = 0;
  std::uint64_t filter_calls = 0, prioritize_calls = 0, bind_calls = 0, preempt_calls = 0;
  std::uint64_t timeouts = 0;             // pods moved by the unschedulable timeout
  std::vector<double> filter_seconds;     // wall-clock latency of each /filter call
  std::vector<std::size_t> filter_nodes;  // nodes sent in each /filter call (same order)
  std::vector<double> bind_seconds;       // wall-clock latency of each /bind call
  std::size_t max_binds_in_flight = 0;    // assumed pods whose bind had not ended, at most
  std::uint64_t events_dropped = 0;       // events the broadcaster's full queue dropped
};

struct KubeSchedulerOptions {
  SchedulerConfiguration config;
  QueueTimings timings;  // initial_backoff and max_backoff are taken from config
  // FailedScheduling / Scheduled events in the store, written by a thread of their own as
  // client-go's broadcaster does (event_broadcaster.h): the cycle never waits for them.
  bool record_events = true;
  std::uint64_t seed = 1;  // tie-breaking among equally scored nodes
  // Binder threads, each with its own connection to each extender. kube-scheduler starts a
  // goroutine per bind and Go's HTTP client opens connections as needed: the real limit is
  // the extender's, so this is only the emulator's own bound on binds sent at once.
  int parallel_binds = 16;
  std::function<void(const SchedulerEvent&)> observer;
  // Called on the scheduling thread each time it has done all it can and is about to wait, and
  // on the events thread each time it has written every event it was given (the two halves of
  // what idle() reports), so a test or a driver can wait on that moment instead of polling.
  std::function<void()> on_idle;
  // When set, replaces the HTTP round trip of every /filter call: given the extender's index in
  // config.extenders and the rendered ExtenderArgs body, it returns the answer's body, which is
  // then read exactly as an HTTP answer is. For benchmarks that time the emulator's own cycle
  // without a server (bench/scheduling_cycle_benchmark.cc); nothing else uses it.
  std::function<Expected<std::string>(std::size_t extender, const std::string& body)> filter_answer;
};

class KubeScheduler {
 public:
  KubeScheduler(ApiObjects& objects, const SimClock& clock, KubeSchedulerOptions options);
  ~KubeScheduler();
  KubeScheduler(const KubeScheduler&) = delete;
  KubeScheduler& operator=(const KubeScheduler&) = delete;

  void start();
  void stop();
  SchedulerStats stats() const;
  // Pods in the queue: active, backoff, unschedulable, gated.
  struct QueueSizes {
    std::size_t active = 0, backoff = 0, unschedulable = 0, gated = 0;
  };
  QueueSizes queue_sizes() const;
  // True when the scheduling thread waits with no change to look at, no bind in flight, no event
  // left to write and no pod to try before next_due() (for a discrete-event driver: sim_clock.h).
  // next_due(): the simulated instant of its next timer (a back-off ending, the unschedulable-pods
  // flush), +inf for none.
  bool idle() const;
  double next_due() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace allox::emulator
