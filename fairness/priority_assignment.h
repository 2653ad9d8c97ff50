// Preemptive assignment by priority, shared by srpt and las.
//
// The caller ranks every active job (queued and running) from most to least urgent. Walking that
// order, each job claims a machine: a running job keeps its own machine if nobody more urgent
// claimed it; a queued job claims a free machine of the device type on which it needs the least
// time, preferring an idle machine, else the machine of the least urgent running job of that
// type (which is then preempted). Running jobs whose machine was claimed by a more urgent job are
// preempted; they return to the caller's queue and compete again at the next decision.
//
// O(A * (D + M)) for A active jobs, D device types and M machines.
#pragma once

#include <cstddef>
#include <vector>

#include "fairness/policy.h"

namespace allox {

struct ActiveJob {
  bool running = false;
  std::size_t index = 0;  // into ClusterState::running if running, else ClusterState::queue
};

Decision assign_by_priority(const ClusterState& state, const std::vector<ActiveJob>& order);

}  // namespace allox
