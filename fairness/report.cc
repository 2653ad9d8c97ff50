#include "fairness/report.h"

#include <algorithm>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "fairness/share.h"
#include "fairness/usage_window.h"

namespace allox {
namespace {

double default_now(const std::vector<JobRun>& jobs) {
  double now = 0;
  for (const JobRun& j : jobs) {
    now = std::max({now, j.arrival, j.start.value_or(0), j.finish.value_or(0)});
  }
  return now;
}

Status check(const ReportInput& input) {
  if (!(input.window > 0)) return Error{"window must be > 0 seconds"};
  for (const JobRun& j : input.jobs) {
    if (j.start && *j.start < j.arrival) {
      return Error{"job " + j.job + ": starts before it arrives"};
    }
    if (j.finish && (!j.start || *j.finish < *j.start)) {
      return Error{"job " + j.job + ": finishes before it starts"};
    }
    if (j.start && !input.machines.contains(j.device)) {
      return Error{"job " + j.job + ": ran on device type '" + j.device +
                   "', which has no machines in the cluster"};
    }
  }
  return OkStatus();
}

}  // namespace

std::map<DeviceType, std::size_t> machines_seen(const std::vector<JobRun>& jobs) {
  std::map<DeviceType, std::set<std::string>> names;
  for (const JobRun& j : jobs) {
    if (j.start) names[j.device].insert(j.machine);
  }
  std::map<DeviceType, std::size_t> counts;
  for (const auto& [device, machines] : names) counts[device] = machines.size();
  return counts;
}

Expected<FairnessReport> make_report(const ReportInput& input) {
  if (Status ok = check(input); !ok) return ok.error();
  FairnessReport report;
  report.now = input.now.value_or(default_now(input.jobs));
  report.window = input.window;
  const double now = report.now;

  std::map<std::string, double> weights;
  for (const User& u : input.users) weights[u.name] = u.weight;
  std::map<std::string, UserReport> users;
  for (const User& u : input.users) users[u.name].user = u.name;
  for (const JobRun& j : input.jobs) users[j.user].user = j.user;
  double total_weight = 0;
  for (auto& [name, u] : users) {
    u.weight = weights.contains(name) ? weights.at(name) : 1.0;
    total_weight += u.weight;
  }

  UsageWindow usage(input.window, input.machines, weights);
  std::map<std::string, double> held;  // unweighted L
  std::map<std::string, double> jct_sum;
  double all_jct = 0;
  for (const JobRun& j : input.jobs) {
    if (j.arrival > now) continue;
    UserReport& u = users[j.user];
    if (j.start && *j.start <= now) {
      std::optional<double> end;
      if (j.finish && *j.finish <= now) end = j.finish;
      usage.add_run(j.job, j.user, j.device, *j.start, end, j.units);
    }
    if (j.finish && *j.finish <= now) {
      ++u.done;
      double jct = *j.finish - j.arrival;
      jct_sum[j.user] += jct;
      all_jct += jct;
      double isolated =
          isolated_seconds(j.run_time.value_or(*j.finish - *j.start), u.weight / total_weight,
                           static_cast<double>(input.machines.at(j.device)), j.units);
      if (isolated > 0) {
        double rho = jct / isolated;
        if (!u.worst_rho || rho > *u.worst_rho) {
          u.worst_rho = rho;
          u.worst_rho_job = j.job;
        }
      }
    } else if (j.start && *j.start <= now) {
      ++u.running;
      Job job{j.job, j.user, j.arrival, j.times, std::nullopt, {}, j.units};
      if (!job.time.contains(j.device)) job.time = {{j.device, 1.0}};
      held[j.user] += running_job_share(job, j.device, input.machines);
    } else {
      ++u.queued;
    }
  }

  std::map<std::string, double> windowed = usage.windowed_shares(now);
  std::vector<double> active_shares;
  for (auto& [name, u] : users) {
    u.current_share = held[name] / u.weight;
    if (windowed.contains(name)) {
      u.windowed_share = windowed.at(name);
      active_shares.push_back(u.windowed_share);
    }
    if (u.done > 0) u.mean_jct = jct_sum[name] / static_cast<double>(u.done);
    report.queued += u.queued;
    report.running += u.running;
    report.done += u.done;
    report.users.push_back(u);
  }
  report.jain_windowed_share = jain_index(active_shares);
  if (report.done > 0) report.mean_jct = all_jct / static_cast<double>(report.done);
  return report;
}

nlohmann::json report_to_json(const FairnessReport& report) {
  auto optional = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  nlohmann::json users = nlohmann::json::array();
  for (const UserReport& u : report.users) {
    users.push_back({{"user", u.user},
                     {"weight", u.weight},
                     {"current_share", u.current_share},
                     {"windowed_share", u.windowed_share},
                     {"queued", u.queued},
                     {"running", u.running},
                     {"done", u.done},
                     {"mean_jct", optional(u.mean_jct)},
                     {"worst_rho", optional(u.worst_rho)},
                     {"worst_rho_job",
                      u.worst_rho ? nlohmann::json(u.worst_rho_job) : nlohmann::json(nullptr)}});
  }
  nlohmann::json doc = {{"now", report.now},
                        {"window", report.window},
                        {"queued", report.queued},
                        {"running", report.running},
                        {"done", report.done},
                        {"mean_jct", optional(report.mean_jct)},
                        {"jain_windowed_share", report.jain_windowed_share},
                        {"users", users}};
  return doc;
}

std::string report_json(const FairnessReport& report) {
  return report_to_json(report).dump(2);
}

void write_report_table(const FairnessReport& report, std::ostream& out) {
  auto fixed = [](std::optional<double> v, int digits) {
    if (!v) return std::string("-");
    std::ostringstream s;
    s << std::fixed << std::setprecision(digits) << *v;
    return s.str();
  };
  std::size_t name_width = 4;
  for (const UserReport& u : report.users) name_width = std::max(name_width, u.user.size());
  out << "at t = " << fixed(report.now, 1) << " s, window " << fixed(report.window, 0) << " s\n";
  out << std::left << std::setw(static_cast<int>(name_width)) << "user" << std::right
      << std::setw(8) << "weight" << std::setw(9) << "share" << std::setw(10) << "windowed"
      << std::setw(8) << "queued" << std::setw(9) << "running" << std::setw(8) << "done"
      << std::setw(12) << "mean JCT" << std::setw(11) << "worst rho"
      << "\n";
  for (const UserReport& u : report.users) {
    out << std::left << std::setw(static_cast<int>(name_width)) << u.user << std::right
        << std::setw(8) << fixed(u.weight, 2) << std::setw(9) << fixed(u.current_share, 3)
        << std::setw(10) << fixed(u.windowed_share, 3) << std::setw(8) << u.queued << std::setw(9)
        << u.running << std::setw(8) << u.done << std::setw(12) << fixed(u.mean_jct, 1)
        << std::setw(11) << fixed(u.worst_rho, 2) << "\n";
  }
  out << "jobs: " << report.queued << " queued, " << report.running << " running, " << report.done
      << " done; mean JCT " << fixed(report.mean_jct, 1) << " s; Jain's index of windowed shares "
      << fixed(report.jain_windowed_share, 3) << "\n";
}

}  // namespace allox
