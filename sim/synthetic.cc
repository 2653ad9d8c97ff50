#include "sim/synthetic.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/csv.h"

namespace allox {
namespace {

// Uniform in [0, 1) from the top 53 bits of one draw.
double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// Gavel's scale-factor draw (scheduler/utils.py, generate_job): 1 below 0.7, 2 below 0.8, 4 below
// 0.95, else 8.
int scale_factor(double r) {
  if (r < 0.7) return 1;
  if (r < 0.8) return 2;
  if (r < 0.95) return 4;
  return 8;
}

// The table's k-worker steps/s of `model` on the plain device types; empty if it has none.
std::map<DeviceType, double> rates_at(const ThroughputTable& table, const std::string& model,
                                      int k) {
  std::map<DeviceType, double> rates;
  for (const DeviceType& device : table.devices()) {
    if (device.find('_') != std::string::npos) continue;
    if (auto rate = table.steps_per_second({model, k}, device)) rates[device] = *rate;
  }
  return rates;
}

}  // namespace

Expected<std::vector<JobType>> synthetic_job_types(const ThroughputTable& table) {
  std::vector<JobType> types;
  for (const ThroughputKey& key : table.keys()) {
    if (key.scale_factor != 1) continue;
    JobType type;
    type.model = key.config;
    for (const DeviceType& device : table.devices()) {
      if (device.find('_') != std::string::npos) continue;  // "v100_unconsolidated" and the like
      if (auto rate = table.steps_per_second(key, device)) type.steps_per_second[device] = *rate;
    }
    if (!type.steps_per_second.empty()) types.push_back(std::move(type));
  }
  if (types.empty()) return Error{"synthetic: the throughput table has no single-worker job types"};
  return types;
}

Expected<Trace> generate_synthetic_trace(const ThroughputTable& table, const SyntheticOptions& o,
                                         const SyntheticOptionNames& names) {
  Expected<std::vector<JobType>> job_types = synthetic_job_types(table);
  if (!job_types.ok()) return job_types.error();
  const std::vector<JobType>& types = *job_types;
  if (o.jobs == 0 || o.jobs > kMaxSyntheticJobs) {
    return Error{"synthetic: " + names.jobs + " must be 1.." + std::to_string(kMaxSyntheticJobs)};
  }
  if (o.users == 0 || o.users > kMaxSyntheticUsers) {
    return Error{"synthetic: " + names.users + " must be 1.." +
                 std::to_string(kMaxSyntheticUsers)};
  }
  if (!(o.arrival_rate > 0)) return Error{"synthetic: " + names.arrival_rate + " must be > 0"};
  if (!(o.median_duration > 0)) {
    return Error{"synthetic: " + names.median_duration + " must be > 0"};
  }
  if (!(o.pareto_shape > 0)) return Error{"synthetic: pareto_shape must be > 0"};
  if (!(o.max_duration_factor >= 1)) return Error{"synthetic: max_duration_factor must be >= 1"};
  if (!(o.estimate_error >= 0 && o.estimate_error < 1)) {
    return Error{"synthetic: estimate_error must be in [0, 1)"};
  }
  // Indices into `types` of the models the table has at each scale factor.
  std::map<int, std::vector<std::size_t>> models_at;
  for (std::size_t t = 0; t < types.size(); ++t) models_at[1].push_back(t);
  if (o.multi_device) {
    for (int k : {2, 4, 8}) {
      for (std::size_t t = 0; t < types.size(); ++t) {
        if (!rates_at(table, types[t].model, k).empty()) models_at[k].push_back(t);
      }
      if (models_at[k].empty()) {
        return Error{"synthetic: the throughput table has no " + std::to_string(k) +
                     "-worker configuration for multi_device"};
      }
    }
  }
  std::mt19937_64 rng(o.seed);
  // Pareto with median m: scale x_m = m / 2^(1/shape).
  const double scale = o.median_duration / std::pow(2.0, 1.0 / o.pareto_shape);
  const double cap = o.median_duration * o.max_duration_factor;

  Trace trace;
  for (std::size_t u = 0; u < o.users; ++u) trace.users.push_back({"user" + std::to_string(u), 1});
  double now = 0;
  for (std::size_t i = 0; i < o.jobs; ++i) {
    if (i > 0) now += -std::log1p(-uniform01(rng)) / o.arrival_rate;
    const std::string id = "job" + std::to_string(i);
    if (!(now <= kMaxInputSeconds)) {
      return Error{"synthetic: " + id + " would arrive at " + csv_number(now) + " s, past the " +
                   csv_number(kMaxInputSeconds) + " s a trace may state: " + names.arrival_rate +
                   " " + csv_number(o.arrival_rate) + " is too low for " +
                   std::to_string(o.jobs) + " jobs"};
    }
    const std::size_t user = std::min<std::size_t>(uniform01(rng) * o.users, o.users - 1);
    // Multi-device: the scale factor first, then a model among those the table has at it.
    const int units = o.multi_device ? scale_factor(uniform01(rng)) : 1;
    const std::vector<std::size_t>& pool = models_at.at(units);
    const JobType& type =
        types[pool[std::min<std::size_t>(uniform01(rng) * pool.size(), pool.size() - 1)]];
    const double duration =
        std::min(cap, scale * std::pow(1 - uniform01(rng), -1 / o.pareto_shape));
    // With its estimate error (below), at most twice the duration.
    if (!(duration * (1 + o.estimate_error) <= kMaxInputSeconds)) {
      return Error{"synthetic: " + id + " would take " + csv_number(duration) +
                   " s on its fastest device, past the " + csv_number(kMaxInputSeconds) +
                   " s a trace may state (estimates up to " + csv_number(1 + o.estimate_error) +
                   "x that): " + names.median_duration + " " + csv_number(o.median_duration) +
                   " is too high"};
    }
    const std::map<DeviceType, double> wide =
        units > 1 ? rates_at(table, type.model, units) : std::map<DeviceType, double>{};
    const std::map<DeviceType, double>* speeds = units > 1 ? &wide : &type.steps_per_second;
    double fastest = 0;
    for (const auto& [device, rate] : *speeds) fastest = std::max(fastest, rate);
    const double steps = duration * fastest;
    if (!(std::ceil(steps) <= kMaxSyntheticIterations)) {
      return Error{"synthetic: " + id + " (" + type.model + ") would count " + csv_number(steps) +
                   " iterations at " + csv_number(fastest) + " steps/s, over " +
                   csv_number(kMaxSyntheticIterations) + ": " + names.table +
                   " states too high a throughput"};
    }
    for (const auto& [device, rate] : *speeds) {
      const double t = steps / rate;
      if (!(t * (1 + o.estimate_error) <= kMaxInputSeconds)) {
        return Error{"synthetic: " + id + " (" + type.model + ") would take " + csv_number(t) +
                     " s on " + device + " at " + csv_number(rate) + " steps/s, past the " +
                     csv_number(kMaxInputSeconds) + " s a trace may state: " + names.table +
                     " states too low a throughput beside " + csv_number(fastest) +
                     " steps/s on another device"};
      }
    }

    TraceJob tj;
    tj.job.id = id;
    tj.job.user = trace.users[user].name;
    tj.job.arrival = now;
    tj.job.family = type.model;
    tj.job.iterations = static_cast<std::int64_t>(std::ceil(steps));
    tj.job.units = units;
    for (const auto& [device, rate] : *speeds) {
      const double t = steps / rate;
      tj.true_time[device] = t;
      tj.job.time[device] = t * (1 + o.estimate_error * (2 * uniform01(rng) - 1));
    }
    trace.jobs.push_back(std::move(tj));
  }
  if (Status s = validate_trace(trace); !s.ok()) return s.error();
  return trace;
}

}  // namespace allox
