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
// Decisions use the trace's estimates; a job runs for its true time on the machine's device
// type. What a policy sees of a job that has run is refined by its progress, as progress reports
// would refine it: with fraction f of its work done, its estimated remaining time on device d is
// estimate(d) × (1 − f), both as a running job (estimated_finish, the machine's busy_until) and
// as a preempted one (QueuedJob::remaining). A preempted job keeps its progress on every device
// type. Decisions happen only when something happened (a finish, an arrival, a round).
//
// Profiling (ProfilingOptions, off by default) follows the reference AlloX simulator: each
// arriving job first runs, on each device type of the cluster it can use, one short run per
// fraction (1% and 2% of its true time there, at least min_run seconds). Profiling runs take
// precedence over jobs and are served round-robin across users; a job becomes schedulable once
// the runs of every job that arrived at the same time are done. JCT still counts from arrival.
//
// Cost: O(E log E) for E events plus the policy's decide() calls (at most one per event, more when
// a policy starts one job per call) and O(M + Q) bookkeeping per decision for M machines and Q
// queued jobs. Deterministic: same trace, cluster, policy and options give the same result.
// Not thread-safe per policy instance; separate simulations may run on separate threads.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "fairness/policy.h"
#include "sim/trace.h"

namespace allox {

struct ProfilingOptions {
  bool enabled = false;
  std::vector<double> fractions = {0.01, 0.02};  // of the job's true time on each device type
  double min_run = 1;                            // seconds
};

struct SimOptions {
  ProfilingOptions profiling;
  double round_period = 0;  // seconds between periodic decide() rounds; 0 = events only
  // Called now and then with the fraction of jobs finished (0..1); for a progress bar.
  std::function<void(double)> progress;
};

// One row per trace job. A job that never ran has no start/finish (and empty device/machine).
struct JobRecord {
  std::string job;
  std::string user;
  double arrival = 0;
  double schedulable = 0;       // when profiling finished (= arrival without profiling)
  std::optional<double> start;  // first start
  std::optional<double> finish;
  DeviceType device;          // device type it finished on
  std::string machine;        // machine it finished on
  double estimated_time = 0;  // estimate on that device (full job)
  double true_time = 0;       // true time on that device (full job)
  int preemptions = 0;
  std::optional<double> last_start;  // start of the final run (differs from start if preempted)
};

// Each user's busy machines (jobs and profiling runs) from `time` until the next sample.
struct ShareSample {
  double time = 0;
  std::vector<int> machines;  // indexed like SimResult::users
};

struct SimResult {
  std::string policy;
  std::vector<std::string> users;  // trace order
  std::vector<JobRecord> jobs;     // trace order (sorted by arrival)
  std::vector<ShareSample> shares;
  std::size_t machines = 0;
  std::size_t decide_calls = 0;
  std::size_t profiling_runs = 0;
  double wall_seconds = 0;  // host time spent simulating
};

// Errors: an invalid trace, a cluster without machines, and any policy answer that breaks the
// contract (unknown or already running job, busy or unknown machine, a device the job cannot use,
// preemption from a non-preemptive policy), named with the policy and the simulated time.
Expected<SimResult> simulate(const Trace& trace, const Cluster& cluster, SchedulingPolicy& policy,
                             const SimOptions& options = {});

}  // namespace allox
