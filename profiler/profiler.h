// The profiler turns profiling runs and progress reports into per-device time estimates
// (docs/design.md, "Profiler"). It is what the simulator and the extender ask for p(j, d).
//
// Sources, tried in order for job j on device type d (each estimate records which one won):
//   1. a fit T(n) = a + b n of j's profiling samples on d (profiler/linear_fit.h), times the
//      job's iteration count;
//   2. j's declared time on d (Job::time);
//   3. its family (Job::family): if j has an estimate on another type d', d' time x the median
//      per-iteration ratio d/d' among profiled jobs of the family; else, with a known iteration
//      count, the median fitted time of the family's jobs on d;
//   4. the throughput table, keyed by the family ("ResNet-18 (batch size 16)"):
//      iterations / steps-per-second;
//   5. the configured default for d;
//   6. failing all of those, progress reports on d alone (with an iteration count).
// Progress reports on d then refine the estimate: the per-iteration time is an exponentially
// weighted average (newest observation weighted by `progress_weight`) of the observed rates, and
// remaining = per-iteration x iterations left; without an iteration count,
// remaining = total - elapsed. Iterations done on another device type carry over: remaining is
// the estimate for the iterations left (with the start-up cost again when d has a profile).
// The remaining time is what the matcher uses for a running or resumed job.
//
// Cost: add_* is O(S) in the job's samples on the device (the fit is recomputed); estimate() is
// O(F log F) in the family's size. Not thread-safe: one caller at a time.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "profiler/linear_fit.h"
#include "profiler/rate_estimate.h"
#include "profiler/throughput_table.h"

namespace allox {

// One profiling run of a job: `iterations` took `seconds` on `device` (start-up included).
struct ProfileRun {
  std::string job;
  DeviceType device;
  double iterations = 0;
  double seconds = 0;
};

// iterations_done counts the job's iterations over all its runs (a resumed job continues from
// its checkpoint), so it never decreases; elapsed_seconds counts from the start of the current
// run, start-up included. A report whose elapsed time is smaller than the previous one on the
// device, or that comes from another device type than the job's last report, starts a new run.
struct ProgressReport {
  std::string job;
  DeviceType device;
  double iterations_done = 0;
  double elapsed_seconds = 0;
};

struct ProfilerOptions {
  double progress_weight = 0.5;                  // in (0, 1]
  std::map<DeviceType, double> default_seconds;  // last resort per device type
  const ThroughputTable* throughputs = nullptr;  // optional; must outlive the Profiler
};

class Profiler {
 public:
  explicit Profiler(ProfilerOptions options = {});

  // Makes the job known (family and iteration count) so that its profiles inform predictions
  // for the rest of its family. Re-adding a job replaces what was known about it.
  void add_job(const Job& job);
  // Errors name the job and the bad value; a rejected sample leaves the profiler unchanged.
  Status add_profile(const ProfileRun& sample);
  Status add_progress(const ProgressReport& report);

  // Error when no source applies (no profile, declared time, family data, table entry or
  // default for the device).
  Expected<RateEstimate> estimate(const Job& job, const DeviceType& device) const;
  // Estimates on each listed device; devices without one are left out.
  std::map<DeviceType, RateEstimate> estimates(const Job& job,
                                               const std::vector<DeviceType>& devices) const;
  // The job with Job::time replaced by the remaining estimate on each listed device that has
  // one: the form the policies consume.
  Job with_estimates(const Job& job, const std::vector<DeviceType>& devices) const;

 private:
  using Key = std::pair<std::string, DeviceType>;  // (job id, device)
  struct Profile {
    std::vector<TimingSample> samples;
    LinearFit fit;
  };
  struct Progress {
    double done = 0;
    double elapsed = 0;
    double seconds_per_iteration = 0;
    std::size_t reports = 0;
  };

  Expected<RateEstimate> base_estimate(const Job& job, const DeviceType& device) const;
  std::optional<RateEstimate> from_profile(const Job& job, const DeviceType& device) const;
  std::optional<RateEstimate> from_family(const Job& job, const DeviceType& device) const;
  std::optional<RateEstimate> from_table(const Job& job, const DeviceType& device) const;
  void refine_with_progress(const Job& job, const DeviceType& device, RateEstimate& estimate) const;

  ProfilerOptions options_;
  std::map<std::string, Job> jobs_;  // id -> the job as added (family, iterations)
  std::map<Key, Profile> profiles_;
  std::map<Key, Progress> progress_;
  std::map<std::string, double> done_;             // job id -> iterations done, all runs
  std::map<std::string, DeviceType> last_device_;  // job id -> device of its last report
};

}  // namespace allox
