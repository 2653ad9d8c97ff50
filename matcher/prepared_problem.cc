#include "matcher/prepared_problem.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

namespace allox::matcher {
namespace {

std::string format_seconds(double seconds) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%g", seconds);
  return buffer;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "none" : out;
}

Status check_time(const std::string& what, double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) {
    return Error{what + " is " + format_seconds(seconds) + " s; it must be a finite number >= 0"};
  }
  if (seconds > kMaxSeconds) {
    return Error{what + " is " + format_seconds(seconds) + " s, above the matcher's limit of " +
                 format_seconds(kMaxSeconds) + " s (integer costs would overflow)"};
  }
  return OkStatus();
}

}  // namespace

std::int64_t to_ticks(double seconds) {
  return std::llround(seconds * static_cast<double>(kTicksPerSecond));
}

Expected<PreparedProblem> prepare(const MatchingProblem& problem, bool group_machines) {
  PreparedProblem out;
  out.job_count = problem.jobs.size();
  if (!std::isfinite(problem.now)) return Error{"now must be a finite time in seconds"};
  if (!problem.idle.empty() && problem.idle.size() != problem.machines.size()) {
    return Error{"idle flags: " + std::to_string(problem.idle.size()) + " given for " +
                 std::to_string(problem.machines.size()) + " machines"};
  }
  if (problem.machines.empty() && !problem.jobs.empty()) {
    return Error{"no machines: " + std::to_string(problem.jobs.size()) +
                 " queued jobs cannot be placed (first: '" + *problem.jobs[0].id + "')"};
  }

  for (const Machine& machine : problem.machines) out.types.push_back(machine.device);
  std::sort(out.types.begin(), out.types.end());
  out.types.erase(std::unique(out.types.begin(), out.types.end()), out.types.end());
  const std::size_t type_count = out.types.size();
  auto type_index = [&](const DeviceType& device) -> std::ptrdiff_t {
    auto it = std::lower_bound(out.types.begin(), out.types.end(), device);
    if (it == out.types.end() || *it != device) return -1;
    return it - out.types.begin();
  };

  // Groups keyed by (type, residual, idle); the map keeps them in a deterministic order.
  std::map<std::tuple<std::size_t, std::int64_t, bool, std::size_t>, MachineGroup> groups;
  out.machines_of_type.assign(type_count, 0);
  for (std::size_t m = 0; m < problem.machines.size(); ++m) {
    const Machine& machine = problem.machines[m];
    if (!std::isfinite(machine.busy_until)) {
      return Error{"machine '" + machine.name + "': busy_until must be a finite time"};
    }
    const double residual = std::max(0.0, machine.busy_until - problem.now);
    if (Status s = check_time("machine '" + machine.name + "': residual busy time", residual);
        !s.ok()) {
      return s.error();
    }
    const std::size_t type = static_cast<std::size_t>(type_index(machine.device));
    const std::int64_t residual_ticks = to_ticks(residual);
    const bool idle = is_idle(problem, m);
    MachineGroup& group = groups[{type, residual_ticks, idle, group_machines ? 0 : m}];
    group.type = type;
    group.residual_ticks = residual_ticks;
    group.idle = idle;
    group.machines.push_back(m);
    ++out.machines_of_type[type];
  }
  for (auto& entry : groups) out.groups.push_back(std::move(entry.second));

  out.time_ticks.assign(out.job_count * type_count, kCannotRun);
  out.runnable_jobs_of_type.assign(type_count, 0);
  out.exclusive_jobs_of_type.assign(type_count, 0);
  for (std::size_t j = 0; j < out.job_count; ++j) {
    const PendingJob& job = problem.jobs[j];
    std::size_t runnable = 0;
    std::ptrdiff_t only_type = -1;
    // job.time and out.types are both sorted by name: one merge walk finds each device's type.
    auto next_type = out.types.begin();
    for (const auto& [device, seconds] : *job.time) {
      // The message is built only for a bad time: this loop runs for every job of every solve.
      if (!std::isfinite(seconds) || seconds < 0 || seconds > kMaxSeconds) {
        return check_time("job '" + *job.id + "': time on " + device, seconds).error();
      }
      int order = 1;
      while (next_type != out.types.end() && (order = next_type->compare(device)) < 0) {
        ++next_type;
      }
      if (next_type == out.types.end() || order != 0) continue;
      const std::ptrdiff_t type = next_type - out.types.begin();
      out.time_ticks[j * type_count + static_cast<std::size_t>(type)] = to_ticks(seconds);
      ++out.runnable_jobs_of_type[static_cast<std::size_t>(type)];
      ++runnable;
      only_type = type;
    }
    if (runnable == 0) {
      std::vector<std::string> wanted;
      for (const auto& entry : *job.time) wanted.push_back(entry.first);
      return Error{"job '" + *job.id + "' cannot run on any machine: it has times for " +
                   join(wanted) + " but the cluster has " + join(out.types)};
    }
    if (runnable == 1) ++out.exclusive_jobs_of_type[static_cast<std::size_t>(only_type)];
  }
  return out;
}

}  // namespace allox::matcher
