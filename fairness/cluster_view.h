// Read-only questions every policy asks of a ClusterState snapshot, answered in one place so
// that all policies agree on them: how long a queued job still needs on a device type, how many
// machines of each type exist, a user's weight, and which machines are idle.
//
// IdleMachines tracks the idle machines while a policy builds a Decision: take() hands out idle
// units for a job and removes them. A job of k units (Job::units) needs k idle units of one node
// (core/model.h); the node chosen is the one with the fewest idle units that still fit (best fit,
// so a big job later finds a whole node), ties to the lowest machine index, and there its k
// lowest-index idle units. On a cluster of one-unit nodes that is the lowest idle machine of the
// type. All lookups are O(log D) or O(1) amortised on one-unit nodes and
// O(nodes of the type) otherwise. Not thread-safe.
//
// The units a Placement takes (the simulator's rule, and what take() removes): the k lowest-index
// idle units of its machine's node (gang_units()); take() returns the lowest of them.
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

// The machines a job of `units` devices placed on `machine` occupies (fairness/policy.h,
// Placement): the `units` lowest-index idle machines of its node (node_of from node_ids()),
// ascending. nullopt if the node has fewer idle units. `from`: no machine of the node lies
// below it (first_machines()), so the scan starts there rather than at machine 0.
std::optional<std::vector<std::size_t>> gang_units(const std::vector<Machine>& machines,
                                                   const std::vector<bool>& idle,
                                                   const std::vector<std::size_t>& node_of,
                                                   std::size_t machine, int units,
                                                   std::size_t from = 0);

// Per node id of `node_of` (node_ids()), the lowest index of its machines: gang_units' `from`.
std::vector<std::size_t> first_machines(const std::vector<std::size_t>& node_of);

// Largest number of units any node of each device type offers in the snapshot: a job of more
// units than largest_nodes()[d] can never run on d.
std::map<DeviceType, int> largest_nodes(const ClusterState& state);

class IdleMachines {
 public:
  explicit IdleMachines(const ClusterState& state);

  bool any() const { return total_ > 0; }
  std::size_t count(const DeviceType& device) const;  // idle units of the type
  // Whether some node of the type has `units` idle units.
  bool fits(const DeviceType& device, int units = 1) const;
  // Removes `units` idle units of one node of the type (best fit, see above) and returns the
  // lowest of them, the Placement's machine; nullopt if no node of the type has that many.
  std::optional<std::size_t> take(const DeviceType& device, int units = 1);
  // Adds a machine back (one freed by a preemption in the same Decision).
  void give_back(std::size_t machine, const DeviceType& device);
  // The device type with a node that fits the job on which it needs the least time, with that
  // time.
  std::optional<std::pair<DeviceType, double>> best_for(const QueuedJob& queued) const;

 private:
  // One-unit nodes only (every cluster without Machine::node): per type, machine indices in
  // descending order.
  std::map<DeviceType, std::vector<std::size_t>> idle_;
  // Any multi-unit node: per type, per node id, idle machine indices ascending.
  bool multi_ = false;
  std::vector<std::size_t> node_of_;
  std::map<DeviceType, std::map<std::size_t, std::vector<std::size_t>>> nodes_;
  std::map<DeviceType, std::size_t> count_;
  std::size_t total_ = 0;
};

}  // namespace allox
