// Exact minimum total completion time of queued jobs on interchangeable machines (R||ΣCj),
// docs/design.md, "Matcher".
//
// Problem. Queued jobs wait at time `now`. Machine m runs one job at a time on its device type t
// and is free from busy_until (its residual time is r_m = max(0, busy_until − now)). Job j takes
// p(j,t) seconds on a machine of type t and cannot run on a type it has no time for. Find for every
// job a machine and a position so that Σ_j (C_j − now) is minimal, jobs non-preemptive.
//
// Algorithm. A job in the k-th-from-last position of machine m adds k·p(j,t) + r_m to the
// objective (it delays itself and the k−1 jobs behind it); the min-cost assignment of jobs to
// (machine, k) slots is optimal (Horn 1973; Bruno, Coffman and Sethi 1974; AlloX section 3).
// allox solves an equivalent, much smaller min-cost flow:
//
//   job j ──k·p(j,t)──▶ level (t,k) ──r_g, capacity n_g──▶ sink      (one arc per group g of t)
//
// A group is the set of machines sharing device type, residual time and idle flag; n_g is its
// size. In a busy cluster most groups hold one machine (each busy until its own time); the
// groups of a type at level k are parallel arcs with one job-side cost, so the transport
// backend treats them as one convex cost per level (cheapest residual first) and its work stays
// per (type, level), not per group. The idle flag only decides who may start now
// (online.h); a machine free by now but flagged busy is planned at residual 0 like an idle one.
// Every schedule is such a flow, and every flow decodes into a schedule that costs no more (within
// a group: shortest job first, round robin over its machines), so the min-cost flow is an optimal
// schedule. Levels are added lazily: type t starts with its speed-proportional share of the jobs
// per machine plus a margin; if some group of t fills its top level, t gets more levels and the
// flow is solved again. When no group's top level is full the plan is optimal for the unbounded
// problem (the top level's node potentials extend to every higher level).
//
// Size: J + Σ_t L_t + 1 nodes and J·Σ_t L_t + Σ_g L_t arcs for L_t levels of type t, against
// J·M·J arcs for the naive graph (SolveOptions::naive_graph); job arcs are computed from the
// times, not stored. LEMON does not hand all of them to NetworkSimplex: for queues of 250 jobs or
// more it starts from each job's few most promising arcs (prices read off a list schedule, which
// also seeds a feasible assignment) and adds arcs while any has a negative reduced cost, so the
// optimum is the same (column generation; lemon_flow.cc). The transport backend solves the same
// network over its slots only; the assignment backend needs no levels (position_solver.h).
// Backend::kAuto picks among the three by the instance's shape. Measured on 2 cores under load
// (docs/results.md, auto): 10,000 jobs on 1,000 machines of 3 types in ~26 ms CPU, 2,000 jobs
// on 100 distinct machines in ~0.23 s, re-planning 10,000 jobs after one arrival in ~6 ms,
// 50,000 jobs on 5,000 nodes with 95% of machines busy at distinct times in ~0.1-0.25 s.
//
// Time unit. Times are rounded to whole milliseconds (kTicksPerSecond) and costs are int64 ticks:
// the plan is exactly optimal for the rounded times, and the plan's times are the rounded ones.
// If a node potential could exceed 2^60 ticks (huge times times many positions) solve() returns
// an error; it never returns a wrong answer.
//
// Usage:
//   std::vector<PendingJob> jobs = pending_jobs(workload.jobs);
//   MatchingProblem problem{.now = 0, .machines = cluster.machines, .jobs = jobs};
//   Expected<Schedule> plan = solve(problem);  // Backend::kAuto
//
// Thread-safety: solve() keeps no state between calls and may run concurrently on different
// problems (GLPK keeps its environment per thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/result.h"

namespace allox::matcher {

inline constexpr std::int64_t kTicksPerSecond = 1000;

// A job waiting to be placed. Both pointers are non-null, stay owned by the caller and must
// outlive solve().
struct PendingJob {
  const std::string* id = nullptr;                     // names the job in errors
  const std::map<DeviceType, double>* time = nullptr;  // (remaining) seconds per runnable device
};

// Views over `jobs`: one PendingJob per job, using Job::time.
std::vector<PendingJob> pending_jobs(const std::vector<Job>& jobs);

struct MatchingProblem {
  double now = 0;                     // seconds; machines free before now have residual 0
  std::span<const Machine> machines;  // not owned
  std::span<const PendingJob> jobs;   // not owned; any subset of a queue
  // Optional, one flag per machine. false marks a machine still running a job whose estimate has
  // run out (busy_until <= now): it is planned as freeing up now but never gets a job to start
  // now. Empty means: a machine is idle exactly when busy_until <= now.
  std::vector<bool> idle;
};

// Whether `machine` can start a job now: free by now and not flagged busy.
bool is_idle(const MatchingProblem& problem, std::size_t machine);

enum class Backend {
  kAuto,        // the fastest exact one for the instance: transport, assignment or LEMON
  kLemon,       // LEMON NetworkSimplex with column generation
  kBoost,       // Boost Graph successive shortest paths; an independent check
  kGlpk,        // GLPK simplex on the assignment LP; an independent check, small problems only
  kTransport,   // successive shortest paths over the slot side; fastest on grouped machines
  kAssignment,  // shortest augmenting paths on jobs x (machine, position); many distinct machines
};
std::string_view backend_name(Backend backend);
// "auto", "lemon", "boost", "glpk", "transport", "assignment"
Expected<Backend> parse_backend(std::string_view name);
std::vector<Backend> all_backends();

// Slot prices remembered from one solve for the next, when a caller re-plans the same queue as
// it changes (one arrival, one completion): LEMON then starts near the new optimum. A hint only:
// it changes speed, never an answer, so a stale or foreign memory is harmless. Not thread-safe;
// keep one per planner (simulation, server).
class PriceMemory {
 public:
  // Price of level `level` (1-based) of `device`, if remembered; beyond the remembered levels,
  // the deepest one's.
  std::optional<std::int64_t> price(const DeviceType& device, std::size_t level) const;
  // How many levels of `device` the remembered solve needed (0 if unknown).
  std::size_t levels(const DeviceType& device) const;
  void remember(const DeviceType& device, std::vector<std::int64_t> level_prices);
  void clear() { prices_.clear(); }

 private:
  std::map<DeviceType, std::vector<std::int64_t>> prices_;
};

struct SolveOptions {
  Backend backend = Backend::kAuto;
  // For benchmarks: every machine its own slot set with all J positions, as in the reference
  // implementation (J·M·J arcs). Same answer, far slower.
  bool naive_graph = false;
  // Optional (LEMON, transport): read before and updated after the solve. See PriceMemory.
  PriceMemory* memory = nullptr;
};

struct Assignment {
  std::size_t job = 0;       // index into MatchingProblem::jobs
  std::size_t machine = 0;   // index into MatchingProblem::machines
  std::size_t position = 0;  // 1 runs first on its machine
  double start = 0;          // absolute seconds
  double finish = 0;
};

struct SolveStats {
  int rounds = 0;         // min-cost flow solves (lazy level rounds)
  std::size_t nodes = 0;  // of the last round's network
  std::size_t arcs = 0;
  std::size_t model_arcs = 0;  // arcs the solver priced into its model (LEMON column generation)
};

struct Schedule {
  std::vector<Assignment> assignments;  // assignments[i].job == i
  std::int64_t objective_ticks = 0;     // Σ (finish − now), exact, in ticks
  double objective = 0;                 // the same in seconds
  Backend backend = Backend::kAuto;     // the backend that solved it (auto resolved)
  SolveStats stats;
};

// Solves the problem exactly. Errors (naming the job or field): no machines while jobs wait, a
// job that can run on no machine of the cluster, a negative or non-finite time, times so large
// that the integer costs could overflow. No jobs gives an empty plan.
Expected<Schedule> solve(const MatchingProblem& problem, const SolveOptions& options = {});

// The plan's job indices per machine, in run order (position 1 first).
std::vector<std::vector<std::size_t>> machine_queues(const Schedule& plan,
                                                     std::size_t machine_count);

}  // namespace allox::matcher
