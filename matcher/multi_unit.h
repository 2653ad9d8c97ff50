// Total completion time of queued jobs that need several devices of one node at once, with its
// lower bound and gap reported per solve (docs/design.md, "Matcher", multi-unit jobs).
//
// Problem. As matcher.h, except that a job j needs k_j units (Job::units) of one node, all of the
// device type t it runs on, for p(j,t) seconds (its time on k_j devices), and that a node of n
// units (machines sharing Machine::node and device, core/model.h) runs jobs side by side while
// their units add up to at most n. Unit u is free from its own residual r_u. Minimise
// Σ_j (C_j − now), non-preemptive. With every k_j = 1 this is R||ΣCj on the units, which solve()
// answers exactly; with mixed k it is strongly NP-hard (it contains P|size_j|ΣCj), so no exact
// polynomial method is known and this solver gives a feasible plan plus a proven lower bound.
//
// Algorithm.
//   k = 1 everywhere: solve() on the units as they are; the plan is exact (lower bound = cost).
//   Mixed k: the plan is the best of four serial list schedules: each takes the jobs in one order
//   and puts each at the earliest time k_j units of one node are free for p(j,t) (the node and
//   type that finish it first; ties to the lowest node), on a per-node step profile of busy units.
//   The orders: the start order of each relaxation below, shortest fastest time first, smallest
//   area (k·p) first.
//   Lower bound: the largest of three relaxations, two of them solved exactly by solve():
//     units:    every job needs one unit (widths dropped). Any plan is feasible for it with the
//               same completion times (keep one of each job's units), so its optimum ≤ OPT.
//     squashed: every node becomes one machine that processes area k·p(j,t) at rate n (a new type
//               per (t, n); jobs with k > n cannot use it), free from its units' smallest
//               residual. On a node, the jobs finishing by C_j hold area ≤ n·(C_j − r_min), so
//               running them back to back in finish order finishes each no later: optimum ≤ OPT.
//               Squashed times are rounded down to whole ticks, so rounding keeps the bound.
//     alone:    Σ_j of the earliest time k_j units of one node are free together, plus p(j,t).
//   The units and alone bounds are tight when jobs rarely queue; the squashed bound when wide jobs
//   queue deep. None sees fragmentation (a wide job waiting while one-unit jobs hold its node).
//   Reported gap = (cost − bound) / bound: an upper bound on how far the plan is from optimal.
//
// Guarantees: every plan is feasible (no node ever holds more units than it has; every job on k_j
// units of one node of a type it can run on; nothing before its units' residuals), its cost is
// recomputed from the plan, and lower_bound ≤ optimum ≤ objective. Times are whole ticks
// (matcher.h, "Time unit"). A unit flagged busy (MatchingProblem::idle) but free by now is planned
// at residual 0 by the bounds and 1 tick by the plan, so a job the plan starts at `now` holds
// only idle units.
//
// Cost: two solve() calls plus 4 · J · N · B for N nodes and B steps per node profile.
//
// Thread-safety: no state between calls; concurrent calls on different problems are safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "matcher/matcher.h"

namespace allox::matcher {

// A queued job that needs `units` devices of one node. Pointers are owned by the caller and must
// outlive the call.
struct GangJob {
  const std::string* id = nullptr;
  const std::map<DeviceType, double>* time = nullptr;  // seconds on `units` devices, per type
  int units = 1;
};

struct GangProblem {
  double now = 0;
  std::span<const Machine> machines;  // units; nodes from Machine::node (core/model.h)
  std::span<const GangJob> jobs;
  std::vector<bool> idle{};  // optional, as MatchingProblem::idle
};

struct GangAssignment {
  std::size_t job = 0;                // index into GangProblem::jobs
  std::vector<std::size_t> machines;  // its units, ascending, all of one node
  double start = 0;                   // absolute seconds
  double finish = 0;
};

struct GangSchedule {
  std::vector<GangAssignment> assignments;  // assignments[i].job == i
  std::int64_t objective_ticks = 0;         // Σ (finish − now)
  double objective = 0;
  std::int64_t lower_bound_ticks = 0;  // ≤ the optimum's Σ (finish − now)
  double lower_bound = 0;
  bool exact = false;  // every job needs one unit: solved by solve(), bound == objective
  // (objective − lower_bound) / lower_bound; 0 when both are 0, infinity when only the bound is
  // (every job of zero time, some delayed).
  double gap() const;
};

// Errors name the job and field: no machines while jobs wait, units outside 1..kMaxUnits, a job
// no node of its device types can hold (units larger than every such node), negative or
// non-finite times, times so large the tick sums could overflow; and any error of solve().
Expected<GangSchedule> solve_gangs(const GangProblem& problem, const SolveOptions& options = {});

// The jobs a plan starts now (start == now), with the plan's estimated start of every job.
struct GangStart {
  std::size_t job = 0;
  std::size_t machine = 0;  // the lowest of its units (fairness/policy.h, Placement)
};
struct GangOnline {
  std::vector<GangStart> start_now;
  std::vector<double> estimated_start;  // per job, absolute seconds
  GangSchedule plan;
};
Expected<GangOnline> decide_gangs_online(const GangProblem& problem,
                                         const SolveOptions& options = {});

}  // namespace allox::matcher
