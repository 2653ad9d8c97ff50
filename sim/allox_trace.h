// Loader for the AlloX paper's workload format (lenhattan86/allox_sim; docs/design.md,
// "Data").
//
// Each job is four lines:
//   # <index>
//   1 <job id> 1 <arrival seconds> <user (queue) name>
//   stage -1.0 <cpu cores> <mem GB> <cpu time s> <gpus> <gpu mem GB> <gpu time s> <tasks>
//         <cpu estimate error> <gpu estimate error>
//   0
// A job runs on one CPU node ("cpu") or one GPU ("gpu"). True times are the file's times;
// estimates are true × (1 + error), unless AlloxTraceOptions::exact_estimates is set. Cores and
// memory become what the job holds on a CPU node, GPUs and GPU memory what it holds on a GPU
// (Job::holds; only drf's reference resource vector reads them: the paper's cluster gives each
// job a whole CPU node or one GPU); tasks are read and unused. Linear in the file size.
#pragma once

#include <istream>
#include <string>

#include "core/result.h"
#include "sim/trace.h"

namespace allox {

struct AlloxTraceOptions {
  bool exact_estimates = false;  // ignore the file's errors: estimate = true time
};

// Errors name the source and line; a text without a job is one. The trace is sorted by arrival
// and passes validate_trace().
Expected<Trace> parse_allox_trace(std::istream& in, const std::string& source_name,
                                  const AlloxTraceOptions& options = {});
Expected<Trace> load_allox_trace(const std::string& path, const AlloxTraceOptions& options = {});

}  // namespace allox
