#include "sim/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "fairness/share.h"
#include "fairness/usage_window.h"

namespace allox {

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = (values.size() - 1) * std::clamp(p, 0.0, 100.0) / 100.0;
  const std::size_t lo = static_cast<std::size_t>(std::floor(rank));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (rank - lo);
}

SimSummary summarize(const SimResult& result, const Trace& trace, const Cluster& cluster,
                     std::optional<double> alpha) {
  SimSummary s;
  s.policy = result.policy;
  s.alpha = alpha;
  s.jobs = result.jobs.size();
  s.sim_wall_s = result.wall_seconds;
  s.plan = result.plan_quality;

  std::map<DeviceType, double> machines;
  for (const Machine& m : cluster.machines) machines[m.device] += 1;
  double total_weight = 0;
  for (const User& u : trace.users) total_weight += u.weight;

  std::map<std::string, std::size_t> user_pos;
  for (const User& u : trace.users) {
    user_pos[u.name] = s.per_user.size();
    UserSummary us;
    us.user = u.name;
    s.per_user.push_back(us);
  }
  std::vector<double> jct_sum(s.per_user.size(), 0), isolated_sum(s.per_user.size(), 0);

  std::vector<double> jcts;
  double first_arrival = std::numeric_limits<double>::infinity(), last_finish = 0;
  for (std::size_t i = 0; i < result.jobs.size(); ++i) {
    const SimJobRecord& r = result.jobs[i];
    const TraceJob& tj = trace.jobs[i];
    const std::size_t u = user_pos.at(r.user);
    UserSummary& us = s.per_user[u];
    ++us.jobs;
    first_arrival = std::min(first_arrival, r.arrival);
    if (!r.finish) continue;
    const double jct = *r.finish - r.arrival;
    jcts.push_back(jct);
    ++us.completed;
    us.last_finish = std::max(us.last_finish, *r.finish);
    last_finish = std::max(last_finish, *r.finish);
    jct_sum[u] += jct;

    const double slice = trace.users[u].weight / total_weight;
    double isolated = std::numeric_limits<double>::infinity();
    for (const auto& [device, time] : tj.true_time) {
      auto n = machines.find(device);
      if (n == machines.end()) continue;
      isolated = std::min(isolated, isolated_seconds(time, slice, n->second, tj.job.units));
    }
    isolated_sum[u] += isolated;
  }

  s.completed = jcts.size();
  if (!jcts.empty()) {
    double total = 0;
    for (double x : jcts) total += x;
    s.avg_jct = total / jcts.size();
    s.p50_jct = percentile(jcts, 50);
    s.p95_jct = percentile(jcts, 95);
    s.p99_jct = percentile(jcts, 99);
    s.makespan = last_finish - first_arrival;
  }

  std::vector<double> inverse_rho;  // x_u = 1 / rho_u
  for (std::size_t u = 0; u < s.per_user.size(); ++u) {
    UserSummary& us = s.per_user[u];
    if (us.completed == 0) continue;
    us.avg_jct = jct_sum[u] / us.completed;
    // Jobs shorter than the clock resolves at their arrival finish when they arrive: no
    // slowdown (a ρ of 0 made Jain's index 1/0/∞ = NaN).
    us.rho = jct_sum[u] > 0 ? jct_sum[u] / isolated_sum[u] : 1;
    s.max_rho = std::max(s.max_rho, us.rho);
    inverse_rho.push_back(1 / us.rho);
  }
  s.jain = inverse_rho.empty() ? 0 : jain_index(inverse_rho);
  return s;
}

}  // namespace allox
