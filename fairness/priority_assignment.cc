#include "fairness/priority_assignment.h"

#include <limits>
#include <optional>

#include "fairness/cluster_view.h"

namespace allox {

Decision assign_by_priority(const ClusterState& state, const std::vector<ActiveJob>& order,
                            const DisplaceRule& may_displace) {
  const std::size_t machines = state.machines.size();
  constexpr std::size_t kIdle = std::numeric_limits<std::size_t>::max();
  // occupant_rank[m]: position in `order` of the running job on m (kIdle for an idle machine), so
  // that a claim takes the free machine whose occupant is least urgent.
  std::vector<std::size_t> occupant_rank(machines, kIdle);
  std::vector<std::optional<std::size_t>> occupant(machines);  // index into state.running
  for (std::size_t i = 0; i < state.running.size(); ++i) {
    occupant[state.running[i].machine] = i;
  }
  for (std::size_t pos = 0; pos < order.size(); ++pos) {
    if (order[pos].running) occupant_rank[state.running[order[pos].index].machine] = pos;
  }
  auto usable = [&](std::size_t m) {
    return occupant[m] || (m < state.idle.size() && state.idle[m]);
  };

  std::vector<bool> claimed(machines, false);
  Decision decision;
  std::size_t free_left = 0;
  for (std::size_t m = 0; m < machines; ++m) free_left += usable(m) ? 1 : 0;
  for (const ActiveJob& active : order) {
    if (free_left == 0) break;
    if (active.running) {
      std::size_t m = state.running[active.index].machine;
      if (!claimed[m]) {
        claimed[m] = true;
        --free_left;
      }
      continue;
    }
    const QueuedJob& queued = state.queue[active.index];
    std::optional<std::size_t> best;
    double best_time = std::numeric_limits<double>::infinity();
    for (std::size_t m = 0; m < machines; ++m) {
      if (claimed[m] || !usable(m)) continue;
      if (occupant[m] && !may_displace(active.index, *occupant[m])) continue;
      std::optional<double> time = queued_time_on(queued, state.machines[m].device);
      if (!time) continue;
      // Faster first; on equal time an idle machine, then the least urgent occupant.
      if (!best || *time < best_time ||
          (*time == best_time && occupant_rank[m] > occupant_rank[*best])) {
        best = m;
        best_time = *time;
      }
    }
    if (!best) continue;
    claimed[*best] = true;
    --free_left;
    decision.start.push_back({queued.job->id, *best});
  }
  for (const Placement& p : decision.start) {
    if (occupant[p.machine])
      decision.preempt.push_back(state.running[*occupant[p.machine]].job->id);
  }
  return decision;
}

}  // namespace allox
