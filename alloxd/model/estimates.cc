#include "alloxd/model/estimates.h"

#include <algorithm>

#include "profiler/profiler.h"

namespace allox::extender {
namespace {

// The one job and device these functions ask the profiler about; the profiler only needs them
// to be consistent between add_*() and estimate().
constexpr const char* kJob = "job";
constexpr const char* kDevice = "device";

Job profiler_job(std::optional<std::int64_t> iterations, std::optional<double> declared) {
  Job job;
  job.id = kJob;
  job.iterations = iterations;
  if (declared) job.time[kDevice] = *declared;
  return job;
}

}  // namespace

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
  Profiler profiler({.default_seconds = {{kDevice, default_seconds}}});
  const Job job = profiler_job(iterations, hint);
  profiler.add_job(job);
  int used = 0;
  for (const ProfileSample& s : samples) {
    if (s.kind != ProfileSample::Kind::kProfile) continue;
    // The profiler refuses samples its fit cannot use (non-positive, non-finite); skip them.
    if (profiler.add_profile({kJob, kDevice, static_cast<double>(s.iterations), s.seconds}).ok()) {
      ++used;
    }
  }
  Expected<RateEstimate> e = profiler.estimate(job, kDevice);
  if (!e.ok()) return {default_seconds, TimeEstimate::Source::kDefault, 0};
  switch (e->source) {
    case EstimateSource::kProfile:
      return {std::max(e->total_seconds, 1.0), TimeEstimate::Source::kProfile, used};
    case EstimateSource::kDeclared:
      return {e->total_seconds, TimeEstimate::Source::kHint, 0};
    default:
      return {e->total_seconds, TimeEstimate::Source::kDefault, 0};
  }
}

double estimate_remaining(double estimate, double start, double now,
                          std::optional<std::int64_t> iterations,
                          const std::optional<ProfileSample>& progress) {
  const double elapsed = std::max(0.0, now - start);
  if (iterations && progress && progress->iterations > 0 && progress->seconds > 0) {
    Profiler profiler;
    const Job job = profiler_job(iterations, estimate);
    profiler.add_job(job);
    const bool reported =
        profiler
            .add_progress(
                {kJob, kDevice, static_cast<double>(progress->iterations), progress->seconds})
            .ok();
    Expected<RateEstimate> e = profiler.estimate(job, kDevice);
    if (reported && e.ok() && e->source == EstimateSource::kProgress) {
      // The profiler's remaining time is as of the report; time since then has also been spent.
      const double since_report = std::max(0.0, now - progress->at);
      return std::max(1.0, e->remaining_seconds - since_report);
    }
  }
  return std::max(1.0, estimate - elapsed);
}

}  // namespace allox::extender
