// Matcher benchmark: synthetic instances at the sizes the matcher is built for, timed solves, peak
// memory, and the speed-up over the naive graph. Library code behind `allox bench matcher`.
//
// Each measurement runs in a forked child process that builds its instance and solves it, so the
// reported peak resident memory (getrusage of the child) is that solve's alone. Instances are
// deterministic for a seed. Not thread-safe (forks).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "matcher/matcher.h"

namespace allox::matcher::bench {

struct BenchCase {
  std::string name;
  std::size_t jobs = 0;
  std::size_t machines = 0;
  std::size_t types = 3;  // device types; ignored when distinct
  bool distinct = false;  // every machine its own device type (own rates)
  double busy = 0;        // fraction of machines busy for 0..600 s (distinct residual times)
  bool online = false;    // time one re-solve after a single arrival (the simulator's loop)
  bool warm = false;      // online: the planner remembers prices from its previous solve
  bool naive = true;      // also time the naive J·M·J graph, if it has at most max_naive_arcs
  // Kubernetes nodes of 8 GPUs (one GPU type per node, 3 types) and 2 CPU bundles each, instead
  // of `types`: machines = 10 per node; CPU bundles are 3-10x slower than GPUs.
  // With gpu_nodes, `types` counts the CPU bundle and the GPU types (2: alloxd's "cpu" and "gpu").
  bool gpu_nodes = false;
  // The target for this case's median CPU time (0: none), and the row it is measured for.
  double target_ms = 0;
  std::string target_row{};
  // Time alloxd's planner instead of one solve: the allox policy (8 users round robin, alpha
  // 0.5, batch rounds, alloxd's starvation bound of 3,600 s, as `allox bench cluster`
  // configures alloxd) deciding over the instance as a job-book snapshot (each busy machine
  // runs a job). With `warm`, the policy decided once before, then the busy machine that frees
  // first finishes; the timed decide() is that re-plan, alloxd's steady state under a backlog.
  bool policy = false;
  // policy: the fraction of the queue (its first jobs) that has waited past the bound.
  double starved = 0;
};

// A benchmark instance; owns what its MatchingProblem views.
struct BenchInstance {
  double now = 0;
  std::vector<Machine> machines;
  std::vector<Job> jobs;
  std::vector<PendingJob> pending;
  MatchingProblem problem() const { return {now, machines, pending, {}}; }
};

// Machines of a type are identical unless busy (then each has its own residual time). Job
// sizes span 1 min to 3 h; device speed factors vary per job, so no type is best for all.
BenchInstance make_instance(const BenchCase& bench_case, unsigned seed);

struct Measurement {
  double solve_ms = 0;         // median wall time over repetitions
  double cpu_ms = 0;           // median CPU time of the same solves (robust to a busy machine)
  double peak_rss_mb = 0;      // child process peak resident set
  std::size_t arcs = 0;        // of the last round's network
  std::size_t model_arcs = 0;  // of those, the ones the solver actually priced into its model
  int rounds = 0;
  double objective = 0;
};

struct BenchRow {
  BenchCase bench_case;
  Measurement grouped;
  std::optional<Measurement> naive;  // absent when too large or not asked for
  std::size_t naive_arcs = 0;        // J·Σ_m J_m: what the naive graph would need
};

struct BenchOptions {
  int repetitions = 3;
  std::size_t max_naive_arcs = 15'000'000;
  Backend backend = Backend::kAuto;
  unsigned seed = 1;
};

std::vector<BenchCase> standard_cases();  // the ones with a target_ms are the target rows

// The simulator's target row: `allox simulate` on the AlloX paper workload at 10 GPUs + 20 CPU
// nodes, profiling on, policy allox at α = 1, run as a child process of `allox_binary`; the
// child's CPU time (user + system) in ms, or an Error when it fails.
struct SimulatorRow {
  std::string trace = "data/allox-google/jobs_input_10_Google.txt";
  double target_ms = 10'000;
};
Expected<double> time_simulator_row(const std::string& allox_binary, const SimulatorRow& row);
Expected<BenchRow> run_case(const BenchCase& bench_case, const BenchOptions& options);

}  // namespace allox::matcher::bench
