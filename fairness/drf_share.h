// drf's dominant share of one user, over a stated resource vector (fairness/drf_policy.cc).
//
// Two vectors:
//   devices (the default): one resource per device type; a running job holds `units` machines
//     of the type it runs on; the capacity of a type is its machine count.
//   resources: named resources (the reference AlloX simulator's cores, memory, GPUs, GPU memory).
//     Each machine of device type d offers MachineCapacity[d]; the capacity of a resource is the
//     sum over the cluster's machines. A job running on d holds Job::holds[d] times its units, or,
//     when the workload states nothing for d, its machines' whole capacity.
// The dominant share is the largest held / capacity over the vector's resources (resources of
// zero capacity are skipped); weights are the caller's to apply.
//
// Example (resources): 4 CPU nodes of {cores 32, memory_gb 16} and 4 GPUs of {gpus 1,
// gpu_memory_gb 2}; a user runs CPU jobs holding {32, 5} and {32, 16} and one GPU job holding
// {1, 2}: cores 64/128, memory 21/64, GPUs 1/4, GPU memory 2/8, dominant share 1/2.
//
// Thread-safety: a value type; one per user and decision.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "core/model.h"

namespace allox {

using ResourceAmounts = std::map<std::string, double>;
// What one machine of each device type offers, by resource name. Empty: the devices vector.
using MachineCapacity = std::map<DeviceType, ResourceAmounts>;

class DrfHoldings {
 public:
  // `counts`: machines per device type of the cluster. Both must outlive this object.
  DrfHoldings(const MachineCapacity& capacity, const std::map<DeviceType, std::size_t>& counts)
      : capacity_(&capacity), counts_(&counts) {}

  // The user starts `job` on a machine of `device`.
  void add(const Job& job, const DeviceType& device);
  double dominant_share() const;

 private:
  const MachineCapacity* capacity_;
  const std::map<DeviceType, std::size_t>* counts_;
  std::map<DeviceType, std::size_t> machines_;  // devices vector
  ResourceAmounts held_;                        // resources vector
};

// The smallest machine of each device type that holds every job of `jobs` that states what it
// holds there (the largest amount of each resource). A machine runs one job at a time, so any
// larger capacity gives the same dominant shares whenever each resource's share is bounded by a
// resource every job holds in full (cores on CPU nodes, GPUs on GPUs: docs/results.md). Empty
// when no job states anything.
MachineCapacity smallest_fitting_machines(const std::vector<const Job*>& jobs);

}  // namespace allox
