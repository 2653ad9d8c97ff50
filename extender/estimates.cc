#include "extender/estimates.h"

#include <algorithm>

#include "profiler/linear_fit.h"

namespace allox::extender {

const char* source_name(TimeEstimate::Source source) {
  switch (source) {
    case TimeEstimate::Source::kProfile:
      return "profile";
    case TimeEstimate::Source::kHint:
      return "hint";
    case TimeEstimate::Source::kDefault:
      return "default";
  }
  return "default";
}

TimeEstimate estimate_time(const std::vector<ProfileSample>& samples,
                           std::optional<std::int64_t> iterations, std::optional<double> hint,
                           double default_seconds) {
  std::vector<TimingSample> usable;
  for (const ProfileSample& s : samples) {
    if (s.kind == ProfileSample::Kind::kProfile && s.iterations > 0 && s.seconds > 0) {
      usable.push_back({static_cast<double>(s.iterations), s.seconds});
    }
  }
  if (iterations && !usable.empty()) {
    // The profiler's fit: least squares for T(n) = a + b·n, or a per-iteration time when the
    // samples share one n or noise makes a or b negative.
    auto fit = fit_time_model(usable);
    if (fit) {
      return {std::max(fit->time_for(static_cast<double>(*iterations)), 1.0),
              TimeEstimate::Source::kProfile, static_cast<int>(usable.size())};
    }
  }
  if (hint) return {*hint, TimeEstimate::Source::kHint, 0};
  return {default_seconds, TimeEstimate::Source::kDefault, 0};
}

double estimate_remaining(double estimate, double start, double now,
                          std::optional<std::int64_t> iterations,
                          const std::optional<ProfileSample>& progress) {
  double elapsed = std::max(0.0, now - start);
  if (iterations && progress && progress->iterations > 0 && progress->seconds > 0) {
    double left = static_cast<double>(*iterations - progress->iterations);
    double per_iteration = progress->seconds / static_cast<double>(progress->iterations);
    // The report is as of progress->at; time since then has also been spent.
    double since_report = std::max(0.0, now - progress->at);
    return std::max(1.0, left * per_iteration - since_report);
  }
  return std::max(1.0, estimate - elapsed);
}

}  // namespace allox::extender
