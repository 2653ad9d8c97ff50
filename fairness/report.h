// Per-user fairness report (docs/design.md, "Fairness"): the one definition of share, windowed
// share, weights and Jain's index, used by alloxd's GET /v1/fairness (alloxd/web/reports.h),
// `allox report` (a simulation's jobs.csv or alloxd's store) and the simulator, rendered as JSON
// or a table.
//
// Input: one JobRun per job (user, arrival, start, finish, device, machine), the machines per
// device type, user weights, the report time `now` and the window. At `now` a job is queued
// (arrived, not started), running (started, not finished) or done; jobs arriving later are
// ignored. Per user:
//   - current share: AlloX's L (fairness/share.h), the sum over its running jobs of the share a
//     job holds, 1 / machines of its fastest device type scaled by p_fast / p_actual, divided by
//     its weight. A job without per-device times (JobRun::times) counts its own device type
//     only: 1 / machines of that type;
//   - windowed share: the same over [now - window, now] in machine-seconds (usage_window.h);
//   - queued / running / done counts, mean JCT (finish - arrival) of done jobs;
//   - worst finish-time-fairness rho = JCT / isolated time over its done jobs, where the
//     isolated time is the job's time alone on the user's slice of the cluster (weight share
//     s_u = w_u / sum w of every device type): run time / min(1, s_u x n_d) on the job's device
//     type d, run time being JobRun::run_time (the true time) or, when absent, finish - start.
//     sim/metrics.h takes the minimum over all device types; a record only knows its own.
// Cluster-wide: Jain's index of the users' windowed shares (users active in the window).
//
// O(J log J) for J jobs. Pure.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"

namespace allox {

struct JobRun {
  std::string job;
  std::string user;
  double arrival = 0;
  std::optional<double> start;  // first start
  std::optional<double> finish;
  DeviceType device;  // where it ran (last), empty if it never started
  std::string machine;
  std::optional<double> run_time;      // true processing time on `device`, when known
  std::map<DeviceType, double> times;  // estimated seconds per runnable device type, if known
  int units = 1;                       // devices it held (jobs.csv's optional units column)
};

struct ReportInput {
  std::vector<JobRun> jobs;
  std::map<DeviceType, std::size_t> machines;  // per device type
  std::vector<User> users;                     // weights; other users weigh 1
  std::optional<double> now;                   // default: the last arrival, start or finish
  double window = 3600;                        // seconds, > 0
};

struct UserReport {
  std::string user;
  double weight = 1;
  double current_share = 0;
  double windowed_share = 0;
  std::size_t queued = 0, running = 0, done = 0;
  std::optional<double> mean_jct;   // over done jobs
  std::optional<double> worst_rho;  // over done jobs
  std::string worst_rho_job;
};

struct FairnessReport {
  double now = 0;
  double window = 0;
  std::vector<UserReport> users;  // by name
  double jain_windowed_share = 1;
  std::size_t queued = 0, running = 0, done = 0;
  std::optional<double> mean_jct;
};

// Errors: window <= 0, a job whose finish precedes its start or whose start precedes its
// arrival, a started job whose device type has no machines (each naming the job).
Expected<FairnessReport> make_report(const ReportInput& input);

nlohmann::json report_to_json(const FairnessReport& report);
std::string report_json(const FairnessReport& report);  // pretty-printed, 2-space indent
void write_report_table(const FairnessReport& report, std::ostream& out);

// machines per device type as seen in the runs (distinct machine names): the fallback when no
// cluster description is at hand.
std::map<DeviceType, std::size_t> machines_seen(const std::vector<JobRun>& jobs);

}  // namespace allox
