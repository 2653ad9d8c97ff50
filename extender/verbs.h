// kube-scheduler's extender verbs (filter, prioritize, bind, preempt) over typed wire values:
// the confirmation step. The planner (planner.h) decides who runs where; the verbs read its
// latest plan and the book, and answer kube-scheduler in its terms.
//
//   - filter: a pod seen for the first time is registered (persisted) as a variant of its job;
//     only a pod whose job the plan has not seen yet waits (at most `first_plan_wait`) for the
//     next round. A job that starts now gets its planned node, for the planned device's variant
//     (any offered node with a free machine of that device if the planned one is not offered
//     or is full); every other node goes to FailedNodes with a reason a person can act on
//     ("queued: position 3 of 12, est. start in 540s"), or FailedAndUnresolvableNodes when the
//     node can never run this variant (no such device there, the job already runs elsewhere,
//     was removed, or is parked because the policy cannot take it).
//   - prioritize: the planned node scores kMaxExtenderPriority, every other node 0.
//   - bind: one at a time; refuses a second variant of a job, a node without a free machine;
//     records a bind intent, posts the Binding through ClusterApi (when there is one), records
//     the start durably, then deletes the job's other variants in the pod's namespace, and
//     answers.
//   - preempt: allox jobs are non-preemptive once started: nodes whose victims include one are
//     dropped.
//
// Thread-safe: all methods may be called concurrently.
#pragma once

#include <chrono>
#include <mutex>

#include "extender/cluster_api.h"
#include "extender/metrics.h"
#include "extender/planner.h"
#include "extender/wire.h"

namespace allox::extender {

struct VerbOptions {
  // How long a filter for a job the plan has not seen waits for the next round; kube-scheduler's
  // extender httpTimeout (30 s by default) bounds it from above.
  std::chrono::milliseconds first_plan_wait{1000};
};

class ExtenderVerbs {
 public:
  // planner and metrics must outlive the verbs; api may be null (binds are only recorded).
  ExtenderVerbs(Planner& planner, ClusterApi* api, Metrics& metrics, VerbOptions options);

  FilterResult filter(const ExtenderArgs& args);
  std::vector<HostPriority> prioritize(const ExtenderArgs& args);
  BindingResult bind(const BindingArgs& args);
  PreemptionResult preempt(const PreemptionArgs& args);

 private:
  // Whether the pod is for allox's scheduler (config.scheduler_name; every pod when unset).
  bool ours(const nlohmann::json& pod) const;
  Planner& planner_;
  ClusterApi* api_;
  Metrics& metrics_;
  VerbOptions options_;
  std::mutex bind_mu_;  // one bind at a time: check, call the API server, record
};

}  // namespace allox::extender
