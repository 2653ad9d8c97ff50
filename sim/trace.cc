#include "sim/trace.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/csv.h"
#include "profiler/estimate_error.h"

namespace allox {
namespace {

bool positive_finite(double x) {
  return std::isfinite(x) && x > 0;
}

}  // namespace

Status validate_trace(const Trace& trace) {
  std::map<std::string, double> weights;
  for (const User& user : trace.users) {
    if (user.name.empty()) return Error{"trace: a user has an empty name"};
    if (!positive_finite(user.weight)) {
      return Error{"trace: user " + user.name + " has weight " + std::to_string(user.weight) +
                   " (must be > 0)"};
    }
    if (!weights.emplace(user.name, user.weight).second) {
      return Error{"trace: user " + user.name + " is listed twice"};
    }
  }
  std::set<std::string> ids;
  for (const TraceJob& tj : trace.jobs) {
    const Job& job = tj.job;
    const std::string where = "trace: job '" + job.id + "'";
    if (job.id.empty()) return Error{"trace: a job has an empty id"};
    if (!ids.insert(job.id).second) return Error{where + " appears twice"};
    if (!(job.arrival >= 0 && job.arrival <= kMaxInputSeconds)) {
      return Error{where + ": arrival must be a number of seconds in 0.." +
                   csv_number(kMaxInputSeconds) + ", got " + csv_number(job.arrival)};
    }
    if (!weights.count(job.user)) return Error{where + ": user " + job.user + " is not listed"};
    if (job.time.empty()) return Error{where + ": no device it can run on"};
    if (job.units < 1 || job.units > kMaxUnits) {
      return Error{where + ": units must be 1.." + std::to_string(kMaxUnits) + ", got " +
                   std::to_string(job.units)};
    }
    if (job.time.size() != tj.true_time.size()) {
      return Error{where + ": estimated and true times name different devices"};
    }
    for (const auto& [device, estimate] : job.time) {
      auto truth = tj.true_time.find(device);
      if (truth == tj.true_time.end()) {
        return Error{where + ": no true time on " + device};
      }
      if (!positive_finite(estimate)) {
        return Error{where + ": estimated time on " + device + " must be > 0"};
      }
      if (!positive_finite(truth->second) || truth->second > kMaxInputSeconds) {
        return Error{where + ": true time on " + device + " must be in (0, " +
                     csv_number(kMaxInputSeconds) + "] s, got " + csv_number(truth->second)};
      }
    }
  }
  return OkStatus();
}

Status check_trace_runnable(const Trace& trace, const Cluster& cluster) {
  const std::map<DeviceType, int> largest = largest_node_units(cluster.machines);
  const TraceJob* first = nullptr;
  std::size_t stuck = 0;
  for (const TraceJob& tj : trace.jobs) {
    const bool fits = std::any_of(tj.job.time.begin(), tj.job.time.end(), [&](const auto& entry) {
      auto it = largest.find(entry.first);
      return it != largest.end() && it->second >= tj.job.units;
    });
    if (fits) continue;
    if (!first) first = &tj;
    ++stuck;
  }
  if (!first) return OkStatus();
  std::string devices;
  for (const auto& [device, seconds] : first->job.time) {
    devices += (devices.empty() ? "" : ", ") + device;
  }
  std::string have;
  for (const auto& [device, units] : largest) {
    have += (have.empty() ? "" : ", ") + device +
            (first->job.units > 1 ? " " + std::to_string(units) : "");
  }
  if (have.empty()) have = "none";
  std::string why = "trace: job '" + first->job.id + "' can run on no machine of the cluster: ";
  why += first->job.units > 1
             ? "it needs " + std::to_string(first->job.units) + " units on one node of " +
                   devices + "; the cluster's largest nodes: " + have
             : "it runs only on " + devices + "; the cluster has " + have;
  if (stuck > 1) why += "; " + std::to_string(stuck - 1) + " more jobs cannot run either";
  return Error{why};
}

void sort_by_arrival(Trace& trace) {
  std::stable_sort(trace.jobs.begin(), trace.jobs.end(), [](const TraceJob& a, const TraceJob& b) {
    return a.job.arrival < b.job.arrival;
  });
}

void add_missing_users(Trace& trace) {
  std::set<std::string> known;
  for (const User& user : trace.users) known.insert(user.name);
  for (const TraceJob& tj : trace.jobs) {
    if (known.insert(tj.job.user).second) trace.users.push_back(User{tj.job.user, 1});
  }
}

void use_true_times_as_estimates(Trace& trace) {
  for (TraceJob& tj : trace.jobs) tj.job.time = tj.true_time;
}

Status redraw_estimates(Trace& trace, double sigma, std::uint64_t seed) {
  Expected<EstimateErrorModel> model = EstimateErrorModel::normal(sigma, seed);
  if (!model.ok()) return Error{"estimate error: " + model.message()};
  for (TraceJob& tj : trace.jobs) {
    for (const auto& [device, truth] : tj.true_time)
      tj.job.time[device] = truth * (1 + model->draw());
  }
  return OkStatus();
}

}  // namespace allox
