// Preemptive assignment by priority, shared by srpt and las.
//
// The caller ranks every active job (queued and running) from most to least urgent. Walking that
// order, each job claims a machine: a running job keeps its own machine if nobody more urgent
// claimed it; a queued job claims, among the machines nobody claimed yet, the one on whose
// device type it needs the least time, preferring an idle machine, else the machine of the least
// urgent running job (which is then preempted). A queued job may displace a running job only if
// `may_displace(queue index, running index)` says so: the policy's guard against preemptions
// that gain nothing (and against two jobs displacing each other in turn). Preempted jobs return
// to the caller's queue and compete again at the next decision.
//
// O(A * M) for A active jobs and M machines.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "fairness/policy.h"

namespace allox {

struct ActiveJob {
  bool running = false;
  std::size_t index = 0;  // into ClusterState::running if running, else ClusterState::queue
};

using DisplaceRule = std::function<bool(std::size_t queued, std::size_t running)>;

Decision assign_by_priority(const ClusterState& state, const std::vector<ActiveJob>& order,
                            const DisplaceRule& may_displace);

}  // namespace allox
