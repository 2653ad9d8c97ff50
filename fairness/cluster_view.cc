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

std::optional<std::vector<std::size_t>> gang_units(const std::vector<Machine>& machines,
                                                   const std::vector<bool>& idle,
                                                   const std::vector<std::size_t>& node_of,
                                                   std::size_t machine, int units,
                                                   std::size_t from) {
  auto free = [&](std::size_t m) { return m < idle.size() && idle[m]; };
  if (machine >= machines.size() || units < 1) return std::nullopt;
  if (machines[machine].node.empty()) {  // a one-unit node: the machine itself
    if (units != 1 || !free(machine)) return std::nullopt;
    return std::vector<std::size_t>{machine};
  }
  std::vector<std::size_t> taken;
  for (std::size_t m = std::min(from, machine);
       m < machines.size() && taken.size() < static_cast<std::size_t>(units); ++m) {
    if (node_of[m] == node_of[machine] && free(m)) taken.push_back(m);
  }
  if (taken.size() < static_cast<std::size_t>(units)) return std::nullopt;
  return taken;
}

std::vector<std::size_t> first_machines(const std::vector<std::size_t>& node_of) {
  std::vector<std::size_t> first;
  for (std::size_t m = 0; m < node_of.size(); ++m) {
    if (node_of[m] >= first.size()) first.resize(node_of[m] + 1, m);  // ids follow first machines
  }
  return first;
}

std::map<DeviceType, int> largest_nodes(const ClusterState& state) {
  return largest_node_units(state.machines);
}

IdleMachines::IdleMachines(const ClusterState& state) {
  multi_ = std::any_of(state.machines.begin(), state.machines.end(),
                       [](const Machine& m) { return !m.node.empty(); });
  if (multi_) node_of_ = node_ids(state.machines);
  for (std::size_t i = state.machines.size(); i-- > 0;) {
    if (i < state.idle.size() && state.idle[i]) {
      const DeviceType& device = state.machines[i].device;
      if (multi_) {
        std::vector<std::size_t>& units = nodes_[device][node_of_[i]];
        units.insert(units.begin(), i);  // i descends: the front stays the lowest
      } else {
        idle_[device].push_back(i);
      }
      ++count_[device];
      ++total_;
    }
  }
}

std::size_t IdleMachines::count(const DeviceType& device) const {
  auto it = count_.find(device);
  return it == count_.end() ? 0 : it->second;
}

bool IdleMachines::fits(const DeviceType& device, int units) const {
  if (units < 1) return false;
  if (!multi_) return units == 1 && count(device) > 0;
  auto it = nodes_.find(device);
  if (it == nodes_.end()) return false;
  for (const auto& [node, idle] : it->second) {
    if (idle.size() >= static_cast<std::size_t>(units)) return true;
  }
  return false;
}

std::optional<std::size_t> IdleMachines::take(const DeviceType& device, int units) {
  if (units < 1) return std::nullopt;
  if (!multi_) {
    auto it = idle_.find(device);
    if (units != 1 || it == idle_.end() || it->second.empty()) return std::nullopt;
    std::size_t machine = it->second.back();
    it->second.pop_back();
    --count_[device];
    --total_;
    return machine;
  }
  auto it = nodes_.find(device);
  if (it == nodes_.end()) return std::nullopt;
  std::vector<std::size_t>* best = nullptr;
  for (auto& [node, idle] : it->second) {
    if (idle.size() < static_cast<std::size_t>(units)) continue;
    if (best == nullptr || idle.size() < best->size() ||
        (idle.size() == best->size() && idle.front() < best->front())) {
      best = &idle;
    }
  }
  if (best == nullptr) return std::nullopt;
  const std::size_t machine = best->front();
  best->erase(best->begin(), best->begin() + units);
  count_[device] -= static_cast<std::size_t>(units);
  total_ -= static_cast<std::size_t>(units);
  return machine;
}

void IdleMachines::give_back(std::size_t machine, const DeviceType& device) {
  if (multi_) {
    auto& list = nodes_[device][node_of_[machine]];
    list.insert(std::lower_bound(list.begin(), list.end(), machine), machine);
  } else {
    auto& list = idle_[device];
    list.insert(std::lower_bound(list.begin(), list.end(), machine, std::greater<>()), machine);
  }
  ++count_[device];
  ++total_;
}

std::optional<std::pair<DeviceType, double>> IdleMachines::best_for(const QueuedJob& queued) const {
  std::optional<std::pair<DeviceType, double>> best;
  for (const auto& [device, n] : count_) {
    if (n == 0 || !fits(device, queued.job->units)) continue;
    std::optional<double> time = queued_time_on(queued, device);
    if (time && (!best || *time < best->second)) best = {device, *time};
  }
  return best;
}

}  // namespace allox
