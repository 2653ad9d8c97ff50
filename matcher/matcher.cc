#include "matcher/matcher.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>
#include <string>

#include "matcher/flow_backend.h"
#include "matcher/level_solver.h"
#include "matcher/position_solver.h"
#include "matcher/prepared_problem.h"
#include "matcher/slot_network.h"

namespace allox::matcher {
namespace {

// Turns a flow into a schedule. Jobs leave each slot through its outlets; within a group the
// jobs run shortest first, dealt round robin over the group's machines, which is optimal for
// identical machines (P||ΣCj) and so never costs more than the flow.
Schedule decode(const MatchingProblem& problem, const PreparedProblem& prepared,
                const SlotNetwork& network, const SlotFlow& flow) {
  // Flat buckets (counting sort), not a vector per slot and group: a simulator re-plans
  // thousands of times, each over a few hundred slots.
  std::vector<std::size_t> slot_begin(network.slot_count + 1, 0);
  for (std::size_t j = 0; j < prepared.job_count; ++j) ++slot_begin[flow.job_slot[j] + 1];
  for (std::size_t s = 0; s < network.slot_count; ++s) slot_begin[s + 1] += slot_begin[s];
  std::vector<std::size_t> slot_jobs(prepared.job_count);
  {
    std::vector<std::size_t> fill(slot_begin.begin(), slot_begin.end() - 1);
    for (std::size_t j = 0; j < prepared.job_count; ++j) slot_jobs[fill[flow.job_slot[j]]++] = j;
  }
  std::vector<std::size_t> group_begin(prepared.groups.size() + 1, 0);
  for (std::size_t o = 0; o < network.outlets.size(); ++o) {
    group_begin[network.outlets[o].group + 1] += static_cast<std::size_t>(flow.outlet_flow[o]);
  }
  for (std::size_t g = 0; g < prepared.groups.size(); ++g) group_begin[g + 1] += group_begin[g];
  std::vector<std::size_t> group_jobs(group_begin.back());
  {
    std::vector<std::size_t> fill(group_begin.begin(), group_begin.end() - 1);
    for (std::size_t s = 0; s < network.slot_count; ++s) {
      std::size_t next = slot_begin[s];
      for (std::size_t o = network.slot_outlet_begin[s]; o < network.slot_outlet_begin[s + 1];
           ++o) {
        std::size_t& at = fill[network.outlets[o].group];
        for (std::int64_t n = 0; n < flow.outlet_flow[o]; ++n) group_jobs[at++] = slot_jobs[next++];
      }
    }
  }

  Schedule plan;
  plan.assignments.resize(prepared.job_count);
  std::int64_t objective = 0;
  std::vector<std::int64_t> clock;  // per machine of the group: when its queue so far ends
  for (std::size_t g = 0; g < prepared.groups.size(); ++g) {
    const MachineGroup& group = prepared.groups[g];
    const std::span<std::size_t> jobs(group_jobs.data() + group_begin[g],
                                      group_begin[g + 1] - group_begin[g]);
    auto time = [&](std::size_t j) { return prepared.time(j, group.type); };
    std::sort(jobs.begin(), jobs.end(), [&](std::size_t a, std::size_t b) {
      return time(a) != time(b) ? time(a) < time(b) : a < b;
    });
    const std::size_t width = group.machines.size();
    clock.assign(width, group.residual_ticks);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const std::size_t lane = i % width;
      Assignment& a = plan.assignments[jobs[i]];
      a.job = jobs[i];
      a.machine = group.machines[lane];
      a.position = i / width + 1;
      const std::int64_t start = clock[lane];
      clock[lane] += time(jobs[i]);
      a.start = problem.now + static_cast<double>(start) / kTicksPerSecond;
      a.finish = problem.now + static_cast<double>(clock[lane]) / kTicksPerSecond;
      objective += clock[lane];
    }
  }
  plan.objective_ticks = objective;
  plan.objective = static_cast<double>(objective) / kTicksPerSecond;
  return plan;
}

}  // namespace

std::vector<PendingJob> pending_jobs(const std::vector<Job>& jobs) {
  std::vector<PendingJob> out;
  out.reserve(jobs.size());
  for (const Job& job : jobs) out.push_back({&job.id, &job.time});
  return out;
}

std::optional<std::int64_t> PriceMemory::price(const DeviceType& device, std::size_t level) const {
  auto it = prices_.find(device);
  if (it == prices_.end() || it->second.empty() || level == 0) return std::nullopt;
  return it->second[std::min(level, it->second.size()) - 1];
}

std::size_t PriceMemory::levels(const DeviceType& device) const {
  auto it = prices_.find(device);
  return it == prices_.end() ? 0 : it->second.size();
}

void PriceMemory::remember(const DeviceType& device, std::vector<std::int64_t> level_prices) {
  prices_[device] = std::move(level_prices);
}

bool is_idle(const MatchingProblem& problem, std::size_t machine) {
  return problem.machines[machine].busy_until <= problem.now &&
         (problem.idle.empty() || problem.idle[machine]);
}

std::string_view backend_name(Backend backend) {
  switch (backend) {
    case Backend::kAuto:
      return "auto";
    case Backend::kAssignment:
      return "assignment";
    case Backend::kLemon:
      return "lemon";
    case Backend::kBoost:
      return "boost";
    case Backend::kGlpk:
      return "glpk";
    case Backend::kTransport:
      return "transport";
  }
  return "unknown";
}

std::vector<Backend> all_backends() {
  return {Backend::kAuto, Backend::kLemon,     Backend::kBoost,
          Backend::kGlpk, Backend::kTransport, Backend::kAssignment};
}

Expected<Backend> parse_backend(std::string_view name) {
  for (Backend backend : all_backends()) {
    if (backend_name(backend) == name) return backend;
  }
  return Error{"unknown matcher backend '" + std::string(name) +
               "' (use auto, lemon, boost, glpk, transport or assignment)"};
}

namespace {

Expected<SlotFlow> solve_with(const SlotNetwork& network, Backend backend,
                              const PriceHint* price_hint) {
  switch (backend) {
    case Backend::kLemon:
      return solve_with_lemon(network, price_hint);
    case Backend::kBoost:
      return solve_with_boost(network);
    case Backend::kGlpk:
      return solve_with_glpk(network);
    case Backend::kTransport:
      return solve_with_transport(network, price_hint);
    case Backend::kAuto:
    case Backend::kAssignment:
      break;
  }
  return Error{"matcher backend " + std::string(backend_name(backend)) +
               " solves no slot network (a bug)"};
}

}  // namespace

Expected<SlotFlow> solve_flow(const SlotNetwork& network, Backend backend,
                              const PriceHint* price_hint) {
  if (network.implicit != nullptr && backend != Backend::kTransport && backend != Backend::kLemon) {
    return Error{"matcher: only the transport and LEMON backends read implicit job arcs (a bug)"};
  }
  Expected<SlotFlow> flow = solve_with(network, backend, price_hint);
  if (flow.ok() && flow->feasible && flow->job_slot.empty()) {
    for (std::size_t arc : flow->job_arc) flow->job_slot.push_back(network.arc_slot[arc]);
  }
  return flow;
}

Expected<Schedule> solve(const MatchingProblem& problem, const SolveOptions& options) {
  Expected<PreparedProblem> prepared = prepare(problem, !options.naive_graph);
  if (!prepared.ok()) return prepared.error();
  if (prepared->job_count == 0) {
    Schedule empty;
    empty.backend = options.backend;
    return empty;
  }

  Backend backend = options.backend;
  if (backend == Backend::kAuto) {
    // The naive graph (benchmarks only) is a network: LEMON solves it.
    backend = options.naive_graph ? Backend::kLemon : choose_backend(*prepared, options.memory);
  }
  if (backend == Backend::kAssignment && options.naive_graph) {
    return Error{"matcher: the assignment backend has no naive graph (use lemon, boost or glpk)"};
  }
  Expected<LevelSolution> solved =
      backend == Backend::kAssignment
          ? solve_by_positions(*prepared)
          : solve_levels(*prepared, backend, options.naive_graph, options.memory);
  if (!solved.ok()) return solved.error();
  const SlotNetwork& network = solved->network;
  const SlotFlow& flow = solved->flow;
  Schedule plan = decode(problem, *prepared, network, flow);
  if (plan.objective_ticks != flow.cost) {
    return Error{"matcher: backend " + std::string(backend_name(backend)) +
                 " returned a flow costing " + std::to_string(flow.cost) +
                 " ms but its schedule costs " + std::to_string(plan.objective_ticks) +
                 " ms: the flow was not optimal (a bug)"};
  }
  plan.backend = backend;
  plan.stats = solved->stats;
  return plan;
}

std::vector<std::vector<std::size_t>> machine_queues(const Schedule& plan,
                                                     std::size_t machine_count) {
  std::vector<std::vector<std::size_t>> queues(machine_count);
  for (const Assignment& a : plan.assignments) {
    auto& queue = queues[a.machine];
    if (queue.size() < a.position) queue.resize(a.position);
    queue[a.position - 1] = a.job;
  }
  return queues;
}

}  // namespace allox::matcher
