#include "fairness/share.h"

#include <algorithm>

#include "fairness/cluster_view.h"

namespace allox {

double running_job_share(const Job& job, const DeviceType& running_on,
                         const std::map<DeviceType, std::size_t>& counts) {
  auto fast = fastest_present(job, counts);
  std::optional<double> actual = job.time_on(running_on);
  if (!fast || !actual || *actual <= 0) return 0;
  double dominant = 1.0 / static_cast<double>(counts.at(fast->first));
  return dominant * fast->second / *actual;
}

std::map<std::string, double> current_shares(const ClusterState& state) {
  std::map<DeviceType, std::size_t> counts = device_counts(state);
  std::map<std::string, double> shares;
  for (const QueuedJob& q : state.queue) shares.emplace(q.job->user, 0.0);
  for (const RunningJob& r : state.running) {
    shares[r.job->user] += running_job_share(*r.job, state.machines[r.machine].device, counts);
  }
  for (auto& [user, share] : shares) share /= weight_of(state, user);
  return shares;
}

double isolated_seconds(double seconds, double weight_share, double machines) {
  return seconds / std::min(1.0, weight_share * machines);
}

}  // namespace allox
