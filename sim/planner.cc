#include "sim/planner.h"

#include <set>
#include <sstream>

namespace allox {
namespace {

Trace trace_of(const Workload& workload) {
  Trace trace;
  trace.users = workload.users;
  for (const Job& job : workload.jobs) trace.jobs.push_back(TraceJob{job, job.time});
  add_missing_users(trace);
  sort_by_arrival(trace);
  return trace;
}

Cluster with_additions(const Cluster& base, const PlanAlternative& alt) {
  Cluster c = base;
  std::set<std::string> names;
  for (const Machine& m : base.machines) names.insert(m.name);
  for (const auto& [device, n] : alt.add) {
    int index = 0;
    for (int k = 0; k < n; ++k) {
      std::string name;
      do {
        name = device + "-added-" + std::to_string(index++);
      } while (names.count(name));
      names.insert(name);
      c.machines.push_back(Machine{name, device, 0});
    }
  }
  return c;
}

}  // namespace

Expected<PlanAlternative> parse_alternative(const std::string& text) {
  PlanAlternative alt;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    const auto eq = part.find('=');
    int n = 0;
    if (eq != std::string::npos && eq > 0) {
      try {
        std::size_t used = 0;
        n = std::stoi(part.substr(eq + 1), &used);
        if (used != part.size() - eq - 1) n = 0;
      } catch (const std::exception&) {
        n = 0;
      }
    }
    if (n < 1) {
      return Error{"--add expects device=N with N >= 1 (e.g. gpu=4 or gpu=4,cpu=8), got '" + text +
                   "'"};
    }
    alt.add[part.substr(0, eq)] += n;
  }
  if (alt.add.empty()) return Error{"--add: nothing to add in '" + text + "'"};
  alt.name = "+" + text;
  return alt;
}

Expected<std::vector<PlanScenario>> plan(const Workload& workload, const Cluster& cluster,
                                         const std::vector<PlanAlternative>& alternatives,
                                         const PlanOptions& options) {
  const Trace trace = trace_of(workload);
  std::vector<std::pair<std::string, Cluster>> clusters = {{"as is", cluster}};
  std::set<DeviceType> usable;
  for (const TraceJob& tj : trace.jobs) {
    for (const auto& [device, t] : tj.job.time) usable.insert(device);
  }
  for (const PlanAlternative& alt : alternatives) {
    for (const auto& [device, n] : alt.add) {
      if (!usable.contains(device)) {
        std::string known;
        for (const DeviceType& d : usable) known += (known.empty() ? "" : ", ") + d;
        return Error{"--add " + alt.name.substr(1) + ": no job can run on '" + device +
                     "' (the jobs run on: " + known + ")"};
      }
    }
    clusters.push_back({alt.name, with_additions(cluster, alt)});
  }
  std::vector<PlanScenario> scenarios;
  for (auto& [name, c] : clusters) {
    for (const TraceJob& tj : trace.jobs) {
      bool runnable = false;
      for (const auto& [device, t] : tj.job.time) runnable |= c.has_device(device);
      if (!runnable) {
        return Error{"scenario '" + name + "': job " + tj.job.id +
                     " can run on none of the cluster's machines"};
      }
    }
    auto policy = make_policy(options.policy, options.policy_options);
    if (!policy) return policy.error();
    auto result = simulate(trace, c, **policy);
    if (!result) return Error{"scenario '" + name + "': " + result.message()};
    PlanScenario s{name, c, std::move(*result), {}};
    s.summary =
        summarize(s.result, trace, c,
                  options.policy == "allox" ? std::optional<double>(options.policy_options.alpha)
                                            : std::nullopt);
    scenarios.push_back(std::move(s));
  }
  return scenarios;
}

}  // namespace allox
