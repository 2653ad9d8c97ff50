#include "fairness/share.h"

#include <algorithm>

#include "fairness/cluster_view.h"

namespace allox {

double running_job_share(const Job& job, const DeviceType& running_on,
                         const std::map<DeviceType, std::size_t>& counts) {
  // fastest_present and time_on in one pass, copying no device name: every plan calls this for
  // every running job (tens of thousands at 5,000 nodes), some of them twice.
  const std::size_t* fast_count = nullptr;
  double fast_time = 0;
  std::optional<double> actual;
  for (const auto& [device, time] : job.time) {
    if (device == running_on) actual = time;
    auto count = counts.find(device);
    if (count == counts.end()) continue;
    if (fast_count == nullptr || time < fast_time) {
      fast_count = &count->second;
      fast_time = time;
    }
  }
  if (fast_count == nullptr || !actual || *actual <= 0) return 0;
  const double dominant = static_cast<double>(job.units) / static_cast<double>(*fast_count);
  return dominant * fast_time / *actual;
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

std::vector<double> queue_user_shares(const ClusterState& state, const QueueUsers& users,
                                      const std::map<DeviceType, std::size_t>& counts) {
  std::vector<double> shares(users.names.size(), 0.0);
  for (const RunningJob& r : state.running) {
    auto it = std::lower_bound(users.names.begin(), users.names.end(), r.job->user);
    if (it == users.names.end() || *it != r.job->user) continue;  // no queued job: not ranked
    shares[static_cast<std::size_t>(it - users.names.begin())] +=
        running_job_share(*r.job, state.machines[r.machine].device, counts);
  }
  for (std::size_t u = 0; u < shares.size(); ++u) shares[u] /= weight_of(state, users.names[u]);
  return shares;
}

double isolated_seconds(double seconds, double weight_share, double machines, int units) {
  return seconds / std::min(1.0, weight_share * machines / units);
}

}  // namespace allox
