// Running a set of policies over one trace and cluster for `allox simulate`, with the progress
// bar its options ask for: shown on a terminal for runs that take a while, at once with
// --progress, never with --no-progress.
#pragma once

#include <vector>

#include "cli/simulate/args.h"
#include "cli/simulate/rules.h"
#include "core/model.h"
#include "sim/experiment.h"
#include "sim/metrics.h"
#include "sim/trace.h"

namespace allox::cli {

// Every spec's run, in spec order, on --threads threads; an error stops the command (check.h).
std::vector<Run> run_with_progress(const SimulateArgs& args, const Trace& trace,
                                   const Cluster& cluster, const std::vector<RunSpec>& specs,
                                   const RunSettings& settings);

// The runs' summaries, in order.
std::vector<SimSummary> summaries_of(const std::vector<Run>& runs);

}  // namespace allox::cli
