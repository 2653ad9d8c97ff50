// Processing-time estimates for the extender's jobs, from what alloxd has been told. The
// profiler (profiler/profiler.h) computes them; this file only maps alloxd's records onto it.
//
// For a job's variant on device d, in the profiler's order of preference:
//   1. profiling samples on d (POST /v1/profiles): the profiler's fit T(n) = a + b·n
//      (AlloX's start-up cost plus per-iteration time) evaluated at the job's iterations;
//   2. the pod's allox.io/time.<d> hint (the profiler's "declared" time);
//   3. the config's throughput table for the pod's allox.io/model (table_time), when it has
//      that model and device type (Gavel's: k80, p100, v100) and the pod gives its iterations;
//   4. the configured default.
// A running job's remaining time comes from its latest progress report through the profiler's
// progress refinement (measured seconds per iteration × iterations left, less the time since the
// report) when there is one, else from its estimate minus the time it has run, floored at one
// second. Family and throughput-table predictions need the profiler to know other jobs; alloxd
// does not keep one Profiler across jobs yet, so they are not used here.
//
// Thread-safe: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "alloxd/store/job_types.h"
#include "profiler/throughput_table.h"

namespace allox::extender {

struct TimeEstimate {
  double seconds = 0;
  enum class Source { kProfile, kHint, kTable, kDefault } source = Source::kDefault;
  int samples = 0;  // profiling samples behind a kProfile estimate
};
const char* source_name(TimeEstimate::Source source);

// samples: the job's profiling samples on `device` only (progress samples are ignored).
TimeEstimate estimate_time(const std::vector<ProfileSample>& samples,
                           std::optional<std::int64_t> iterations, std::optional<double> hint,
                           double default_seconds);

// iterations / the steps per second `table` has for `model` on `device`: nullopt when the
// table has no such model (names compare without case or punctuation: "resnet50" is
// "ResNet-50"; a whole configuration "ResNet-50 (batch size 64)" is one), no entry for the
// device, or several batch sizes of it and `batch_size` picks none. Machines per job: 1.
std::optional<double> table_time(const ThroughputTable& table, const std::string& model,
                                 std::optional<int> batch_size, const DeviceType& device,
                                 std::int64_t iterations);

// Remaining seconds of a job that started at `start` with total estimate `estimate`.
// progress: its latest progress sample, if any.
double estimate_remaining(double estimate, double start, double now,
                          std::optional<std::int64_t> iterations,
                          const std::optional<ProfileSample>& progress);

}  // namespace allox::extender
