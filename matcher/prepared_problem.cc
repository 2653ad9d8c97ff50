#include "matcher/prepared_problem.h"

#include <algorithm>
#include <cmath>
#include <compare>
#include <cstdio>
#include <numeric>
#include <string_view>
#include <unordered_map>

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

// a.compare(b) without a library call per name: device names are a few bytes, and prepare()
// compares one per job and device type on every solve. Bytes compare as unsigned char, as
// std::string::compare does.
int compare_names(std::string_view a, std::string_view b) {
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) {
      return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[i]) ? -1 : 1;
    }
  }
  return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
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

  // Device types without sorting every machine's name (alloxd plans 50,000 machines of 2 types
  // many times a round): consecutive machines mostly share a type, and the few distinct names
  // are hashed, then sorted once.
  std::vector<std::size_t> machine_type(problem.machines.size());
  {
    std::unordered_map<std::string_view, std::size_t> seen;
    std::vector<std::string_view> names;
    for (std::size_t m = 0; m < problem.machines.size(); ++m) {
      const std::string& device = problem.machines[m].device;
      if (m > 0 && device == problem.machines[m - 1].device) {
        machine_type[m] = machine_type[m - 1];
        continue;
      }
      auto [it, added] = seen.try_emplace(device, names.size());
      if (added) names.push_back(device);
      machine_type[m] = it->second;
    }
    std::vector<std::size_t> order(names.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return names[a] < names[b]; });
    std::vector<std::size_t> rank(names.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
      rank[order[i]] = i;
      out.types.emplace_back(names[order[i]]);
    }
    for (std::size_t& type : machine_type) type = rank[type];
  }
  const std::size_t type_count = out.types.size();

  // Groups are machines with equal (type, residual, idle), in that order, machines ascending
  // inside (without grouping, each machine alone): one sort of plain keys, no string work.
  struct Key {
    std::size_t type;
    std::int64_t residual_ticks;
    bool idle;
    std::size_t machine;
    auto operator<=>(const Key&) const = default;
  };
  std::vector<Key> keys;
  keys.reserve(problem.machines.size());
  out.machines_of_type.assign(type_count, 0);
  for (std::size_t m = 0; m < problem.machines.size(); ++m) {
    const Machine& machine = problem.machines[m];
    if (!std::isfinite(machine.busy_until)) {
      return Error{"machine '" + machine.name + "': busy_until must be a finite time"};
    }
    const double residual = std::max(0.0, machine.busy_until - problem.now);
    // The message is built only for a bad time: this loop runs for every machine of every solve.
    if (!(residual <= kMaxSeconds)) {
      return check_time("machine '" + machine.name + "': residual busy time", residual).error();
    }
    keys.push_back({machine_type[m], to_ticks(residual), is_idle(problem, m), m});
    ++out.machines_of_type[machine_type[m]];
  }
  std::sort(keys.begin(), keys.end());
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const Key& key = keys[k];
    if (!group_machines || k == 0 || key.type != keys[k - 1].type ||
        key.residual_ticks != keys[k - 1].residual_ticks || key.idle != keys[k - 1].idle) {
      out.groups.push_back({key.type, key.residual_ticks, key.idle, {}});
    }
    out.groups.back().machines.push_back(key.machine);
  }

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
      while (next_type != out.types.end() && (order = compare_names(*next_type, device)) < 0) {
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
