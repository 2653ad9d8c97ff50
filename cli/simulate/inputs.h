// What `allox simulate` runs on: the trace and the cluster its options name, and the checks that
// need several options (or the loaded cluster) at once. Every error names the option or file.
#pragma once

#include "cli/simulate/args.h"
#include "core/model.h"
#include "core/result.h"
#include "sim/trace.h"

namespace allox::cli {

// Options that only make sense together: a trace or --synthetic, --plots with --out.
Status check_option_pairs(const SimulateArgs& args);

// The trace file in its format (--format, else by extension), or the synthetic trace; with
// --exact-estimates, every estimate replaced by the true time.
Expected<Trace> load_trace(const SimulateArgs& args);

// The --cluster file, or the cluster --gpus, --cpus and --machines describe (at most
// kMaxClusterDevices devices).
Expected<Cluster> load_cluster(const SimulateArgs& args);

// Each --sweep-gpus value keeps the cluster within kMaxClusterDevices: checked before any run,
// so a value too large costs nothing.
Status check_sweep_gpus(const SimulateArgs& args, const Cluster& cluster);

}  // namespace allox::cli
