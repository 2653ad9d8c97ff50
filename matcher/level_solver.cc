#include "matcher/level_solver.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "matcher/flow_backend.h"
#include "matcher/position_solver.h"
#include "matcher/price_hints.h"

namespace allox::matcher {
namespace {

// Queues at least this long get a price hint from a list schedule (LEMON only).
constexpr std::size_t kHintMinJobs = 250;
// auto: the transport solver up to this many slots in the first grouped network (its Dijkstra
// is dense over them); beyond, the assignment solver when machines are nearly all of distinct
// device types: at most a quarter of them in types of kCrowdedType machines or more (measured
// 2-3x faster than LEMON on distinct machines from 1,000 jobs x 30 machines to 8,000 x 400, and
// on 100 distinct + 10 identical; where many machines share a type, even at distinct residual
// times, LEMON's grouped network is small and the assignment solver's searches long: 2,000 jobs
// x 100 machines of 10 types, 126 ms against 595; 100 distinct + 50 identical, 431 against
// 580), else LEMON (docs/results.md, "Matcher").
constexpr std::size_t kTransportMaxSlots = 256;
// A re-plan whose PriceMemory remembers every device type starts the transport solver at the
// previous solve's prices, so its work is the few augmentations the change since then needs, not
// a solve from a rough hint: there it stays faster than LEMON, which starts every solve from
// scratch, up to more slots (the overloaded 10-GPU replay of docs/results.md, "Speed": queues of
// up to ~4,000 jobs, up to ~380 slots, 1.7x less CPU than LEMON on the same solves).
constexpr std::size_t kTransportMaxSlotsWarm = 512;
constexpr std::size_t kCrowdedType = 3;
// A cluster of one device type is never the assignment solver's: a job takes the same time on
// every machine, so the machines' positions tie and its searches cover most of the queue, while
// the grouped network orders the whole queue alike and LEMON solves it at once (10,000 jobs on
// one machine, or on two of one type: LEMON 0.4-0.9 s, the assignment solver 6-15 s;
// docs/performance.md, "The matcher on few machines").

// First guess of levels per device type: the type's speed-proportional share of the jobs per
// machine, with a margin, and never fewer than the jobs that can only run there need.
std::vector<std::size_t> initial_levels(const PreparedProblem& problem) {
  const std::size_t type_count = problem.types.size();
  std::vector<double> speed(type_count, 0);  // jobs per tick on one machine of the type
  for (std::size_t t = 0; t < type_count; ++t) {
    double total = 0;
    for (std::size_t j = 0; j < problem.job_count; ++j) {
      const std::int64_t time = problem.time(j, t);
      if (time != kCannotRun) total += static_cast<double>(time) + 1;
    }
    speed[t] = total > 0 ? static_cast<double>(problem.runnable_jobs_of_type[t]) / total : 0;
  }
  double capacity = 0;
  for (std::size_t t = 0; t < type_count; ++t) {
    capacity += speed[t] * static_cast<double>(problem.machines_of_type[t]);
  }
  std::vector<std::size_t> levels(type_count, 0);
  for (std::size_t t = 0; t < type_count; ++t) {
    const double share = static_cast<double>(problem.job_count) * speed[t] / capacity;
    const auto guess = static_cast<std::size_t>(std::ceil(share * 1.3)) + 1;
    const std::size_t machines = problem.machines_of_type[t];
    const std::size_t needed = (problem.exclusive_jobs_of_type[t] + machines - 1) / machines;
    levels[t] = std::min(problem.runnable_jobs_of_type[t], std::max(guess, needed));
  }
  return levels;
}

// Grows type t's levels by half; false when it already has a level for every job it can run.
bool grow(const PreparedProblem& problem, std::size_t t, std::vector<std::size_t>& levels) {
  const std::size_t limit = problem.runnable_jobs_of_type[t];
  if (levels[t] >= limit) return false;
  levels[t] = std::min(limit, levels[t] + std::max<std::size_t>(1, levels[t] / 2));
  return true;
}

// Grows the types whose top level some group filled: the optimum may need deeper levels there.
bool grow_full_types(const PreparedProblem& problem, const SlotNetwork& network,
                     const SlotFlow& flow, std::vector<std::size_t>& levels) {
  bool grew = false;
  std::size_t first_slot = 0;
  for (std::size_t t = 0; t < problem.types.size(); ++t) {
    if (levels[t] == 0) continue;
    const std::size_t top = first_slot + levels[t] - 1;
    first_slot += levels[t];
    for (std::size_t o = network.slot_outlet_begin[top]; o < network.slot_outlet_begin[top + 1];
         ++o) {
      if (flow.outlet_flow[o] == network.outlets[o].capacity) {
        grew = grow(problem, t, levels) || grew;
        break;
      }
    }
  }
  return grew;
}

bool remembers_every_type(const PreparedProblem& problem, const PriceMemory& memory) {
  return std::all_of(problem.types.begin(), problem.types.end(),
                     [&](const DeviceType& type) { return memory.levels(type) > 0; });
}

Expected<LevelSolution> solve_grouped(const PreparedProblem& problem, Backend backend,
                                      PriceMemory* memory) {
  std::vector<std::size_t> levels = initial_levels(problem);
  if (memory != nullptr) {
    // The previous solve's depth is the best guess of this one's.
    for (std::size_t t = 0; t < levels.size(); ++t) {
      levels[t] = std::min(problem.runnable_jobs_of_type[t],
                           std::max(levels[t], memory->levels(problem.types[t])));
    }
  }
  std::optional<LevelSolution> previous;  // the last round, whose prices hint the next
  LevelSolution out;
  for (;;) {
    Expected<SlotNetwork> network = build_level_network(
        problem, levels, backend == Backend::kTransport || backend == Backend::kLemon);
    if (!network.ok()) return network.error();
    std::optional<PriceHint> hint;
    if (previous) {
      hint = carry_prices(*network, previous->network, previous->flow.slot_price);
    } else if (backend == Backend::kTransport && memory != nullptr &&
               remembers_every_type(problem, *memory)) {
      hint = PriceHint{std::vector<std::int64_t>(network->slot_count, 0), {}};
      recall_prices(problem, *network, *memory, *hint);  // the transport solver needs no seeds
    } else if ((backend == Backend::kLemon && problem.job_count >= kHintMinJobs) ||
               backend == Backend::kTransport) {
      hint = greedy_prices(problem, *network);
      if (memory != nullptr) recall_prices(problem, *network, *memory, *hint);
    }
    Expected<SlotFlow> flow = solve_flow(*network, backend, hint ? &*hint : nullptr);
    if (!flow.ok()) return flow.error();
    ++out.stats.rounds;
    out.stats.nodes = network->node_count();
    out.stats.arcs = network->arc_count();
    out.stats.model_arcs = flow->model_arcs > 0 ? flow->model_arcs : network->arc_count();
    if (!flow->feasible) {
      bool grew = false;
      for (std::size_t t = 0; t < levels.size(); ++t) grew = grow(problem, t, levels) || grew;
      if (grew) continue;
      return Error{
          "matcher: the network cannot carry every job although each can run somewhere "
          "(a bug)"};
    }
    if (grow_full_types(problem, *network, *flow, levels)) {
      if (!flow->slot_price.empty())
        previous = LevelSolution{std::move(*network), std::move(*flow), {}};
      continue;
    }
    if (memory != nullptr && !flow->slot_price.empty()) {
      remember_prices(problem, *network, flow->slot_price, *memory, &flow->outlet_flow);
    }
    out.network = std::move(*network);
    out.flow = std::move(*flow);
    return out;
  }
}

}  // namespace

Backend choose_backend(const PreparedProblem& problem, const PriceMemory* memory) {
  const std::vector<std::size_t> levels = initial_levels(problem);
  const std::size_t slots = std::accumulate(levels.begin(), levels.end(), std::size_t{0});
  if (slots <= kTransportMaxSlots) return Backend::kTransport;
  const bool warm = memory != nullptr && remembers_every_type(problem, *memory);
  if (warm && slots <= kTransportMaxSlotsWarm) return Backend::kTransport;
  std::size_t machines = 0;
  std::size_t crowded = 0;  // machines of types with kCrowdedType machines or more
  for (std::size_t count : problem.machines_of_type) {
    machines += count;
    if (count >= kCrowdedType) crowded += count;
  }
  const bool distinct = problem.types.size() > 1 && 4 * crowded <= machines;
  const bool fits = problem.job_count * machines <= kMaxPositionPairs;
  return distinct && fits ? Backend::kAssignment : Backend::kLemon;
}

Expected<LevelSolution> solve_levels(const PreparedProblem& problem, Backend backend,
                                     bool naive_graph, PriceMemory* memory) {
  if (!naive_graph) return solve_grouped(problem, backend, memory);
  Expected<SlotNetwork> network = build_naive_network(problem);
  if (!network.ok()) return network.error();
  Expected<SlotFlow> flow = solve_flow(*network, backend);
  if (!flow.ok()) return flow.error();
  if (!flow->feasible) return Error{"matcher: the naive network is infeasible (a bug)"};
  LevelSolution out;
  out.stats = {1, network->node_count(), network->arc_count(),
               flow->model_arcs > 0 ? flow->model_arcs : network->arc_count()};
  out.network = std::move(*network);
  out.flow = std::move(*flow);
  return out;
}

}  // namespace allox::matcher
