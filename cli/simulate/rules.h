// The rules every run of one `allox simulate` shares, resolved from its options and its trace:
// --rules reference sets the reference simulator's rule wherever allox's default differs, each
// rule's own option overrides it, and drf's reference vector needs a trace that states what each
// job holds (the AlloX format does).
#pragma once

#include <string>

#include "cli/simulate/args.h"
#include "core/model.h"
#include "core/result.h"
#include "fairness/policy.h"
#include "sim/simulator.h"
#include "sim/trace.h"

namespace allox::cli {

struct RunSettings {
  PolicyOptions policy;  // every policy option but α, which each run's spec gives
  SimOptions sim;
  // The resolved values of the rule options, as the header line names them.
  std::string srpt_rank;
  std::string resume;
  std::string profiling_run;
  std::string drf_vector;
};

// Error when --drf-vector reference is asked for on a trace that states no resources per job.
Expected<RunSettings> resolve_rules(const SimulateArgs& args, const Trace& trace);

// The line above the comparison table: "7 jobs, 2 users, 9 machines; profiling off; estimates
// from the profiler; rules: srpt-rank remaining, ...".
std::string settings_line(const SimulateArgs& args, const Trace& trace, const Cluster& cluster,
                          const RunSettings& settings);

}  // namespace allox::cli
