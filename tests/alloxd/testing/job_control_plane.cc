#include "tests/alloxd/testing/job_control_plane.h"

#include <algorithm>
#include <chrono>
#include <limits>

namespace allox::extender::testing {
namespace {

emulator::KubeSchedulerOptions scheduler_options(EndToEndCluster& cluster) {
  emulator::KubeSchedulerOptions options;
  options.config = cluster.options().scheduler;
  return options;
}

}  // namespace

Deletions::Deletions(emulator::ApiObjects& objects) : objects_(objects) {
  id_ = objects_.subscribe([this](const emulator::Change& change) {
    if (change.type != "DELETED") return;
    const nlohmann::json& meta = (*change.before)["metadata"];
    std::lock_guard lock(mu_);
    if (change.resource == &emulator::jobs_resource()) {
      jobs_[meta.value("name", "")] = change.resource_version;
    } else if (change.resource == &emulator::pods_resource()) {
      pods_[emulator::controller_name(*change.before, "Job")].push_back(change.resource_version);
    }
  });
}

Deletions::~Deletions() { objects_.unsubscribe(id_); }

std::map<std::string, std::uint64_t> Deletions::jobs() const {
  std::lock_guard lock(mu_);
  return jobs_;
}

std::vector<std::uint64_t> Deletions::pods_of(const std::string& job) const {
  std::lock_guard lock(mu_);
  auto it = pods_.find(job);
  return it == pods_.end() ? std::vector<std::uint64_t>{} : it->second;
}

JobControlPlane::JobControlPlane(EndToEndCluster& cluster, emulator::FakeKubelet::RunSeconds run,
                                 emulator::FakeKubelet::ExitCode exit_code)
    : cluster_(cluster),
      kubelet_(cluster.objects(), cluster.clock(), std::move(run), std::move(exit_code)),
      scheduler_(cluster.objects(), cluster.clock(), scheduler_options(cluster)),
      jobs_(cluster.objects(), cluster.clock()) {
  subscription_ = cluster.objects().subscribe([this](const emulator::Change&) {
    std::lock_guard lock(mu_);
    ++changes_;
    cv_.notify_all();
  });
  kubelet_.start();
  scheduler_.start();
  jobs_.start();
}

JobControlPlane::~JobControlPlane() {
  jobs_.stop();
  scheduler_.stop();
  kubelet_.stop();
  cluster_.objects().unsubscribe(subscription_);
}

bool JobControlPlane::run_until(const std::function<bool()>& done, double simulated_limit) {
  const double start = cluster_.clock().now();
  while (!done()) {
    if (cluster_.clock().now() - start > simulated_limit) return false;
    std::uint64_t seen;
    {
      std::unique_lock lock(mu_);
      seen = changes_;
      // A driver's tick: the parts react on their own threads; it looks again at each change.
      cv_.wait_for(lock, std::chrono::milliseconds(2), [&] { return changes_ != seen; });
      if (changes_ != seen) continue;
    }
    step();
  }
  return true;
}

void JobControlPlane::step() {
  emulator::ApiObjects& objects = cluster_.objects();
  const std::uint64_t version = objects.resource_version();
  if (!kubelet_.idle() || !scheduler_.idle() || !jobs_.idle()) return;
  if (!cluster_.options().quiet()) return;
  if (objects.resource_version() != version) return;
  const double due = std::min({kubelet_.next_finish(), scheduler_.next_due(), jobs_.next_wake()});
  if (due == std::numeric_limits<double>::infinity()) return;
  cluster_.clock().advance_to(due);
}

}  // namespace allox::extender::testing
