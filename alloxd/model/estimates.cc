#include "alloxd/model/estimates.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

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

namespace {

// Letters and digits only, lower case: "ResNet-50" and "resnet50" read alike.
std::string folded(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

}  // namespace

std::optional<double> table_time(const ThroughputTable& table, const std::string& model,
                                 std::optional<int> batch_size, const DeviceType& device,
                                 std::int64_t iterations) {
  const std::string wanted = folded(model);
  std::optional<ThroughputKey> chosen;
  int matches = 0;
  for (const ThroughputKey& key : table.keys()) {
    if (key.scale_factor != 1) continue;
    if (folded(key.config) == wanted) {  // a whole configuration, named as such
      chosen = key;
      matches = 1;
      break;
    }
    // "<name> (batch size B)", or a name alone for a model with one configuration.
    const std::string_view config = key.config;
    const auto open = config.find(" (batch size ");
    const std::string name = folded(config.substr(0, open));
    if (name != wanted) continue;
    if (open != std::string_view::npos && batch_size) {
      const std::string_view size = config.substr(open + 13, config.size() - open - 14);
      if (size != std::to_string(*batch_size)) continue;
    }
    chosen = key;
    ++matches;
  }
  if (!chosen || matches != 1) return std::nullopt;
  return table.job_time(*chosen, device, static_cast<double>(iterations));
}

const char* source_name(TimeEstimate::Source source) {
  switch (source) {
    case TimeEstimate::Source::kProfile:
      return "profile";
    case TimeEstimate::Source::kHint:
      return "hint";
    case TimeEstimate::Source::kTable:
      return "throughput-table";
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
