#include "core/model.h"

#include <algorithm>
#include <map>
#include <set>

namespace allox {

bool is_device_type_name(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  const auto lower_or_digit = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  };
  if (!lower_or_digit(name[0])) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) {
    return lower_or_digit(c) || c == '-' || c == '_' || c == '.';
  });
}

std::vector<DeviceType> Cluster::device_types() const {
  std::set<DeviceType> types;
  for (const Machine& m : machines) types.insert(m.device);
  return {types.begin(), types.end()};
}

std::size_t Cluster::count(const DeviceType& device) const {
  return static_cast<std::size_t>(std::count_if(
      machines.begin(), machines.end(), [&](const Machine& m) { return m.device == device; }));
}

std::map<DeviceType, int> largest_node_units(const std::vector<Machine>& machines) {
  std::map<DeviceType, int> largest;
  const bool plain = std::none_of(machines.begin(), machines.end(),
                                  [](const Machine& m) { return !m.node.empty(); });
  if (plain) {  // every node one unit: no map of nodes needed
    for (const Machine& m : machines) largest[m.device] = 1;
    return largest;
  }
  const std::vector<std::size_t> node_of = node_ids(machines);
  std::map<std::size_t, int> units;
  for (std::size_t m = 0; m < machines.size(); ++m) {
    int& n = largest[machines[m].device];
    n = std::max(n, ++units[node_of[m]]);
  }
  return largest;
}

std::vector<std::size_t> node_ids(const std::vector<Machine>& machines) {
  std::vector<std::size_t> ids(machines.size());
  std::map<std::pair<std::string, DeviceType>, std::size_t> named;
  std::size_t next = 0;
  for (std::size_t i = 0; i < machines.size(); ++i) {
    if (machines[i].node.empty()) {
      ids[i] = next++;
      continue;
    }
    auto [it, fresh] = named.try_emplace({machines[i].node, machines[i].device}, next);
    if (fresh) ++next;
    ids[i] = it->second;
  }
  return ids;
}

std::optional<double> Job::time_on(const DeviceType& device) const {
  auto it = time.find(device);
  if (it == time.end()) return std::nullopt;
  return it->second;
}

std::pair<DeviceType, double> Job::fastest() const {
  auto best = time.begin();
  for (auto it = time.begin(); it != time.end(); ++it) {
    if (it->second < best->second) best = it;
  }
  return *best;
}

double Workload::weight_of(const std::string& user) const {
  for (const User& u : users) {
    if (u.name == user) return u.weight;
  }
  return 1;
}

}  // namespace allox
