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
// Multi-unit jobs (Job::units = k, or any node of several units): the same walk by node. A
// running job keeps all its units; a queued job of k units claims a node of a type it can run on
// where its unclaimed idle units plus the units of displaceable, unclaimed running jobs (least
// urgent first, each whole) reach k: the fastest type first, then the fewest preemptions, then
// the node with the fewest idle units, then the lowest node. A displaced job's other units go
// back to the pool for less urgent claims. The Placement names the node's first machine
// (fairness/policy.h: the job takes its node's lowest idle units).
//
// O(A * M) for A active jobs and M machines (O(A * M * R log R) with R running jobs per node on
// multi-unit nodes).
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
