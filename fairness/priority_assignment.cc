#include "fairness/priority_assignment.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <tuple>

#include "fairness/cluster_view.h"

namespace allox {

namespace {

// The same walk on nodes of several units (fairness/priority_assignment.h, "Multi-unit jobs").
Decision assign_gangs_by_priority(const ClusterState& state, const std::vector<ActiveJob>& order,
                                  const DisplaceRule& may_displace) {
  const std::size_t machines = state.machines.size();
  constexpr std::size_t kIdle = std::numeric_limits<std::size_t>::max();
  const std::vector<std::size_t> node_of = node_ids(state.machines);
  std::size_t node_count = 0;
  for (std::size_t n : node_of) node_count = std::max(node_count, n + 1);
  std::vector<std::vector<std::size_t>> units_of(node_count);
  for (std::size_t m = 0; m < machines; ++m) units_of[node_of[m]].push_back(m);

  std::vector<std::optional<std::size_t>> occupant(machines);  // index into state.running
  std::vector<std::size_t> rank(state.running.size(), kIdle);
  for (std::size_t i = 0; i < state.running.size(); ++i) {
    occupant[state.running[i].machine] = i;
    for (std::size_t m : state.running[i].other_machines) occupant[m] = i;
  }
  for (std::size_t pos = 0; pos < order.size(); ++pos) {
    if (order[pos].running) rank[order[pos].index] = pos;
  }
  std::vector<bool> claimed(machines, false);
  std::vector<bool> running_claimed(state.running.size(), false);
  std::vector<bool> displaced(state.running.size(), false);
  auto idle = [&](std::size_t m) {
    return !claimed[m] && ((m < state.idle.size() && state.idle[m] && !occupant[m]) ||
                           (occupant[m] && displaced[*occupant[m]]));
  };
  Decision decision;
  for (const ActiveJob& active : order) {
    if (active.running) {
      const RunningJob& r = state.running[active.index];
      if (displaced[active.index]) continue;
      running_claimed[active.index] = true;
      claimed[r.machine] = true;
      for (std::size_t m : r.other_machines) claimed[m] = true;
      continue;
    }
    const QueuedJob& queued = state.queue[active.index];
    const auto k = static_cast<std::size_t>(queued.job->units);
    // Per node: the free units and the displaceable occupants (least urgent first).
    struct Option {
      std::size_t node;
      double time;
      std::size_t free;
      std::vector<std::size_t> victims;
    };
    std::optional<Option> best;
    for (std::size_t n = 0; n < node_count; ++n) {
      std::optional<double> time = queued_time_on(queued, state.machines[units_of[n][0]].device);
      if (!time || units_of[n].size() < k) continue;
      if (best && *time > best->time) continue;
      Option option{n, *time, 0, {}};
      std::vector<std::size_t> candidates;
      for (std::size_t m : units_of[n]) {
        if (idle(m)) {
          ++option.free;
        } else if (occupant[m] && !claimed[m] && !running_claimed[*occupant[m]] &&
                   may_displace(active.index, *occupant[m]) &&
                   std::find(candidates.begin(), candidates.end(), *occupant[m]) ==
                       candidates.end()) {
          candidates.push_back(*occupant[m]);
        }
      }
      std::sort(candidates.begin(), candidates.end(),
                [&](std::size_t a, std::size_t b) { return rank[a] > rank[b]; });
      std::size_t have = option.free;
      for (std::size_t v : candidates) {
        if (have >= k) break;
        option.victims.push_back(v);
        have += 1 + state.running[v].other_machines.size();
      }
      if (have < k) continue;
      // Faster first; then fewer preemptions; then the node with the fewest free units.
      if (!best || option.time < best->time ||
          (option.time == best->time && std::make_pair(option.victims.size(), option.free) <
                                            std::make_pair(best->victims.size(), best->free))) {
        best = std::move(option);
      }
    }
    if (!best) continue;
    for (std::size_t v : best->victims) {
      displaced[v] = true;
      decision.preempt.push_back(state.running[v].job->id);
    }
    std::size_t taken = 0;
    for (std::size_t m : units_of[best->node]) {
      if (taken < k && idle(m)) {
        claimed[m] = true;
        ++taken;
      }
    }
    decision.start.push_back({queued.job->id, units_of[best->node][0]});
  }
  return decision;
}

}  // namespace

Decision assign_by_priority(const ClusterState& state, const std::vector<ActiveJob>& order,
                            const DisplaceRule& may_displace) {
  const bool gangs = std::any_of(state.machines.begin(), state.machines.end(),
                                 [](const Machine& m) { return !m.node.empty(); }) ||
                     std::any_of(state.queue.begin(), state.queue.end(),
                                 [](const QueuedJob& q) { return q.job->units != 1; });
  if (gangs) return assign_gangs_by_priority(state, order, may_displace);
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
