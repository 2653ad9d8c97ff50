// Read-only questions every policy asks of a ClusterState snapshot, answered in one place so
// that all policies agree on them: how long a queued job still needs on a device type, how many
// machines of each type exist, a user's weight, and which machines are idle.
//
// IdleMachines tracks the idle machines while a policy builds a Decision: take() hands out an
// idle machine of a type (lowest index first, so decisions are deterministic) and removes it.
// All lookups are O(log D) or O(1) amortised. Not thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fairness/policy.h"

namespace allox {

// Estimated time the queued job still needs on `device`: QueuedJob::remaining when it has an
// entry for the device, else the job's full estimate; nullopt if the job cannot run there.
std::optional<double> queued_time_on(const QueuedJob& queued, const DeviceType& device);

// Machines per device type in the snapshot.
std::map<DeviceType, std::size_t> device_counts(const ClusterState& state);

// The user's weight from ClusterState::users, 1 when the user is not listed.
double weight_of(const ClusterState& state, const std::string& user);

// The device type, among those present in `counts`, on which the job is fastest by its full
// estimate (ties: the alphabetically first). nullopt if the job runs on none of them.
std::optional<std::pair<DeviceType, double>> fastest_present(
    const Job& job, const std::map<DeviceType, std::size_t>& counts);

class IdleMachines {
 public:
  explicit IdleMachines(const ClusterState& state);

  bool any() const { return total_ > 0; }
  std::size_t count(const DeviceType& device) const;
  // Removes and returns an idle machine of the type, nullopt if none is left.
  std::optional<std::size_t> take(const DeviceType& device);
  // Adds a machine back (one freed by a preemption in the same Decision).
  void give_back(std::size_t machine, const DeviceType& device);
  // The idle device type on which the job needs the least time, with that time.
  std::optional<std::pair<DeviceType, double>> best_for(const QueuedJob& queued) const;

 private:
  std::map<DeviceType, std::vector<std::size_t>> idle_;  // per type, indices in descending order
  std::size_t total_ = 0;
};

}  // namespace allox
