#include "profiler/linear_fit.h"

#include <cmath>
#include <set>
#include <string>

namespace allox {
namespace {

Status check(std::span<const TimingSample> samples) {
  if (samples.empty()) return Error{"no timing samples to fit"};
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const TimingSample& s = samples[i];
    if (!std::isfinite(s.iterations) || s.iterations <= 0) {
      return Error{"timing sample " + std::to_string(i) + ": iterations must be > 0, got " +
                   std::to_string(s.iterations)};
    }
    if (!std::isfinite(s.seconds) || s.seconds <= 0) {
      return Error{"timing sample " + std::to_string(i) + ": time must be > 0 seconds, got " +
                   std::to_string(s.seconds)};
    }
  }
  return OkStatus();
}

}  // namespace

Expected<LinearFit> fit_time_model(std::span<const TimingSample> samples) {
  if (Status ok = check(samples); !ok) return ok.error();
  std::set<double> distinct;
  double sn = 0, st = 0, snn = 0, snt = 0, ratio = 0;
  for (const TimingSample& s : samples) {
    distinct.insert(s.iterations);
    sn += s.iterations;
    st += s.seconds;
    snn += s.iterations * s.iterations;
    snt += s.iterations * s.seconds;
    ratio += s.seconds / s.iterations;
  }
  const auto count = static_cast<double>(samples.size());
  LinearFit fit;
  fit.samples = samples.size();
  fit.distinct_iterations = distinct.size();
  if (distinct.size() >= 2) {
    fit.seconds_per_iteration = (count * snt - sn * st) / (count * snn - sn * sn);
    fit.startup_seconds = (st - fit.seconds_per_iteration * sn) / count;
    if (fit.startup_seconds < 0 || fit.seconds_per_iteration <= 0) {
      fit.startup_seconds = 0;
      fit.seconds_per_iteration = snt / snn;
    }
  } else {
    fit.seconds_per_iteration = ratio / count;
  }
  double squares = 0;
  for (const TimingSample& s : samples) {
    double miss = s.seconds - fit.time_for(s.iterations);
    squares += miss * miss;
  }
  fit.rms_residual = std::sqrt(squares / count);
  return fit;
}

}  // namespace allox
