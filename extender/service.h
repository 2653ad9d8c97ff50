// alloxd's service: the rooms wired together, behind the one object the HTTP routes call.
//
//   planner.h        the job book, its store, and the thread that plans it
//   verbs.h          kube-scheduler's filter / prioritize / bind / preempt, confirming the plan
//   cluster_poller.h the cluster side: node inventory and pod completions from the API server
//   reports.h        the fairness, queue and job views
//
// The service owns them and the metrics, and forwards; it holds no scheduling logic itself.
// Durability: every acknowledged state change (new pod, bind, completion, profile) is written to
// the Store before the method returns; create() rebuilds the book from it.
//
// Thread-safe: all public methods may be called concurrently.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "extender/cluster_api.h"
#include "extender/cluster_poller.h"
#include "extender/config.h"
#include "extender/metrics.h"
#include "extender/planner.h"
#include "extender/reports.h"
#include "extender/timeline.h"
#include "extender/verbs.h"
#include "fairness/policy.h"

namespace allox::extender {

struct ServiceOptions {
  // Unix seconds; tests substitute a fake clock.
  std::function<double()> clock;
  // How long a filter for a job the plan has not seen waits for the next round; kube-scheduler's
  // extender httpTimeout (30 s by default) bounds it from above.
  std::chrono::milliseconds first_plan_wait{1000};
};

class ExtenderService {
 public:
  // Opens the store, restores the job book, loads the inventory from the config (when api is
  // null or config.apiserver is unset). api may be null: binds are then only recorded.
  static Expected<std::unique_ptr<ExtenderService>> create(const ExtenderConfig& config,
                                                           std::unique_ptr<SchedulingPolicy> policy,
                                                           std::unique_ptr<ClusterApi> api,
                                                           ServiceOptions options = {});
  ~ExtenderService();

  // Starts and stops the planner thread and the cluster poller. stop() is idempotent; the
  // destructor calls it.
  void start();
  void stop();

  // True once the node inventory is loaded and a first plan is published.
  bool ready() const { return planner_->ready(); }

  FilterResult filter(const ExtenderArgs& args) { return verbs_->filter(args); }
  std::vector<HostPriority> prioritize(const ExtenderArgs& args) {
    return verbs_->prioritize(args);
  }
  BindingResult bind(const BindingArgs& args) { return verbs_->bind(args); }
  PreemptionResult preempt(const PreemptionArgs& args) { return verbs_->preempt(args); }

  // The job finished (POST /v1/jobs/{id}/done, or its pod succeeded or failed).
  Status complete(const std::string& job_id) { return planner_->complete(job_id); }
  Status add_profile(const ProfileReport& report) { return planner_->add_profile(report); }
  // DELETE /v1/jobs/{id}: an admin removes a queued job; its pods are refused from then on.
  Status remove(const std::string& job_id) { return planner_->remove(job_id); }
  // Settles bind intents from observed pods (Planner::reconcile_binds); an informer's lists
  // call it, as the poller does with single GETs.
  void reconcile_binds(const std::vector<ObservedPod>& pods, bool complete) {
    planner_->reconcile_binds(pods, complete);
  }

  // fairness/report.h's report over the book, windowed over config().fairness_window.
  Expected<FairnessReport> fairness() const;
  QueueView queue() const;
  Expected<JobView> job(const std::string& job_id) const;
  // Each machine's jobs over the last window_seconds, the plan's next starts, and every user's
  // share over that window (the status page; extender/service_timeline.cc).
  Timeline timeline(double window_seconds) const;

  // The latest plan: starts, queue positions, and parked jobs with their reasons (for event
  // writers).
  std::shared_ptr<const Plan> plan() const { return planner_->latest_plan(); }
  Metrics& metrics() { return metrics_; }
  const ExtenderConfig& config() const { return planner_->config(); }
  // Wakes the planner thread and waits until it has published a plan of the current book.
  void solve_now() { planner_->solve_now(); }

 private:
  ExtenderService() = default;

  Metrics metrics_;  // first: the rooms below refer to it
  std::unique_ptr<ClusterApi> api_;
  std::unique_ptr<Planner> planner_;
  std::unique_ptr<ExtenderVerbs> verbs_;
  std::unique_ptr<ClusterPoller> poller_;  // null without an API server
};

}  // namespace allox::extender
