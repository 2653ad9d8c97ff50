#include "profiler/profiler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace allox {
namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

std::string format(const char* fmt, double a, double b = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, fmt, a, b);
  return buf;
}

}  // namespace

const char* to_string(EstimateSource source) {
  switch (source) {
    case EstimateSource::kProfile:
      return "profile";
    case EstimateSource::kProgress:
      return "progress";
    case EstimateSource::kDeclared:
      return "declared";
    case EstimateSource::kFamily:
      return "family";
    case EstimateSource::kThroughputTable:
      return "throughput-table";
    case EstimateSource::kDefault:
      return "default";
  }
  return "unknown";
}

const char* to_string(Confidence confidence) {
  switch (confidence) {
    case Confidence::kHigh:
      return "high";
    case Confidence::kMedium:
      return "medium";
    case Confidence::kLow:
      return "low";
  }
  return "unknown";
}

Profiler::Profiler(ProfilerOptions options) : options_(std::move(options)) {}

void Profiler::add_job(const Job& job) {
  jobs_[job.id] = job;
}

Status Profiler::add_profile(const ProfileRun& sample) {
  Profile candidate = profiles_[{sample.job, sample.device}];
  candidate.samples.push_back({sample.iterations, sample.seconds});
  Expected<LinearFit> fit = fit_time_model(candidate.samples);
  if (!fit.ok()) {
    if (candidate.samples.size() == 1) profiles_.erase({sample.job, sample.device});
    return Error{"profile of job " + sample.job + " on " + sample.device + ": " + fit.message()};
  }
  candidate.fit = *fit;
  profiles_[{sample.job, sample.device}] = std::move(candidate);
  return OkStatus();
}

Status Profiler::add_progress(const ProgressReport& report) {
  const std::string where = "progress of job " + report.job + " on " + report.device + ": ";
  if (!std::isfinite(report.iterations_done) || report.iterations_done < 0) {
    return Error{where + "iterations done must be >= 0, got " +
                 std::to_string(report.iterations_done)};
  }
  if (!std::isfinite(report.elapsed_seconds) || report.elapsed_seconds <= 0) {
    return Error{where + "elapsed time must be > 0 seconds, got " +
                 std::to_string(report.elapsed_seconds)};
  }
  double& job_done = done_[report.job];
  if (report.iterations_done < job_done) {
    return Error{where + "iterations done go backwards (" + std::to_string(report.iterations_done) +
                 " after " + std::to_string(job_done) + ")"};
  }
  Progress& p = progress_[{report.job, report.device}];
  // A smaller elapsed time, or the job's last report coming from another device type, means a
  // new run: it resumed from the iterations done so far and paid its start-up cost again.
  bool new_run = p.reports == 0 || report.elapsed_seconds < p.elapsed ||
                 last_device_[report.job] != report.device;
  double new_iterations = report.iterations_done - (new_run ? job_done : p.done);
  if (new_iterations > 0) {
    double startup = 0;
    auto profile = profiles_.find({report.job, report.device});
    if (profile != profiles_.end()) startup = profile->second.fit.startup_seconds;
    double spent = new_run ? std::max(report.elapsed_seconds - startup, 0.0)
                           : report.elapsed_seconds - p.elapsed;
    double observed = spent / new_iterations;
    if (p.seconds_per_iteration == 0 && profile != profiles_.end()) {
      p.seconds_per_iteration = profile->second.fit.seconds_per_iteration;
    }
    p.seconds_per_iteration = p.seconds_per_iteration == 0
                                  ? observed
                                  : (1 - options_.progress_weight) * p.seconds_per_iteration +
                                        options_.progress_weight * observed;
  }
  p.done = report.iterations_done;
  p.elapsed = report.elapsed_seconds;
  ++p.reports;
  job_done = report.iterations_done;
  last_device_[report.job] = report.device;
  return OkStatus();
}

std::optional<RateEstimate> Profiler::from_profile(const Job& job, const DeviceType& device) const {
  auto it = profiles_.find({job.id, device});
  if (it == profiles_.end() || !job.iterations) return std::nullopt;
  const LinearFit& fit = it->second.fit;
  RateEstimate e;
  e.total_seconds = e.remaining_seconds = fit.time_for(static_cast<double>(*job.iterations));
  e.source = EstimateSource::kProfile;
  e.samples = fit.samples;
  e.rms_residual = fit.rms_residual;
  bool tight = fit.distinct_iterations >= 2 && fit.rms_residual <= 0.05 * e.total_seconds;
  e.confidence = tight ? Confidence::kHigh : Confidence::kMedium;
  e.detail =
      format("a = %.3g s, b = %.3g s/iteration", fit.startup_seconds, fit.seconds_per_iteration);
  return e;
}

std::optional<RateEstimate> Profiler::from_family(const Job& job, const DeviceType& device) const {
  if (job.family.empty()) return std::nullopt;
  std::vector<const Job*> peers;
  for (const auto& [id, other] : jobs_) {
    if (id != job.id && other.family == job.family) peers.push_back(&other);
  }
  auto fit_of = [&](const Job& j, const DeviceType& d) -> const LinearFit* {
    auto it = profiles_.find({j.id, d});
    return it == profiles_.end() ? nullptr : &it->second.fit;
  };

  // (a) Scale this job's time on another device by the family's median speed ratio.
  std::optional<RateEstimate> best;
  std::size_t best_peers = 0;
  std::vector<DeviceType> others;
  for (const auto& [key, profile] : profiles_) {
    if (key.first == job.id && key.second != device) others.push_back(key.second);
  }
  for (const auto& [d, t] : job.time) {
    if (d != device) others.push_back(d);
  }
  for (const DeviceType& other : others) {
    std::vector<double> ratios;
    for (const Job* peer : peers) {
      const LinearFit* here = fit_of(*peer, device);
      const LinearFit* there = fit_of(*peer, other);
      if (here && there)
        ratios.push_back(here->seconds_per_iteration / there->seconds_per_iteration);
    }
    if (ratios.size() <= best_peers) continue;
    std::optional<RateEstimate> base = from_profile(job, other);
    if (!base && job.time_on(other)) {
      base = RateEstimate{};
      base->total_seconds = *job.time_on(other);
    }
    if (!base) continue;
    double ratio = median(ratios);
    best = RateEstimate{};
    best->total_seconds = best->remaining_seconds = base->total_seconds * ratio;
    best->samples = ratios.size();
    best->detail = "family " + job.family + ": " + device + "/" + other + " ratio " +
                   format("%.3g over %g jobs", ratio, static_cast<double>(ratios.size()));
    best_peers = ratios.size();
  }
  // (b) The family's median time on this device for the same iteration count.
  if (!best && job.iterations) {
    std::vector<double> times;
    for (const Job* peer : peers) {
      if (const LinearFit* fit = fit_of(*peer, device)) {
        times.push_back(fit->time_for(static_cast<double>(*job.iterations)));
      }
    }
    if (!times.empty()) {
      best = RateEstimate{};
      best->total_seconds = best->remaining_seconds = median(times);
      best->samples = times.size();
      best->detail = "family " + job.family + ": median fitted time on " + device +
                     format(" over %g jobs", static_cast<double>(times.size()));
    }
  }
  if (best) {
    best->source = EstimateSource::kFamily;
    best->confidence = best->samples >= 3 ? Confidence::kMedium : Confidence::kLow;
  }
  return best;
}

std::optional<RateEstimate> Profiler::from_table(const Job& job, const DeviceType& device) const {
  if (!options_.throughputs || job.family.empty() || !job.iterations) return std::nullopt;
  // A family that is not a Gavel key (or names an absurd scale factor) is a configuration of
  // one machine; one that names none in the table has no estimate from it.
  Expected<ThroughputKey> parsed = parse_gavel_key(job.family);
  const ThroughputKey key = parsed ? *parsed : ThroughputKey{job.family, 1};
  std::optional<double> time =
      options_.throughputs->job_time(key, device, static_cast<double>(*job.iterations));
  if (!time) return std::nullopt;
  RateEstimate e;
  e.total_seconds = e.remaining_seconds = *time;
  e.source = EstimateSource::kThroughputTable;
  e.confidence = Confidence::kLow;
  e.detail = "throughput table: " + key.config +
             format(" at %.3g steps/s", *options_.throughputs->steps_per_second(key, device));
  return e;
}

Expected<RateEstimate> Profiler::base_estimate(const Job& job, const DeviceType& device) const {
  if (auto e = from_profile(job, device)) return *e;
  if (auto declared = job.time_on(device)) {
    RateEstimate e;
    e.total_seconds = e.remaining_seconds = *declared;
    e.source = EstimateSource::kDeclared;
    e.confidence = Confidence::kMedium;
    e.detail = "declared by the job";
    return e;
  }
  if (auto e = from_family(job, device)) return *e;
  if (auto e = from_table(job, device)) return *e;
  auto fallback = options_.default_seconds.find(device);
  if (fallback != options_.default_seconds.end()) {
    RateEstimate e;
    e.total_seconds = e.remaining_seconds = fallback->second;
    e.source = EstimateSource::kDefault;
    e.confidence = Confidence::kLow;
    e.detail = "configured default for " + device;
    return e;
  }
  return Error{"no estimate for job " + job.id + " on " + device +
               ": no profile, declared time, family data, throughput entry or default"};
}

void Profiler::refine_with_progress(const Job& job, const DeviceType& device,
                                    RateEstimate& estimate) const {
  auto done = done_.find(job.id);
  if (done == done_.end()) return;
  auto here = progress_.find({job.id, device});
  std::optional<double> total_iterations;
  if (job.iterations) total_iterations = static_cast<double>(*job.iterations);
  if (here != progress_.end()) {
    const Progress& p = here->second;
    estimate.samples += p.reports;
    if (total_iterations && p.seconds_per_iteration > 0) {
      double left = std::max(*total_iterations - done->second, 0.0);
      estimate.remaining_seconds = p.seconds_per_iteration * left;
      estimate.total_seconds = p.elapsed + estimate.remaining_seconds;
      estimate.source = EstimateSource::kProgress;
      estimate.confidence = Confidence::kHigh;
      estimate.detail = format("%.3g s/iteration measured, %g iterations done",
                               p.seconds_per_iteration, done->second);
      return;
    }
    if (!total_iterations) {
      estimate.remaining_seconds = std::max(estimate.total_seconds - p.elapsed, 0.0);
      return;
    }
  }
  // Progress made on another device type carries over (a resumed job continues from where it
  // stopped), at this device's own speed; a profile fit charges the start-up cost again.
  if (!total_iterations || *total_iterations <= 0) return;
  double left = std::max(*total_iterations - done->second, 0.0);
  auto profile = profiles_.find({job.id, device});
  if (profile != profiles_.end()) {
    estimate.remaining_seconds = profile->second.fit.time_for(left);
  } else {
    estimate.remaining_seconds = estimate.total_seconds * left / *total_iterations;
  }
  estimate.detail +=
      format(" (%g of %g iterations done elsewhere)", done->second, *total_iterations);
}

Expected<RateEstimate> Profiler::estimate(const Job& job, const DeviceType& device) const {
  Expected<RateEstimate> e = base_estimate(job, device);
  if (!e.ok()) {
    // Progress alone (a job that started without a profile or hint) is still a measurement.
    auto measured = progress_.find({job.id, device});
    if (measured == progress_.end() || !job.iterations ||
        measured->second.seconds_per_iteration <= 0) {
      return e;
    }
    e = RateEstimate{};
  }
  refine_with_progress(job, device, *e);
  return e;
}

std::map<DeviceType, RateEstimate> Profiler::estimates(
    const Job& job, const std::vector<DeviceType>& devices) const {
  std::map<DeviceType, RateEstimate> out;
  for (const DeviceType& d : devices) {
    if (auto e = estimate(job, d); e.ok()) out.emplace(d, *e);
  }
  return out;
}

Job Profiler::with_estimates(const Job& job, const std::vector<DeviceType>& devices) const {
  Job out = job;
  for (const auto& [device, e] : estimates(job, devices)) out.time[device] = e.remaining_seconds;
  return out;
}

}  // namespace allox
