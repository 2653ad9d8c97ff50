// Named experiment runs over one trace: a policy by name (fairness/policy.h), simulated and
// summarised, alone or as a comparison, an α sweep or a load (machine-count) sweep.
//
// A RunSpec names a policy and its α; "all" expands to every registered policy, and, when α is
// not 1, a second allox run at α = 1 (the paper reports both). las gets periodic rounds
// (default_round_period) so that demotions between its queues take effect between events.
// Runs are independent: run_all() may use several threads, and the result order is the spec
// order regardless.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "fairness/policy.h"
#include "sim/metrics.h"
#include "sim/simulator.h"
#include "sim/trace.h"

namespace allox {

struct RunSpec {
  std::string policy;
  double alpha = 0.1;
  std::string label;  // unique among the runs of one comparison; names output folders
};

struct Run {
  RunSpec spec;
  SimResult result;
  SimSummary summary;
};

// "all", one name, or a comma-separated list of names. Errors name unknown policies.
Expected<std::vector<RunSpec>> expand_policies(const std::string& arg, double alpha);

// Seconds between periodic rounds the simulator gives `policy` when the caller did not choose.
double default_round_period(const std::string& policy);

// `base` supplies every policy option except alpha (taken from spec). When
// sim.round_period is negative, default_round_period(spec.policy) applies.
Expected<Run> run_policy(const Trace& trace, const Cluster& cluster, const RunSpec& spec,
                         const PolicyOptions& base, const SimOptions& sim);

// Runs every spec, on up to `threads` threads; the first error (in spec order) wins.
// progress_for(i), when given, replaces sim.progress for run i.
using ProgressFactory = std::function<std::function<void(double)>(std::size_t)>;
Expected<std::vector<Run>> run_all(const Trace& trace, const Cluster& cluster,
                                   const std::vector<RunSpec>& specs, const PolicyOptions& base,
                                   const SimOptions& sim, unsigned threads,
                                   const ProgressFactory& progress_for = {});

// A cluster of `count[d]` machines per device type d, named <d>-0, <d>-1, ...; with units[d] = U
// > 1, count[d] nodes of U units each, units named <d>-0/0 .. <d>-0/<U-1>, ...
Cluster make_uniform_cluster(const std::map<DeviceType, int>& count,
                             const std::map<DeviceType, int>& units = {});

}  // namespace allox
