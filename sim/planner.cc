#include "sim/planner.h"

#include <algorithm>
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

Expected<Cluster> with_additions(const Cluster& base, const PlanAlternative& alt) {
  std::size_t added = 0;
  for (const auto& [device, n] : alt.add) added += static_cast<std::size_t>(n);
  if (base.machines.size() + added > kMaxClusterDevices) {
    return Error{"--add " + alt.name.substr(1) + ": the cluster would have over " +
                 std::to_string(kMaxClusterDevices) + " devices"};
  }
  Cluster c = base;
  std::set<std::string> names;
  for (const Machine& m : base.machines) names.insert(m.name);
  const std::vector<std::size_t> node_of = node_ids(base.machines);
  for (const auto& [device, n] : alt.add) {
    int units = 1;
    if (auto given = alt.units.find(device); given != alt.units.end()) {
      units = given->second;
    } else {
      std::map<std::size_t, int> per_node;
      for (std::size_t m = 0; m < base.machines.size(); ++m) {
        if (base.machines[m].device == device) units = std::max(units, ++per_node[node_of[m]]);
      }
      if (n % units != 0) {
        return Error{"--add " + alt.name.substr(1) + ": the cluster's " + device + " nodes have " +
                     std::to_string(units) + " units; add a multiple of " + std::to_string(units) +
                     " or give the node shape (" + device + "=NxU)"};
      }
    }
    int index = 0;
    for (int k = 0; k < n / units; ++k) {
      std::string name;
      do {
        name = device + "-added-" + std::to_string(index++);
      } while (names.count(name) || names.count(name + "/0"));
      names.insert(name);
      if (units == 1) {
        c.machines.push_back(Machine{name, device, 0});
        continue;
      }
      for (int u = 0; u < units; ++u) {
        c.machines.push_back(Machine{name + "/" + std::to_string(u), device, 0, name});
      }
    }
  }
  return c;
}

}  // namespace

Expected<PlanAlternative> parse_alternative(const std::string& text) {
  PlanAlternative alt;
  std::stringstream in(text);
  const std::string usage =
      "--add expects device=N or device=NxU (N >= 1 devices, or N nodes of U units, at most " +
      std::to_string(kMaxUnits) + "; e.g. gpu=4, gpu=4,cpu=8 or v100=2x4), got '" + text + "'";
  auto whole = [](const std::string& digits) -> long long {
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      return 0;
    }
    return std::stoll(digits);
  };
  for (std::string part; std::getline(in, part, ',');) {
    const auto eq = part.find('=');
    if (eq == std::string::npos || eq == 0) return Error{usage};
    const std::string count = part.substr(eq + 1);
    const auto x = count.find('x');
    const long long n = whole(count.substr(0, x));
    const long long units = x == std::string::npos ? 1 : whole(count.substr(x + 1));
    if (n < 1 || units < 1 || units > kMaxUnits || n * units > 100000) return Error{usage};
    const DeviceType device = part.substr(0, eq);
    if (x != std::string::npos) {
      auto [it, fresh] = alt.units.try_emplace(device, static_cast<int>(units));
      if (!fresh && it->second != units) {
        return Error{"--add " + text + ": two node shapes for " + device};
      }
    } else if (alt.units.contains(device)) {
      return Error{"--add " + text + ": give " + device + " as NxU every time or never"};
    }
    int& total = alt.add[device];
    total += static_cast<int>(n * units);
    if (total > 100000) return Error{usage};
  }
  if (alt.add.empty()) return Error{"--add: nothing to add in '" + text + "'"};
  alt.name = "+" + text;
  return alt;
}

std::string unfinished_state(const SimJobRecord& job) {
  return job.start ? "never finished" : "never started";
}

std::string unfinished_state(const PlanScenario& scenario) {
  if (scenario.unfinished.empty()) return "";
  for (std::size_t i : scenario.unfinished) {
    if (scenario.result.jobs[i].start) return "never finished";
  }
  return "never started";
}

std::string unfinished_state(const PlanScenario& scenario, const std::string& user) {
  std::string state;
  for (std::size_t i : scenario.unfinished) {
    const SimJobRecord& r = scenario.result.jobs[i];
    if (r.user != user) continue;
    if (!r.start) return "never started";
    state = "never finished";
  }
  return state;
}

std::string unfinished_note(const PlanScenario& scenario, const std::string& policy) {
  if (scenario.unfinished.empty()) return "";
  constexpr std::size_t kNamed = 5;
  const std::size_t n = scenario.unfinished.size(), total = scenario.result.jobs.size();
  std::string ids;
  for (std::size_t k = 0; k < n && k < kNamed; ++k) {
    ids += (k ? ", " : "") + scenario.result.jobs[scenario.unfinished[k]].job;
  }
  if (n > kNamed) ids += " and " + std::to_string(n - kNamed) + " more";
  return "scenario '" + scenario.name + "': " + std::to_string(n) + " of " +
         std::to_string(total) + " jobs " + unfinished_state(scenario) + " under " + policy +
         " (" + ids + "); its avg JCT, makespan and last finishes count only the " +
         std::to_string(total - n) + " that finished";
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
    Expected<Cluster> bigger = with_additions(cluster, alt);
    if (!bigger.ok()) return bigger.error();
    clusters.push_back({alt.name, std::move(*bigger)});
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
    std::unique_ptr<SchedulingPolicy> policy;
    if (options.make_policy) {
      policy = options.make_policy();
    } else {
      auto named = make_policy(options.policy, options.policy_options);
      if (!named) return named.error();
      policy = std::move(*named);
    }
    auto result = simulate(trace, c, *policy);
    if (!result) return Error{"scenario '" + name + "': " + result.message()};
    PlanScenario s{name, c, std::move(*result), {}, {}};
    for (std::size_t i = 0; i < s.result.jobs.size(); ++i) {
      if (!s.result.jobs[i].finish) s.unfinished.push_back(i);
    }
    s.summary =
        summarize(s.result, trace, c,
                  options.policy == "allox" ? std::optional<double>(options.policy_options.alpha)
                                            : std::nullopt);
    scenarios.push_back(std::move(s));
  }
  return scenarios;
}

}  // namespace allox
