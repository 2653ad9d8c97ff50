// Fits a job's running time on one device type as T(n) = a + b * n (docs/design.md, "Profiler"):
// a is the start-up cost (loading data, building the model), b the time per iteration. AlloX
// profiles a job for 1% and 2% of its iterations; two distinct n separate a from b.
//
// Algorithm: ordinary least squares over the samples when they cover two or more distinct n.
// A negative start-up or per-iteration time means noise swamped the signal; the fit then falls
// back to a line through the origin (a = 0, b = sum(n t) / sum(n^2)), which is always positive.
// With a single distinct n, a = 0 and b is the mean of t / n. The RMS residual (seconds) and the
// sample count are kept as the fit's confidence. O(S) for S samples.
//
// Samples must have n > 0 and t > 0 (finite); anything else is an error naming the sample.
#pragma once

#include <cstddef>
#include <span>

#include "core/result.h"

namespace allox {

struct TimingSample {
  double iterations = 0;
  double seconds = 0;
};

struct LinearFit {
  double startup_seconds = 0;        // a
  double seconds_per_iteration = 0;  // b
  std::size_t samples = 0;
  std::size_t distinct_iterations = 0;
  double rms_residual = 0;  // seconds

  double time_for(double iterations) const {
    return startup_seconds + seconds_per_iteration * iterations;
  }
};

Expected<LinearFit> fit_time_model(std::span<const TimingSample> samples);

}  // namespace allox
