// A simulation trace: the jobs to replay, with the times a scheduler *believes* and the times
// execution *takes*.
//
// Decisions use estimates, completions use true times (docs/design.md, "Data": estimate = true ×
// (1 + error)). TraceJob::job is what a policy sees (job.time holds the estimates);
// TraceJob::true_time holds what the job really takes on each device, with the same device keys.
// Loaders (allox_trace.h, trace_file.h, synthetic.h) return traces that satisfy
// validate_trace(); the simulator checks it again on entry.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"

namespace allox {

struct TraceJob {
  Job job;                                 // job.time: estimated seconds per runnable device
  std::map<DeviceType, double> true_time;  // seconds execution takes; same keys as job.time
};

struct Trace {
  std::vector<User> users;  // every user owning a job, in first-appearance order
  std::vector<TraceJob> jobs;
};

// Checks: unique non-empty job ids, arrival in 0..kMaxInputSeconds, units in 1..kMaxUnits, at
// least one device per job, estimated times finite and > 0, true times in (0, kMaxInputSeconds]
// (estimates may exceed it: an estimation error on a long job), with identical device keys, every job's user listed once in users with a
// weight > 0. The error names the first offending job.
Status validate_trace(const Trace& trace);

// Every job can run on the cluster: some device type of its has a node of at least its units.
// The error names the first job that cannot, the device types it can use and the cluster's,
// and how many such jobs there are. The simulator leaves such a job queued for ever (a sweep
// that removes a device type may mean to); a command replaying a trace refuses it.
Status check_trace_runnable(const Trace& trace, const Cluster& cluster);

// Stable-sorts jobs by arrival (file order breaks ties), the order the simulator admits them.
void sort_by_arrival(Trace& trace);

// Adds a User (weight 1) for every job owner missing from trace.users, in job order.
void add_missing_users(Trace& trace);

// Replaces every estimate by the true time (the "perfect information" setting).
void use_true_times_as_estimates(Trace& trace);

// Replaces every estimate by true × (1 + e), e ~ N(0, sigma) clipped to ±0.99
// (profiler/estimate_error.h), drawn per job and device in trace order from `seed`: the
// estimation-error study. Error if sigma < 0.
Status redraw_estimates(Trace& trace, double sigma, std::uint64_t seed);

}  // namespace allox
