// Builders for small traces and clusters in simulator tests.
#pragma once

#include <map>
#include <string>

#include "core/model.h"
#include "sim/trace.h"

namespace allox::testing {

inline TraceJob trace_job(std::string id, std::string user, double arrival,
                          std::map<DeviceType, double> true_time,
                          std::map<DeviceType, double> estimate = {}) {
  TraceJob tj;
  tj.job.id = std::move(id);
  tj.job.user = std::move(user);
  tj.job.arrival = arrival;
  tj.true_time = true_time;
  tj.job.time = estimate.empty() ? true_time : estimate;
  return tj;
}

inline Trace make_trace(std::vector<TraceJob> jobs) {
  Trace t;
  t.jobs = std::move(jobs);
  add_missing_users(t);
  sort_by_arrival(t);
  return t;
}

inline Cluster make_cluster(int cpus, int gpus) {
  Cluster c;
  for (int i = 0; i < gpus; ++i) c.machines.push_back({"gpu-" + std::to_string(i), "gpu", 0});
  for (int i = 0; i < cpus; ++i) c.machines.push_back({"cpu-" + std::to_string(i), "cpu", 0});
  return c;
}

}  // namespace allox::testing
