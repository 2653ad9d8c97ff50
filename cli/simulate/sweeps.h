// The further runs `allox simulate` makes after its main ones, each printed as a comparison
// table and, with --out, written as a CSV (and with --plots drawn): an α sweep of allox (or of the
// one --policy), an estimation-error sweep (estimates redrawn at each σ, seeded by --seed) and a
// load sweep (the cluster's GPUs replaced by each --sweep-gpus count). Each does nothing when its
// option is not given; errors stop the command (check.h).
#pragma once

#include <vector>

#include "cli/simulate/args.h"
#include "cli/simulate/rules.h"
#include "core/model.h"
#include "sim/experiment.h"
#include "sim/trace.h"

namespace allox::cli {

// `specs` are the main runs' policies.
void sweep_alpha(const SimulateArgs& args, const Trace& trace, const Cluster& cluster,
                 const std::vector<RunSpec>& specs, const RunSettings& settings);
void sweep_estimate_error(const SimulateArgs& args, const Trace& trace, const Cluster& cluster,
                          const std::vector<RunSpec>& specs, const RunSettings& settings);
void sweep_gpus(const SimulateArgs& args, const Trace& trace, const Cluster& cluster,
                const std::vector<RunSpec>& specs, const RunSettings& settings);

}  // namespace allox::cli
