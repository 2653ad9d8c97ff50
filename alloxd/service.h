// alloxd's service: the rooms wired together, behind the one object the HTTP routes call.
//
//   planner.h       the job book, its store, and the thread that plans it
//   verbs.h         kube-scheduler's filter / prioritize / bind / preempt, confirming the plan
//   cluster_feed.h  the cluster side: allox's pods and the nodes, listed and watched
//   controller.h    the plan turned into actions: remove a gate, delete a variant, nudge, events
//   reports.h       the fairness, queue and job views
//
// Without an API server (config.apiserver unset) only the planner and the verbs run: the
// inventory comes from the config and binds are only recorded. With one, the feed, the
// controller (its work queue of job keys and its workers, acting only while this replica holds
// the Lease) run too. The service owns them and the metrics, and forwards; it holds no logic
// itself.
//
// Thread-safe: all public methods may be called concurrently.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "alloxd/cache/cluster_feed.h"
#include "alloxd/config.h"
#include "alloxd/control/cluster_api.h"
#include "alloxd/control/controller.h"
#include "alloxd/plan/planner.h"
#include "alloxd/verbs/verbs.h"
#include "alloxd/web/metrics.h"
#include "alloxd/web/reports.h"
#include "alloxd/web/timeline.h"
#include "fairness/policy.h"
#include "kube/client.h"
#include "kube/events.h"
#include "kube/lease.h"

namespace allox::extender {

struct ServiceOptions {
  // Unix seconds; tests substitute a fake clock.
  std::function<double()> clock;
  // How long a filter for a job the plan has not seen waits for the next round; kube-scheduler's
  // extender httpTimeout (30 s by default) bounds it from above. Only without an API server: with
  // one, the controller nudges a parked pod when a plan starts it (VerbOptions::nudges).
  std::chrono::milliseconds first_plan_wait{1000};
  // How long a filter waits for the watch when kube-scheduler has seen a freed machine before
  // alloxd did (VerbOptions::watch_wait); 0: never. Only with an API server: without one there is
  // no watch to wait for.
  std::chrono::milliseconds watch_wait{500};
  ControllerOptions controller;
  // Called after each published plan and each change the watch brought in (on the planner's or
  // an informer's thread; must be quick and must not call back into the service's writers).
  // Tests wait on it instead of polling.
  std::function<void()> on_change;
};

class ExtenderService {
 public:
  // Opens the store and restores the job book. With config.apiserver set, alloxd talks to the
  // API server (the watch, actions, and binds through `api`, or a binder it makes when api is
  // null); otherwise the inventory is config.nodes and binds go to `api` or are only recorded.
  static Expected<std::unique_ptr<ExtenderService>> create(const ExtenderConfig& config,
                                                           std::unique_ptr<SchedulingPolicy> policy,
                                                           std::unique_ptr<ClusterApi> api,
                                                           ServiceOptions options = {});
  ~ExtenderService();

  // Starts the planner (and the watch, Lease and the controller's workers). stop() ends them
  // within the API client's call timeout: it cancels calls in flight first. Idempotent.
  void start();
  void stop();

  // True once the node inventory is loaded (and, with an API server, allox's pods are listed)
  // and a first plan is published.
  bool ready() const;

  FilterResult filter(const ExtenderArgs& args) { return verbs_->filter(args); }
  std::vector<HostPriority> prioritize(const ExtenderArgs& args) {
    return verbs_->prioritize(args);
  }
  BindingResult bind(const BindingArgs& args) { return verbs_->bind(args); }
  PreemptionResult preempt(const PreemptionArgs& args) { return verbs_->preempt(args); }

  // The job finished (POST /v1/jobs/{id}/done; with an API server, its pod's watch events).
  Status complete(const std::string& job_id) { return planner_->complete(job_id); }
  Status add_profile(const ProfileReport& report) { return planner_->add_profile(report); }
  // DELETE /v1/jobs/{id}: an admin removes a queued job; its pods are refused from then on.
  Status remove(const std::string& job_id) { return planner_->remove(job_id); }
  // Settles bind intents from observed pods (Planner::reconcile_binds); an informer's lists
  // call it, as the poller does with single GETs.
  void reconcile_binds(const std::vector<PodPlacement>& pods, bool complete) {
    planner_->reconcile_binds(pods, complete);
  }

  // fairness/report.h's report over the book, windowed over config().fairness_window.
  Expected<FairnessReport> fairness() const;
  QueueView queue() const;
  Expected<JobView> job(const std::string& job_id) const;
  // Each machine's jobs over the last window_seconds, the plan's next starts, and every user's
  // share over that window (the status page; alloxd/service_timeline.cc).
  Timeline timeline(double window_seconds) const;

  // The latest plan: starts, queue positions, and parked jobs with their reasons (for event
  // writers).
  std::shared_ptr<const Plan> plan() const { return planner_->latest_plan(); }
  Metrics& metrics() { return metrics_; }
  const ExtenderConfig& config() const { return planner_->config(); }
  // Whether this replica acts on the cluster (holds the Lease, or has no API server).
  bool leading() const;
  // The controller, for tests and /metrics (null without an API server).
  const Controller* controller() const { return controller_.get(); }
  // Wakes the planner thread and waits until it has published a plan of the current book.
  void solve_now() { planner_->solve_now(); }

  // For discrete-event drivers (the stepped replay, end-to-end tests): true while alloxd is
  // reacting to something it has seen (a watch event being handled, a change waiting for a plan,
  // a plan being made or acted on, a job key waiting in the controller's queue or being
  // reconciled, its actions running). What it has not seen yet is for the caller to tell from
  // observed_pods(): each pod of allox's it has observed, by "namespace/name", with the
  // resourceVersion it last saw (empty without an API server).
  bool busy() const;
  std::map<std::string, std::string> observed_pods() const;

 private:
  ExtenderService() = default;

  Metrics metrics_;  // first: the rooms below refer to it
  std::unique_ptr<kube::KubeClient> client_;
  std::unique_ptr<ClusterApi> binder_;
  std::unique_ptr<Planner> planner_;
  std::unique_ptr<ExtenderVerbs> verbs_;
  std::unique_ptr<kube::EventRecorder> events_;
  std::unique_ptr<kube::LeaderLease> lease_;  // null: no leader election, always leading
  std::unique_ptr<ClusterFeed> feed_;
  std::unique_ptr<Controller> controller_;
};

}  // namespace allox::extender
