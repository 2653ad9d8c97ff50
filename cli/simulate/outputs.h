// What `allox simulate` writes into --out for its main runs: each run's summary.json, jobs.csv
// and shares.csv (in a folder per run when there are several, with comparison.csv beside them),
// and with --plots the JCT CDF and each run's shares. Errors stop the command (check.h).
#pragma once

#include <string>
#include <vector>

#include "cli/simulate/args.h"
#include "core/model.h"
#include "sim/experiment.h"
#include "sim/trace.h"

namespace allox::cli {

// Nothing without --out.
void write_runs(const SimulateArgs& args, const Trace& trace, const Cluster& cluster,
                const std::vector<Run>& runs);

// The runs' setting in a plot title: "10000 jobs, 20 cpu + 20 gpu, profiling on, profiler
// estimates, allox rules".
std::string plot_setting(const SimulateArgs& args, const Trace& trace, const Cluster& cluster);

}  // namespace allox::cli
