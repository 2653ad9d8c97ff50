// The extender's behaviour, independent of HTTP: kube-scheduler's verbs (filter, prioritize,
// bind, preempt) over typed wire values, job completion, profile reports and the read-only
// reports. The HTTP layer (extender/http_server.h) parses, calls one method, renders.
//
// Decisions (DESIGN section 5): a scheduler thread runs the policy (fairness round + matcher)
// whenever the job book changes and at least every `tick`, and publishes a Plan. filter() and
// prioritize() answer from the latest plan under a shared lock, in microseconds; only a pod
// whose job the plan has not seen yet waits (at most `first_plan_wait`) for the next round.
//   - a job that starts now: its planned node is admitted for the planned device's variant
//     (any node with a free machine of that device if the planned one is not a candidate);
//   - every other candidate goes to FailedNodes with a reason a person can act on
//     ("queued: position 3 of 12, est. start in 540s"), or FailedAndUnresolvableNodes when the
//     node can never run this variant (no such device there, the job already runs elsewhere);
//   - device variants of a job (pods sharing allox.io/job) are admitted one at a time and bind
//     refuses a second one, so exactly one runs.
// bind() posts the Binding through ClusterApi (when there is one) and records the start durably
// before answering; on failure the job stays queued and the answer carries Error.
//
// Durability: every acknowledged state change (new pod, bind, completion, profile) is written to
// the Store before the method returns; create() rebuilds the book from it.
//
// Thread-safe: all public methods may be called concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "extender/cluster_api.h"
#include "extender/config.h"
#include "extender/job_book.h"
#include "extender/metrics.h"
#include "extender/plan.h"
#include "extender/reports.h"
#include "extender/store.h"
#include "extender/wire.h"
#include "fairness/policy.h"

namespace allox::extender {

// A profiling or progress report (POST /v1/profiles).
struct ProfileReport {
  std::string job_id;
  DeviceType device;
  ProfileSample::Kind kind = ProfileSample::Kind::kProfile;
  std::int64_t iterations = 0;
  double seconds = 0;
};

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

  // Starts and stops the scheduler thread. stop() is idempotent; the destructor calls it.
  void start();
  void stop();

  // True once the node inventory is loaded and a first plan is published.
  bool ready() const;

  FilterResult filter(const ExtenderArgs& args);
  std::vector<HostPriority> prioritize(const ExtenderArgs& args);
  BindingResult bind(const BindingArgs& args);
  PreemptionResult preempt(const PreemptionArgs& args);

  // The job finished (POST /v1/jobs/{id}/done, or its pod succeeded or failed).
  Status complete(const std::string& job_id);
  Status add_profile(const ProfileReport& report);

  FairnessReport fairness() const;
  QueueView queue() const;
  Expected<JobView> job(const std::string& job_id) const;

  Metrics& metrics() { return metrics_; }
  const ExtenderConfig& config() const { return config_; }
  // Wakes the scheduler thread and waits until it has published a plan of the current book.
  void solve_now();

 private:
  ExtenderService(ExtenderConfig config, std::unique_ptr<SchedulingPolicy> policy,
                  std::unique_ptr<ClusterApi> api, std::unique_ptr<Store> store,
                  ServiceOptions options);
  double now() const { return options_.clock(); }
  void scheduler_loop();
  void solve_once();
  void refresh_from_api();
  void wake();
  // Registers the pod as a variant (persisting it when new). Returns the book version the
  // plan must reach to include it, or an error to report.
  Expected<std::uint64_t> register_variant(const JobVariant& variant);
  JobView view_of(const BookJob& job, const Plan& plan, double at) const;

  const ExtenderConfig config_;
  std::unique_ptr<SchedulingPolicy> policy_;  // used by the scheduler thread only
  std::unique_ptr<ClusterApi> api_;
  std::unique_ptr<Store> store_;
  ServiceOptions options_;
  Metrics metrics_;
  PlanBoard plans_;

  mutable std::shared_mutex book_mu_;
  JobBook book_;
  std::mutex bind_mu_;  // one bind at a time: check, call the API server, record

  std::mutex wake_mu_;
  std::condition_variable wake_cv_;
  bool wake_pending_ = false;
  bool stopping_ = false;
  std::thread scheduler_;
  std::atomic<bool> ready_{false};
};

}  // namespace allox::extender
