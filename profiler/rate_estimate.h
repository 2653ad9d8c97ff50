// What the profiler says about a job on one device type, and why (docs/design.md, "Profiler").
// Every estimate names its source and the evidence behind it, so that a report or a FailedNodes
// reason can say how far to trust it.
#pragma once

#include <cstddef>
#include <string>

namespace allox {

enum class EstimateSource {
  kProfile,          // fitted from this job's profiling runs on the device
  kProgress,         // refined from this job's progress reports on the device
  kDeclared,         // the job's own declared time (jobs file, pod annotation)
  kFamily,           // predicted from profiled jobs of the same family
  kThroughputTable,  // iterations / measured steps-per-second of the job's configuration
  kDefault,          // configured default for the device type
};

enum class Confidence { kHigh, kMedium, kLow };

const char* to_string(EstimateSource source);
const char* to_string(Confidence confidence);

struct RateEstimate {
  double total_seconds = 0;      // the whole job, from its start
  double remaining_seconds = 0;  // what is left; equals total_seconds for a job that never ran
  EstimateSource source = EstimateSource::kDefault;
  Confidence confidence = Confidence::kLow;
  std::size_t samples = 0;  // profiling samples and progress reports behind the estimate
  double rms_residual = 0;  // seconds, for fitted estimates
  std::string detail;       // one line for people, e.g. "family resnet: cpu/gpu ratio 4.1 (3 jobs)"
};

}  // namespace allox
