#include "extender/estimates.h"

#include <algorithm>
#include <set>

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
  std::vector<const ProfileSample*> usable;
  for (const ProfileSample& s : samples) {
    if (s.kind == ProfileSample::Kind::kProfile && s.iterations > 0 && s.seconds > 0) {
      usable.push_back(&s);
    }
  }
  if (iterations && !usable.empty()) {
    const double n_total = static_cast<double>(*iterations);
    std::set<std::int64_t> distinct;
    for (const ProfileSample* s : usable) distinct.insert(s->iterations);
    double seconds = 0;
    if (distinct.size() >= 2) {
      // Least squares for T(n) = a + b·n.
      double k = static_cast<double>(usable.size()), sx = 0, sy = 0, sxx = 0, sxy = 0;
      for (const ProfileSample* s : usable) {
        double x = static_cast<double>(s->iterations), y = s->seconds;
        sx += x, sy += y, sxx += x * x, sxy += x * y;
      }
      double b = (k * sxy - sx * sy) / (k * sxx - sx * sx);
      double a = (sy - b * sx) / k;
      seconds = a + b * n_total;
    }
    if (!(seconds > 0)) {  // one sample size, or a fit that predicts nonsense: per-iteration time
      double per_iteration = 0;
      for (const ProfileSample* s : usable) {
        per_iteration += s->seconds / static_cast<double>(s->iterations);
      }
      seconds = per_iteration / static_cast<double>(usable.size()) * n_total;
    }
    return {std::max(seconds, 1.0), TimeEstimate::Source::kProfile,
            static_cast<int>(usable.size())};
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
