#include "fairness/cluster_view.h"

#include <algorithm>
#include <functional>

namespace allox {

std::optional<double> queued_time_on(const QueuedJob& queued, const DeviceType& device) {
  auto left = queued.remaining.find(device);
  if (left != queued.remaining.end()) return left->second;
  return queued.job->time_on(device);
}

std::map<DeviceType, std::size_t> device_counts(const ClusterState& state) {
  std::map<DeviceType, std::size_t> counts;
  for (const Machine& m : state.machines) ++counts[m.device];
  return counts;
}

double weight_of(const ClusterState& state, const std::string& user) {
  for (const User& u : state.users) {
    if (u.name == user) return u.weight;
  }
  return 1;
}

std::optional<std::pair<DeviceType, double>> fastest_present(
    const Job& job, const std::map<DeviceType, std::size_t>& counts) {
  std::optional<std::pair<DeviceType, double>> best;
  for (const auto& [device, time] : job.time) {
    if (!counts.contains(device)) continue;
    if (!best || time < best->second) best = {device, time};
  }
  return best;
}

IdleMachines::IdleMachines(const ClusterState& state) {
  for (std::size_t i = state.machines.size(); i-- > 0;) {
    if (i < state.idle.size() && state.idle[i]) {
      idle_[state.machines[i].device].push_back(i);
      ++total_;
    }
  }
}

std::size_t IdleMachines::count(const DeviceType& device) const {
  auto it = idle_.find(device);
  return it == idle_.end() ? 0 : it->second.size();
}

std::optional<std::size_t> IdleMachines::take(const DeviceType& device) {
  auto it = idle_.find(device);
  if (it == idle_.end() || it->second.empty()) return std::nullopt;
  std::size_t machine = it->second.back();
  it->second.pop_back();
  --total_;
  return machine;
}

void IdleMachines::give_back(std::size_t machine, const DeviceType& device) {
  auto& list = idle_[device];
  list.insert(std::lower_bound(list.begin(), list.end(), machine, std::greater<>()), machine);
  ++total_;
}

std::optional<std::pair<DeviceType, double>> IdleMachines::best_for(const QueuedJob& queued) const {
  std::optional<std::pair<DeviceType, double>> best;
  for (const auto& [device, machines] : idle_) {
    if (machines.empty()) continue;
    std::optional<double> time = queued_time_on(queued, device);
    if (time && (!best || *time < best->second)) best = {device, *time};
  }
  return best;
}

}  // namespace allox
