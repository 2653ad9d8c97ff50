#include "extender/cluster_poller.h"

namespace allox::extender {

ClusterPoller::ClusterPoller(Planner& planner, ClusterApi& api,
                             std::chrono::steady_clock::duration tick)
    : planner_(planner), api_(api), tick_(tick) {}

ClusterPoller::~ClusterPoller() {
  stop();
}

void ClusterPoller::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] {
    while (true) {
      poll_once();
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, tick_, [&] { return stopping_; })) return;
    }
  });
}

void ClusterPoller::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ClusterPoller::poll_once() {
  auto nodes = api_.list_nodes(planner_.config().devices);
  if (nodes) planner_.set_inventory(*nodes);
  // Binds in doubt (intents a crash left behind) are settled from where their pods are bound.
  auto in_doubt = planner_.read([](const JobBook& book) {
    std::vector<PodIdentity> pods;
    for (const auto& [id, job] : book.jobs()) {
      if (job.intent) pods.push_back(job.intent->pod);
    }
    return pods;
  });
  if (nodes && !in_doubt.empty()) {
    std::vector<ObservedPod> observed;
    for (const PodIdentity& pod : in_doubt) {
      auto seen = api_.get_pod(pod.namespace_name, pod.name);
      if (seen) observed.push_back(std::move(*seen));  // an error: looked at again next poll
    }
    planner_.reconcile_binds(observed, false);
  }
  // Completions from pod status: a bound pod that succeeded, failed or vanished is done.
  auto running = planner_.read([](const JobBook& book) {
    std::vector<std::pair<std::string, PodIdentity>> pods;
    for (const auto& [id, job] : book.jobs()) {
      if (job.record.phase == JobPhase::kRunning) {
        pods.push_back({id, {job.record.pod_name, job.record.pod_namespace, ""}});
      }
    }
    return pods;
  });
  for (const auto& [id, pod] : running) {
    auto phase = api_.pod_phase(pod.namespace_name, pod.name);
    if (phase && (*phase == "Succeeded" || *phase == "Failed" || *phase == "Gone")) {
      (void)planner_.complete(id);
    }
  }
}

}  // namespace allox::extender
