// Discrete-event replay of a Trace on a Cluster under one SchedulingPolicy.
//
// Events, in the order they are handled at equal times: a machine finishes (a job, a profiling
// run, or the initial busy period of a machine with busy_until > 0), jobs arrive, periodic
// rounds. After the events at time t the simulator
//   1. places pending profiling runs on idle machines (when profiling is on),
//   2. asks the policy to decide and applies its preemptions, then its starts; asks again while
//      the answer started jobs without preempting any and machines are still idle (a policy may
//      start one job per call; a preempted job competes again at the next event),
// then records each user's share of the machines. Time jumps from event to event; nothing ticks
// unless SimOptions::round_period asks for periodic rounds (time-slicing policies such as las).
//
// What decisions see (never true remaining time). A job's true time T on device d (the trace's
// true time) is a start-up cost s = min(ProfilingOptions::startup, T / 2) plus N iterations of
// equal length (N = Job::iterations, SimOptions::default_iterations when the trace has none).
// What a preempted run keeps is SimOptions::resume:
//   kCheckpoint (default; what a real job can do): it resumes from the last whole iteration done
//     (its checkpoint), losing the partial one, and pays s again.
//   kExact (the reference simulator's): it resumes at its exact fractional progress (the share
//     of T it ran) and pays nothing again: a resumed run lasts (1 − progress) × T.
// Running jobs report progress as a real job would, at iteration granularity: after each
// whole iteration, (iterations done, seconds since the run started). Completions use true times.
// Where p(j, d) comes from is SimOptions::estimates:
//   kProfiler (default): the profiler (profiler/profiler.h) is the single source. Profiling
//     runs (below) feed it samples (iterations, seconds) for its a + b·n fit; the trace's
//     estimation error is the measurement error of those runs (each sample's seconds are the
//     run's true length × (1 + e), e = estimate / true − 1 from the trace), so the fit predicts
//     the trace's estimate. Without profiling it predicts from the job's declared time (the
//     trace's estimate), its family or the throughput table. Progress reports refine a running
//     or preempted job's remaining time (the profiler's measured seconds per iteration).
//   kTrace: the trace's estimates, as the reference simulator uses them: a running job's
//     remaining time is estimate × (1 − iterations done at its start / N) − elapsed, floored at 0.
// Either way, a running job's estimated finish (RunningJob::estimated_finish, the machine's
// busy_until) is now + that remaining time, and a preempted job's QueuedJob::remaining holds it
// per device type.
//
// Profiling (ProfilingOptions, off by default) follows the reference AlloX simulator: each
// arriving job first runs, on each device type of the cluster it can use, one short run per
// fraction f (1% and 2% of its iterations there). Its length is ProfilingOptions::run_length:
//   kStartupPlusIterations (default): the start-up and f·N iterations, s + f × (T − s) seconds,
//     at least min_run (a real profiling run pays its start-up);
//   kFractionOfTime (the reference simulator's): max(f × T, min_run) seconds.
// Profiling runs take precedence over jobs and are served round-robin across users; a job becomes
// schedulable once the runs of every job that arrived at the same time are done. JCT still counts
// from arrival. A policy that reads no estimates (SchedulingPolicy::uses_estimates(), drffifo)
// gets no profiling runs.
//
// Multi-unit jobs (Job::units = k): a Placement's job takes the k lowest-index idle units of the
// named machine's node (fairness/policy.h) and holds them all until it finishes or is preempted;
// a node runs several jobs at once while its units allow. A placement on a node with fewer idle
// units is a contract error. Profiling runs take one unit each.
//
// Cost: O(E log E) for E events plus the policy's decide() calls (at most one per event, more when
// a policy starts one job per call) and O(M + Q) bookkeeping per decision for M machines and Q
// queued jobs. Deterministic: same trace, cluster, policy and options give the same result.
// Not thread-safe per policy instance; separate simulations may run on separate threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "fairness/policy.h"
#include "sim/trace.h"

namespace allox {

enum class ProfilingRunLength {
  kStartupPlusIterations,  // s + f × (T − s), at least min_run
  kFractionOfTime,         // the reference's: max(f × T, min_run)
};

struct ProfilingOptions {
  bool enabled = false;
  std::vector<double> fractions = {0.01, 0.02};  // of the job's iterations on each device type
  double min_run = 1;                            // seconds
  // Seconds every run (profiling or job) pays before its first iteration, capped at T / 2.
  double startup = 1;
  ProfilingRunLength run_length = ProfilingRunLength::kStartupPlusIterations;
};

enum class ResumeRule {
  kCheckpoint,  // from the last whole iteration, paying the start-up again
  kExact,       // the reference's: at the exact fractional progress, at no cost
};

enum class EstimateMode {
  kProfiler,  // the profiler's fit of profiling runs, refined by progress reports
  kTrace,     // the trace's estimates, minus elapsed time for a running job
};

// Periodic rounds one run may take: a minute's period over two years of simulated time. Past
// it a run is an error naming the period, not a run that seems to hang.
inline constexpr std::size_t kMaxPeriodicRounds = 1'000'000;

struct SimOptions {
  ProfilingOptions profiling;
  EstimateMode estimates = EstimateMode::kProfiler;
  ResumeRule resume = ResumeRule::kCheckpoint;
  std::int64_t default_iterations = 100;  // for jobs whose trace gives no iteration count
  double round_period = 0;  // seconds between periodic decide() rounds; 0 = events only
                            // (at most kMaxPeriodicRounds of them, else the run is an error)
  // Called now and then with the fraction of jobs finished (0..1); for a progress bar.
  std::function<void(double)> progress;
};

// One row per trace job. A job that never ran has no start/finish (and empty device/machine).
struct SimJobRecord {
  std::string job;
  std::string user;
  double arrival = 0;
  double schedulable = 0;       // when profiling finished (= arrival without profiling)
  std::optional<double> start;  // first start
  std::optional<double> finish;
  DeviceType device;          // device type it finished on
  std::string machine;        // machine it finished on (the lowest of its units)
  double estimated_time = 0;  // estimate on that device (full job)
  double true_time = 0;       // true time on that device (full job)
  int preemptions = 0;
  std::optional<double> last_start;  // start of the final run (differs from start if preempted)
  int units = 1;                     // devices it held (Job::units)
};

// Each user's busy machines (devices: a job of k units counts k; jobs and profiling runs) from
// `time` until the next sample.
struct ShareSample {
  double time = 0;
  std::vector<int> machines;  // indexed like SimResult::users
};

struct SimResult {
  std::string policy;
  std::vector<std::string> users;  // trace order
  std::vector<SimJobRecord> jobs;  // trace order (sorted by arrival)
  std::vector<ShareSample> shares;
  std::size_t machines = 0;
  std::size_t decide_calls = 0;
  std::size_t profiling_runs = 0;
  double wall_seconds = 0;  // host time spent simulating
  // The policy's SchedulingPolicy::plan_quality() at the end (allox with multi-unit jobs).
  std::optional<PlanQuality> plan_quality;
};

// Errors: an invalid trace, a cluster without machines, and any policy answer that breaks the
// contract (unknown or already running job, busy or unknown machine, a device the job cannot use,
// preemption from a non-preemptive policy), named with the policy and the simulated time.
Expected<SimResult> simulate(const Trace& trace, const Cluster& cluster, SchedulingPolicy& policy,
                             const SimOptions& options = {});

}  // namespace allox
