#include "alloxd/plan/gang_reservation.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace allox::extender {
namespace {

// One node's slots of a type, by the time they free (then inventory order).
struct NodeSlots {
  std::string node;
  std::vector<std::pair<double, std::size_t>> by_free;  // (frees at, slot)
};

std::vector<NodeSlots> nodes_of(const std::vector<MachineSlot>& slots, const ClusterState& state,
                                const DeviceType& device) {
  std::vector<NodeSlots> out;
  for (std::size_t s = 0; s < slots.size() && s < state.idle.size(); ++s) {
    if (slots[s].device != device) continue;
    // One node's slots of a type are adjacent (JobBook::set_inventory).
    if (out.empty() || out.back().node != slots[s].node) out.push_back({slots[s].node, {}});
    const double frees =
        state.idle[s] ? state.now : std::max(state.now, state.machines[s].busy_until);
    out.back().by_free.emplace_back(frees, s);
  }
  for (NodeSlots& node : out) std::stable_sort(node.by_free.begin(), node.by_free.end());
  return out;
}

// A placement: `units` slots of one node, free once the last of them is.
struct Placement {
  double frees;
  std::size_t order;  // the node's inventory position, then the placement's on the node
  std::size_t node;
  std::vector<std::size_t> slots;
};

}  // namespace

std::optional<GangReservation> reserve_gang(
    const std::vector<MachineSlot>& slots, const ClusterState& state, int members, int units,
    const std::vector<DeviceType>& types,
    const std::function<bool(const std::string& node)>& may_go) {
  if (members < 1 || units < 1) return std::nullopt;
  const auto k = static_cast<std::size_t>(units);
  std::optional<GangReservation> best;
  for (const DeviceType& type : types) {
    const std::vector<NodeSlots> nodes = nodes_of(slots, state, type);
    std::vector<Placement> placements;
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      if (may_go && !may_go(nodes[n].node)) continue;
      const auto& by_free = nodes[n].by_free;
      for (std::size_t first = 0; first + k <= by_free.size(); first += k) {
        Placement p{by_free[first + k - 1].first, placements.size(), n, {}};
        for (std::size_t i = first; i < first + k; ++i) p.slots.push_back(by_free[i].second);
        placements.push_back(std::move(p));
      }
    }
    if (placements.size() < static_cast<std::size_t>(members)) continue;
    // A node's later placement never frees before its earlier one: the earliest `members` of
    // all are a node's first ones.
    std::stable_sort(placements.begin(), placements.end(), [](const auto& a, const auto& b) {
      return std::tie(a.frees, a.order) < std::tie(b.frees, b.order);
    });
    placements.resize(static_cast<std::size_t>(members));
    const double start = placements.back().frees;
    if (best && best->start <= start) continue;
    GangReservation r;
    r.device = type;
    r.units = units;
    r.start = start;
    std::sort(placements.begin(), placements.end(),
              [](const auto& a, const auto& b) { return a.order < b.order; });
    for (const Placement& p : placements) {
      r.nodes.push_back(nodes[p.node].node);
      for (std::size_t s : p.slots) {
        if (state.idle[s]) r.held.push_back(s);
      }
    }
    best = std::move(r);
  }
  return best;
}

void hold_reservation(const GangReservation& reservation, double seconds, ClusterState& state) {
  for (std::size_t s : reservation.held) {
    if (s >= state.idle.size()) continue;
    state.idle[s] = false;
    state.machines[s].busy_until = reservation.start + seconds;
  }
}

std::vector<std::string> backfill(const GangReservation& reservation,
                                  const std::vector<MachineSlot>& slots, const ClusterState& state,
                                  Plan& plan) {
  std::vector<std::string> started;
  // Each node's held slots not yet backfilled, in slot order.
  std::map<std::string, std::vector<std::size_t>> free;
  for (std::size_t s : reservation.held) {
    if (s < slots.size()) free[slots[s].node].push_back(s);
  }
  for (auto& [node, held] : free) std::sort(held.begin(), held.end());
  for (const QueuedJob& queued : state.queue) {  // arrival order (JobBook::snapshot)
    if (free.empty()) break;
    const Job& job = *queued.job;
    if (plan.starts.count(job.id)) continue;
    const std::optional<double> seconds = job.time_on(reservation.device);
    if (!seconds || state.now + *seconds > reservation.start) continue;
    const auto units = static_cast<std::size_t>(std::max(1, job.units));
    for (auto it = free.begin(); it != free.end(); ++it) {
      std::vector<std::size_t>& held = it->second;
      if (held.size() < units) continue;
      plan.starts[job.id] = {it->first, reservation.device, static_cast<int>(held.front()),
                             static_cast<int>(units)};
      held.erase(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(units));
      if (held.empty()) free.erase(it);
      started.push_back(job.id);
      break;
    }
  }
  if (started.empty()) return started;
  const std::set<std::string> gone(started.begin(), started.end());
  std::vector<std::pair<int, std::string>> order;
  for (const auto& [id, wait] : plan.waiting) {
    if (!gone.count(id)) order.emplace_back(wait.position, id);
  }
  for (const std::string& id : started) plan.waiting.erase(id);
  std::sort(order.begin(), order.end());
  for (std::size_t i = 0; i < order.size(); ++i) {
    PlannedWait& wait = plan.waiting.at(order[i].second);
    wait.position = static_cast<int>(i + 1);
    wait.queue_length = static_cast<int>(order.size());
  }
  index_starts(plan);
  return started;
}

std::string reservation_text(const GangReservation& reservation) {
  std::string text = "reserved for gang " + reservation.job_id + ": " +
                     std::to_string(reservation.nodes.size()) + " × " +
                     units_text(reservation.device, reservation.units) + " on ";
  std::vector<std::string> said;
  for (const std::string& node : reservation.nodes) {
    if (std::find(said.begin(), said.end(), node) != said.end()) continue;
    text += (said.empty() ? "" : ", ") + node;
    said.push_back(node);
  }
  return text;
}

}  // namespace allox::extender
