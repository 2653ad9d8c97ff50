#include "sim/synthetic.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace allox {
namespace {

// Uniform in [0, 1) from the top 53 bits of one draw.
double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
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

Expected<Trace> generate_synthetic_trace(const ThroughputTable& table, const SyntheticOptions& o) {
  Expected<std::vector<JobType>> job_types = synthetic_job_types(table);
  if (!job_types.ok()) return job_types.error();
  const std::vector<JobType>& types = *job_types;
  if (o.users == 0) return Error{"synthetic: users must be >= 1"};
  if (!(o.arrival_rate > 0)) return Error{"synthetic: arrival_rate must be > 0"};
  if (!(o.median_duration > 0)) return Error{"synthetic: median_duration must be > 0"};
  if (!(o.pareto_shape > 0)) return Error{"synthetic: pareto_shape must be > 0"};
  if (!(o.max_duration_factor >= 1)) return Error{"synthetic: max_duration_factor must be >= 1"};
  if (!(o.estimate_error >= 0 && o.estimate_error < 1)) {
    return Error{"synthetic: estimate_error must be in [0, 1)"};
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
    const std::size_t user = std::min<std::size_t>(uniform01(rng) * o.users, o.users - 1);
    const JobType& type =
        types[std::min<std::size_t>(uniform01(rng) * types.size(), types.size() - 1)];
    const double duration =
        std::min(cap, scale * std::pow(1 - uniform01(rng), -1 / o.pareto_shape));
    double fastest = 0;
    for (const auto& [device, rate] : type.steps_per_second) fastest = std::max(fastest, rate);
    const double steps = duration * fastest;

    TraceJob tj;
    tj.job.id = "job" + std::to_string(i);
    tj.job.user = trace.users[user].name;
    tj.job.arrival = now;
    tj.job.family = type.model;
    tj.job.iterations = static_cast<std::int64_t>(std::ceil(steps));
    for (const auto& [device, rate] : type.steps_per_second) {
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
