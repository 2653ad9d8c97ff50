#include "matcher/multi_unit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <tuple>

namespace allox::matcher {
namespace {

using Ticks = std::int64_t;
// Every time and residual must stay below this, so that J of them sum without overflow.
constexpr Ticks kMaxTicks = Ticks{1} << 40;

double seconds(Ticks t) {
  return static_cast<double>(t) / static_cast<double>(kTicksPerSecond);
}

struct Node {
  DeviceType device;
  std::vector<std::size_t> units;     // machine indices, ascending
  std::vector<Ticks> residual;        // per unit, for the plan
  std::vector<Ticks> bound_residual;  // per unit, ascending, busy flag ignored: for the bounds
};

// Busy units of one node over time: steps_[i] = (from, busy) until the next step's time.
class Profile {
 public:
  Profile(const std::vector<Ticks>& residuals) {
    std::vector<Ticks> ends(residuals);
    std::sort(ends.begin(), ends.end());
    int busy =
        static_cast<int>(std::count_if(ends.begin(), ends.end(), [](Ticks r) { return r > 0; }));
    steps_.push_back({0, busy});
    for (Ticks r : ends) {
      if (r <= 0) continue;
      --busy;
      if (steps_.back().first == r) {
        steps_.back().second = busy;
      } else {
        steps_.push_back({r, busy});
      }
    }
  }

  // Earliest start at which `need` more units stay free for `length` ticks on `capacity` units.
  Ticks earliest(int need, Ticks length, int capacity) const {
    std::size_t i = 0;
    while (true) {
      const Ticks start = steps_[i].first;
      std::size_t j = i;
      bool fits = true;
      for (; j < steps_.size() && (j == i || steps_[j].first < start + length); ++j) {
        if (steps_[j].second + need > capacity) {
          fits = false;
          break;
        }
      }
      if (fits) return start;
      i = j + 1;  // the last step is 0 busy, so a start there always fits
    }
  }

  void add(Ticks from, Ticks to, int units) {
    if (to <= from) return;
    const std::size_t a = split(from);
    const std::size_t b = split(to);
    for (std::size_t i = a; i < b; ++i) steps_[i].second += units;
  }

 private:
  // Index of the step starting at t, creating it.
  std::size_t split(Ticks t) {
    auto it = std::lower_bound(steps_.begin(), steps_.end(), t,
                               [](const auto& s, Ticks v) { return s.first < v; });
    if (it != steps_.end() && it->first == t) return static_cast<std::size_t>(it - steps_.begin());
    const int busy = std::prev(it)->second;
    it = steps_.insert(it, {t, busy});
    return static_cast<std::size_t>(it - steps_.begin());
  }

  std::vector<std::pair<Ticks, int>> steps_;
};

struct Placed {
  std::size_t node = 0;
  Ticks start = 0;
  Ticks finish = 0;
};

// One serial list schedule in `order`; each job at the node and time that finish it first.
std::vector<Placed> list_schedule(const std::vector<Node>& nodes,
                                  const std::vector<std::vector<std::optional<Ticks>>>& time_on,
                                  const std::vector<int>& units,
                                  const std::vector<std::size_t>& order) {
  std::vector<Profile> profiles;
  profiles.reserve(nodes.size());
  for (const Node& n : nodes) profiles.emplace_back(n.residual);
  std::vector<Placed> placed(order.size());
  for (std::size_t j : order) {
    std::optional<Placed> best;
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      const std::optional<Ticks>& p = time_on[j][n];
      const int capacity = static_cast<int>(nodes[n].units.size());
      if (!p || capacity < units[j]) continue;
      const Ticks start = profiles[n].earliest(units[j], *p, capacity);
      if (!best || start + *p < best->finish) best = Placed{n, start, start + *p};
    }
    // validate() guaranteed a node for every job.
    profiles[best->node].add(best->start, best->finish, units[j]);
    placed[j] = *best;
  }
  return placed;
}

Ticks cost_of(const std::vector<Placed>& placed) {
  Ticks sum = 0;
  for (const Placed& p : placed) sum += p.finish;
  return sum;
}

// The start order of a solved relaxation (ties: finish, index).
std::vector<std::size_t> start_order(const Schedule& plan) {
  std::vector<std::size_t> order(plan.assignments.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const Assignment& x = plan.assignments[a];
    const Assignment& y = plan.assignments[b];
    return std::tie(x.start, x.finish) < std::tie(y.start, y.finish);
  });
  return order;
}

}  // namespace

double GangSchedule::gap() const {
  if (lower_bound_ticks <= 0)
    return objective_ticks > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  return static_cast<double>(objective_ticks - lower_bound_ticks) /
         static_cast<double>(lower_bound_ticks);
}

Expected<GangSchedule> solve_gangs(const GangProblem& problem, const SolveOptions& options) {
  GangSchedule out;
  const std::size_t J = problem.jobs.size();
  if (J == 0) return out;
  if (problem.machines.empty()) return Error{"solve_gangs: jobs wait but there are no machines"};
  if (!std::isfinite(problem.now)) return Error{"solve_gangs: now must be finite"};

  // Nodes, residuals.
  const std::vector<Machine> machines(problem.machines.begin(), problem.machines.end());
  const std::vector<std::size_t> node_of = node_ids(machines);
  std::vector<Node> nodes;
  for (std::size_t m = 0; m < machines.size(); ++m) {
    if (node_of[m] >= nodes.size()) nodes.resize(node_of[m] + 1);
    Node& n = nodes[node_of[m]];
    n.device = machines[m].device;
    const double left = std::max(0.0, machines[m].busy_until - problem.now);
    if (!std::isfinite(left) || left * kTicksPerSecond >= static_cast<double>(kMaxTicks)) {
      return Error{"solve_gangs: machine " + machines[m].name + ": busy_until is out of range"};
    }
    const Ticks r = std::llround(left * kTicksPerSecond);
    const bool idle = problem.idle.empty() ? machines[m].busy_until <= problem.now
                                           : (m < problem.idle.size() && problem.idle[m]);
    n.bound_residual.push_back(r);
    n.units.push_back(m);
    n.residual.push_back(!idle && r == 0 ? 1 : r);
  }

  for (Node& n : nodes) std::sort(n.bound_residual.begin(), n.bound_residual.end());

  // Jobs: validation and times per node in ticks.
  std::vector<int> units(J);
  std::vector<std::vector<std::optional<Ticks>>> time_on(
      J, std::vector<std::optional<Ticks>>(nodes.size()));
  bool all_single = true;
  for (std::size_t j = 0; j < J; ++j) {
    const GangJob& job = problem.jobs[j];
    const std::string name = "job " + (job.id ? *job.id : std::to_string(j));
    if (job.time == nullptr) return Error{"solve_gangs: " + name + " has no times"};
    if (job.units < 1 || job.units > kMaxUnits) {
      return Error{"solve_gangs: " + name + ": units must be 1.." + std::to_string(kMaxUnits) +
                   ", got " + std::to_string(job.units)};
    }
    units[j] = job.units;
    all_single &= job.units == 1;
    std::map<DeviceType, Ticks> ticks;
    for (const auto& [device, t] : *job.time) {
      if (!std::isfinite(t) || t < 0 || t * kTicksPerSecond >= static_cast<double>(kMaxTicks)) {
        return Error{"solve_gangs: " + name + ": time." + device +
                     " must be a finite number of seconds in [0, 2^40 ms)"};
      }
      ticks[device] = std::llround(t * kTicksPerSecond);
    }
    bool fits = false;
    std::size_t largest = 0;
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      auto it = ticks.find(nodes[n].device);
      if (it == ticks.end()) continue;
      largest = std::max(largest, nodes[n].units.size());
      if (nodes[n].units.size() < static_cast<std::size_t>(job.units)) continue;
      time_on[j][n] = it->second;
      fits = true;
    }
    if (!fits) {
      return Error{"solve_gangs: " + name + ": units " + std::to_string(job.units) +
                   " is more than any node of a device type it can run on offers (largest: " +
                   std::to_string(largest) + ")"};
    }
  }
  if (J >= (std::size_t{1} << 20)) return Error{"solve_gangs: more than 2^20 jobs"};

  // The units relaxation, on a clock starting at 0 so that its ticks are ours exactly. With every
  // job on one unit it is the problem itself.
  std::vector<Machine> unit_machines = machines;
  for (std::size_t m = 0; m < unit_machines.size(); ++m) {
    const double left = std::max(0.0, machines[m].busy_until - problem.now);
    unit_machines[m].busy_until = seconds(std::llround(left * kTicksPerSecond));
  }
  std::vector<std::map<DeviceType, double>> unit_times(J);
  std::vector<PendingJob> unit_jobs(J);
  for (std::size_t j = 0; j < J; ++j) {
    for (const auto& [device, t] : *problem.jobs[j].time) {
      unit_times[j][device] = seconds(std::llround(t * kTicksPerSecond));
    }
    unit_jobs[j] = PendingJob{problem.jobs[j].id, &unit_times[j]};
  }
  MatchingProblem unit_problem{.now = 0, .machines = unit_machines, .jobs = unit_jobs, .idle = {}};
  if (!problem.idle.empty()) {
    unit_problem.idle = problem.idle;
    unit_problem.idle.resize(machines.size(), false);
  }
  Expected<Schedule> unit_plan = solve(unit_problem, options);
  if (!unit_plan.ok()) return Error{"solve_gangs (units relaxation): " + unit_plan.message()};

  if (all_single) {
    out.exact = true;
    out.objective_ticks = out.lower_bound_ticks = unit_plan->objective_ticks;
    for (const Assignment& a : unit_plan->assignments) {
      out.assignments.push_back(
          {a.job, {a.machine}, problem.now + a.start, problem.now + a.finish});
    }
  } else {
    // The squashed relaxation: one machine per node, a device type per (type, units).
    std::vector<Machine> squashed;
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      squashed.push_back({"node" + std::to_string(n),
                          nodes[n].device + "#" + std::to_string(nodes[n].units.size()),
                          seconds(nodes[n].bound_residual.front()), ""});
    }
    std::vector<std::map<DeviceType, double>> squashed_times(J);
    std::vector<PendingJob> squashed_jobs(J);
    for (std::size_t j = 0; j < J; ++j) {
      for (std::size_t n = 0; n < nodes.size(); ++n) {
        if (!time_on[j][n]) continue;
        const Ticks area = *time_on[j][n] * units[j];
        const auto capacity = static_cast<Ticks>(nodes[n].units.size());
        squashed_times[j][squashed[n].device] = seconds(area / capacity);  // rounded down
      }
      squashed_jobs[j] = PendingJob{problem.jobs[j].id, &squashed_times[j]};
    }
    MatchingProblem squashed_problem{
        .now = 0, .machines = squashed, .jobs = squashed_jobs, .idle = {}};
    SolveOptions plain = options;
    plain.memory = nullptr;  // other device names: keep the caller's memory for its own problem
    Expected<Schedule> squashed_plan = solve(squashed_problem, plain);
    if (!squashed_plan.ok()) {
      return Error{"solve_gangs (squashed relaxation): " + squashed_plan.message()};
    }
    // Each job alone: no sooner than k units of one node are free at once, plus its time.
    Ticks alone = 0;
    for (std::size_t j = 0; j < J; ++j) {
      Ticks first = std::numeric_limits<Ticks>::max();
      for (std::size_t n = 0; n < nodes.size(); ++n) {
        if (!time_on[j][n]) continue;
        first = std::min(first, nodes[n].bound_residual[units[j] - 1] + *time_on[j][n]);
      }
      alone += first;
    }
    out.lower_bound_ticks =
        std::max({unit_plan->objective_ticks, squashed_plan->objective_ticks, alone});

    std::vector<std::vector<std::size_t>> orders = {start_order(*unit_plan),
                                                    start_order(*squashed_plan)};
    std::vector<Ticks> fastest(J, std::numeric_limits<Ticks>::max());
    for (std::size_t j = 0; j < J; ++j) {
      for (const auto& t : time_on[j]) {
        if (t) fastest[j] = std::min(fastest[j], *t);
      }
    }
    std::vector<std::size_t> spt(J);
    std::iota(spt.begin(), spt.end(), 0);
    std::stable_sort(spt.begin(), spt.end(),
                     [&](std::size_t a, std::size_t b) { return fastest[a] < fastest[b]; });
    std::vector<std::size_t> area = spt;
    std::stable_sort(area.begin(), area.end(), [&](std::size_t a, std::size_t b) {
      return fastest[a] * units[a] < fastest[b] * units[b];
    });
    orders.push_back(std::move(spt));
    orders.push_back(std::move(area));

    std::optional<std::vector<Placed>> best;
    for (const std::vector<std::size_t>& order : orders) {
      std::vector<Placed> placed = list_schedule(nodes, time_on, units, order);
      if (!best || cost_of(placed) < cost_of(*best)) best = std::move(placed);
    }
    out.objective_ticks = cost_of(*best);

    // Units per job: sweep each node in (start, finish) order, lowest free units first. The
    // profile counted each job's units over [start, finish), so k units are free at its start; a
    // job of zero time holds its units for no time at all and takes the lowest k of its node
    // when none are free at that instant.
    std::vector<std::size_t> by_start(J);
    std::iota(by_start.begin(), by_start.end(), 0);
    std::stable_sort(by_start.begin(), by_start.end(), [&](std::size_t a, std::size_t b) {
      return std::tie((*best)[a].start, (*best)[a].finish) <
             std::tie((*best)[b].start, (*best)[b].finish);
    });
    std::vector<std::vector<Ticks>> free_at(nodes.size());
    for (std::size_t n = 0; n < nodes.size(); ++n) free_at[n] = nodes[n].residual;
    out.assignments.resize(J);
    for (std::size_t j : by_start) {
      const Placed& p = (*best)[j];
      GangAssignment& a = out.assignments[j];
      a.job = j;
      a.start = problem.now + seconds(p.start);
      a.finish = problem.now + seconds(p.finish);
      for (std::size_t u = 0; u < nodes[p.node].units.size(); ++u) {
        if (a.machines.size() == static_cast<std::size_t>(units[j])) break;
        if (free_at[p.node][u] <= p.start) {
          free_at[p.node][u] = std::max(free_at[p.node][u], p.finish);
          a.machines.push_back(nodes[p.node].units[u]);
        }
      }
      if (p.start == p.finish && a.machines.size() != static_cast<std::size_t>(units[j])) {
        a.machines.assign(nodes[p.node].units.begin(), nodes[p.node].units.begin() + units[j]);
      }
      if (a.machines.size() != static_cast<std::size_t>(units[j])) {
        return Error{"solve_gangs: internal error: the plan over-commits node of machine " +
                     machines[nodes[p.node].units.front()].name};
      }
    }
  }
  out.objective = seconds(out.objective_ticks);
  out.lower_bound = seconds(out.lower_bound_ticks);
  return out;
}

Expected<GangOnline> decide_gangs_online(const GangProblem& problem, const SolveOptions& options) {
  Expected<GangSchedule> plan = solve_gangs(problem, options);
  if (!plan.ok()) return plan.error();
  GangOnline out;
  for (const GangAssignment& a : plan->assignments) {
    out.estimated_start.push_back(a.start);
    if (a.start > problem.now) continue;
    const bool idle = std::all_of(a.machines.begin(), a.machines.end(), [&](std::size_t m) {
      return problem.idle.empty() ? problem.machines[m].busy_until <= problem.now
                                  : (m < problem.idle.size() && problem.idle[m]);
    });
    if (idle) out.start_now.push_back({a.job, a.machines.front()});
  }
  std::sort(out.start_now.begin(), out.start_now.end(),
            [](const GangStart& a, const GangStart& b) { return a.machine < b.machine; });
  out.plan = std::move(*plan);
  return out;
}

}  // namespace allox::matcher
