#include "matcher/slot_network.h"

#include <algorithm>
#include <numeric>
#include <span>
#include <string>

namespace allox::matcher {
namespace {

using Wide = __int128;

// A slot offered at position `level` on device type `type` to the listed groups.
struct SlotSpec {
  std::size_t type;
  std::size_t level;
  std::span<const std::size_t> groups;  // into a list that outlives build(): no copy per slot
};

Expected<SlotNetwork> build(const PreparedProblem& problem, const std::vector<SlotSpec>& slots,
                            bool implicit_arcs) {
  const std::size_t type_count = problem.types.size();
  SlotNetwork net;
  net.job_count = problem.job_count;
  net.slot_count = slots.size();

  // The costliest path is the largest job arc plus the largest outlet; check before building.
  std::vector<std::int64_t> longest(type_count, 0);
  std::vector<std::size_t> top_level(type_count, 0);
  for (std::size_t j = 0; j < problem.job_count; ++j) {
    for (std::size_t t = 0; t < type_count; ++t)
      longest[t] = std::max(longest[t], problem.time(j, t));
  }
  for (const SlotSpec& slot : slots)
    top_level[slot.type] = std::max(top_level[slot.type], slot.level);
  Wide max_arc = 0;
  std::int64_t max_residual = 0;
  for (std::size_t t = 0; t < type_count; ++t) {
    max_arc = std::max(max_arc, Wide{longest[t]} * Wide(top_level[t]));
  }
  for (const MachineGroup& group : problem.groups) {
    max_residual = std::max(max_residual, group.residual_ticks);
  }
  const Wide max_path = (max_arc + max_residual) * Wide(net.node_count() + 1);
  if (max_path > Wide{kMaxPathTicks}) {
    return Error{
        "times too large for exact integer costs: a job's cost reaches " +
        std::to_string(static_cast<long double>(max_arc + max_residual) / kTicksPerSecond) +
        " s across " + std::to_string(net.node_count()) +
        " nodes, beyond 2^60 ms; shorten the times or the queue"};
  }

  // Slots of each type, by level, so each job links to its types' slots.
  std::vector<std::vector<std::size_t>> slots_of_type(type_count);
  for (std::size_t s = 0; s < slots.size(); ++s) slots_of_type[slots[s].type].push_back(s);

  // Sized up front: a big network's arcs are most of a solve's memory traffic.
  std::size_t arc_total = 0;
  for (std::size_t j = 0; j < problem.job_count; ++j) {
    for (std::size_t t = 0; t < type_count; ++t) {
      if (problem.time(j, t) != kCannotRun) arc_total += slots_of_type[t].size();
    }
  }
  if (!implicit_arcs && arc_total > kMaxExplicitArcs) {
    return Error{"the network would hold " + std::to_string(arc_total) + " job arcs, over the " +
                 std::to_string(kMaxExplicitArcs) +
                 " that fit in memory; the transport backend (or auto) solves it without them"};
  }
  if (implicit_arcs) {
    net.implicit = &problem;
    net.implicit_arc_count = arc_total;
  } else {
    net.arc_slot.reserve(arc_total);
    net.arc_cost.reserve(arc_total);
    net.job_begin.reserve(problem.job_count + 1);
    net.job_begin.push_back(0);
    for (std::size_t j = 0; j < problem.job_count; ++j) {
      for (std::size_t t = 0; t < type_count; ++t) {
        const std::int64_t time = problem.time(j, t);
        if (time == kCannotRun) continue;
        for (std::size_t s : slots_of_type[t]) {
          net.arc_slot.push_back(s);
          net.arc_cost.push_back(time * static_cast<std::int64_t>(slots[s].level));
        }
      }
      net.job_begin.push_back(net.arc_slot.size());
    }
  }

  net.slot_outlet_begin.reserve(slots.size() + 1);
  for (std::size_t s = 0; s < slots.size(); ++s) {
    net.slot_type.push_back(slots[s].type);
    net.slot_level.push_back(slots[s].level);
    net.slot_outlet_begin.push_back(net.outlets.size());
    for (std::size_t g : slots[s].groups) {
      const MachineGroup& group = problem.groups[g];
      net.outlets.push_back(
          {s, g, static_cast<std::int64_t>(group.machines.size()), group.residual_ticks});
    }
  }
  net.slot_outlet_begin.push_back(net.outlets.size());
  return net;
}

}  // namespace

Expected<SlotNetwork> build_level_network(const PreparedProblem& problem,
                                          const std::vector<std::size_t>& levels,
                                          bool implicit_arcs) {
  std::vector<std::vector<std::size_t>> groups_of_type(problem.types.size());
  for (std::size_t g = 0; g < problem.groups.size(); ++g) {
    groups_of_type[problem.groups[g].type].push_back(g);
  }
  std::vector<SlotSpec> slots;
  for (std::size_t t = 0; t < problem.types.size(); ++t) {
    for (std::size_t k = 1; k <= levels[t]; ++k) slots.push_back({t, k, groups_of_type[t]});
  }
  return build(problem, slots, implicit_arcs);
}

Expected<SlotNetwork> build_naive_network(const PreparedProblem& problem) {
  std::vector<std::size_t> group_ids(problem.groups.size());
  std::iota(group_ids.begin(), group_ids.end(), std::size_t{0});
  std::vector<SlotSpec> slots;
  for (std::size_t g = 0; g < problem.groups.size(); ++g) {
    const std::size_t type = problem.groups[g].type;
    for (std::size_t k = 1; k <= problem.runnable_jobs_of_type[type]; ++k) {
      slots.push_back({type, k, std::span<const std::size_t>(&group_ids[g], 1)});
    }
  }
  return build(problem, slots, false);
}

}  // namespace allox::matcher
