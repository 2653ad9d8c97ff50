// Figures of merit for a finished simulation, computed from its JobRecords alone plus the trace's
// true times (for the isolated-slice baseline of ρ) and the cluster's machine counts.
//
// Definitions (all times in seconds, over completed jobs):
// - JCT = finish − arrival (profiling delay included). Percentiles interpolate linearly between
//   order statistics (numpy's default): p-th = x[(n−1)·p/100].
// - makespan = last finish − first arrival.
// - Isolated time of job j of user u: the time j would take alone on u's slice of the cluster,
//   the weight share s_u = w_u / Σw of every device type: min over device types d of
//   true(j,d) / min(1, s_u · n_d), for n_d machines of type d (a slice smaller than one machine
//   runs the job proportionally slower).
// - ρ_u = Σ JCT / Σ isolated time over u's completed jobs (finish-time fairness; 1 = as good as
//   owning the slice, larger is worse); max_rho = max over users. A user whose JCTs sum to 0
//   (jobs too short for the clock to tell their finish from their arrival) has ρ_u = 1.
// - jain = Jain's index (Σx)² / (n·Σx²) of x_u = 1/ρ_u over users with completed jobs: 1 when
//   every user is slowed down equally, 1/n when one user gets everything.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "sim/simulator.h"
#include "sim/trace.h"

namespace allox {

struct UserSummary {
  std::string user;
  std::size_t jobs = 0;
  std::size_t completed = 0;
  double avg_jct = 0;
  double rho = 0;
  double last_finish = 0;
};

struct SimSummary {
  std::string policy;
  std::optional<double> alpha;  // the fairness knob, for policies that have one (allox)
  std::size_t jobs = 0;
  std::size_t completed = 0;
  double avg_jct = 0;
  double p50_jct = 0;
  double p95_jct = 0;
  double p99_jct = 0;
  double makespan = 0;
  double jain = 0;
  double max_rho = 0;
  double sim_wall_s = 0;
  std::vector<UserSummary> per_user;  // trace user order
  std::optional<PlanQuality> plan;    // inexact plans' cost against their bounds (SimResult)
};

// Linear-interpolation percentile of `values` (need not be sorted); 0 for an empty list.
double percentile(std::vector<double> values, double p);

// Precondition: `result` came from simulate() on `trace` and `cluster`.
SimSummary summarize(const SimResult& result, const Trace& trace, const Cluster& cluster,
                     std::optional<double> alpha);

}  // namespace allox
