// A MatchingProblem checked and converted to integer ticks, with machines grouped (internal).
//
// Validation happens here, once: every error solve() reports about its input comes from
// prepare(). Machines of one device type with the same residual time and idle flag form a group
// whose machines are interchangeable; with group_machines = false every machine is its own group
// (the naive graph). O(M log M + J·D) for D device entries per job.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "matcher/matcher.h"

namespace allox::matcher {

inline constexpr std::int64_t kCannotRun = -1;

struct MachineGroup {
  std::size_t type = 0;             // index into PreparedProblem::types
  std::int64_t residual_ticks = 0;  // until the group's machines are free
  bool idle = true;
  std::vector<std::size_t> machines;  // indices into MatchingProblem::machines, ascending
};

struct PreparedProblem {
  std::size_t job_count = 0;
  std::vector<DeviceType> types;         // device types of the cluster, sorted
  std::vector<std::int64_t> time_ticks;  // job-major: time_ticks[j * types.size() + t]
  std::vector<MachineGroup> groups;      // ordered by type, residual, idle flag
  std::vector<std::size_t> machines_of_type;
  std::vector<std::size_t> runnable_jobs_of_type;   // jobs that can run on the type
  std::vector<std::size_t> exclusive_jobs_of_type;  // jobs that can run on that type only

  std::int64_t time(std::size_t job, std::size_t type) const {
    return time_ticks[job * types.size() + type];
  }
};

// Rounds seconds to ticks. Precondition: 0 <= seconds <= kMaxSeconds.
std::int64_t to_ticks(double seconds);
// Largest accepted time; beyond it ticks lose integer precision in a double.
inline constexpr double kMaxSeconds = 9.0e12;

Expected<PreparedProblem> prepare(const MatchingProblem& problem, bool group_machines);

}  // namespace allox::matcher
