#include "sim/experiment.h"

#include <algorithm>
#include <atomic>
#include <iomanip>
#include <set>
#include <sstream>
#include <thread>

namespace allox {
namespace {

std::string alpha_text(double alpha) {
  std::ostringstream out;
  out << alpha;
  return out.str();
}

}  // namespace

Expected<std::vector<RunSpec>> expand_policies(const std::string& arg, double alpha) {
  std::vector<std::string> names;
  if (arg == "all") {
    names = policy_names();
  } else {
    std::stringstream in(arg);
    for (std::string name; std::getline(in, name, ',');) {
      if (!name.empty()) names.push_back(name);
    }
  }
  if (names.empty()) return Error{"--policy: no policy named"};
  const std::vector<std::string> known = policy_names();
  std::vector<RunSpec> specs;
  std::set<std::string> seen;
  for (const std::string& name : names) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      return Error{"unknown policy '" + name + "' (known: " + list + ", or all)"};
    }
    if (!seen.insert(name).second) continue;
    specs.push_back(RunSpec{name, alpha, name});
  }
  const bool has_allox = seen.count("allox") > 0;
  if (arg == "all" && has_allox && alpha != 1) {
    for (RunSpec& s : specs) {
      if (s.policy == "allox") s.label = "allox-a" + alpha_text(alpha);
    }
    specs.push_back(RunSpec{"allox", 1, "allox-a1"});
  }
  return specs;
}

double default_round_period(const std::string& policy) {
  return policy == "las" ? 60 : 0;
}

Expected<Run> run_policy(const Trace& trace, const Cluster& cluster, const RunSpec& spec,
                         const PolicyOptions& base, const SimOptions& sim) {
  PolicyOptions options = base;
  options.alpha = spec.alpha;
  auto policy = make_policy(spec.policy, options);
  if (!policy) return Error{spec.label + ": " + policy.message()};
  SimOptions sim_options = sim;
  if (sim_options.round_period < 0) sim_options.round_period = default_round_period(spec.policy);
  auto result = simulate(trace, cluster, **policy, sim_options);
  if (!result) return Error{spec.label + ": " + result.message()};
  Run run{spec, std::move(*result), {}};
  const bool has_alpha = spec.policy == "allox";
  run.summary = summarize(run.result, trace, cluster,
                          has_alpha ? std::optional<double>(spec.alpha) : std::nullopt);
  run.summary.policy = spec.label;
  return run;
}

Expected<std::vector<Run>> run_all(const Trace& trace, const Cluster& cluster,
                                   const std::vector<RunSpec>& specs, const PolicyOptions& base,
                                   const SimOptions& sim, unsigned threads,
                                   const ProgressFactory& progress_for) {
  std::vector<std::optional<Expected<Run>>> out(specs.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < specs.size(); i = next++) {
      SimOptions options = sim;
      if (progress_for) options.progress = progress_for(i);
      out[i].emplace(run_policy(trace, cluster, specs[i], base, options));
      if (options.progress) options.progress(1.0);  // the replay reports only now and then
    }
  };
  threads = std::clamp<unsigned>(threads, 1, std::max<std::size_t>(specs.size(), 1));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  std::vector<Run> runs;
  for (auto& r : out) {
    if (!r->ok()) return r->error();
    runs.push_back(std::move(r->value()));
  }
  return runs;
}

Cluster make_uniform_cluster(const std::map<DeviceType, int>& count,
                             const std::map<DeviceType, int>& units) {
  Cluster cluster;
  for (const auto& [device, n] : count) {
    auto u = units.find(device);
    const int per_node = u == units.end() ? 1 : u->second;
    for (int i = 0; i < n; ++i) {
      const std::string node = device + "-" + std::to_string(i);
      if (per_node == 1) {
        cluster.machines.push_back({node, device, 0});
        continue;
      }
      for (int k = 0; k < per_node; ++k) {
        cluster.machines.push_back({node + "/" + std::to_string(k), device, 0, node});
      }
    }
  }
  return cluster;
}

}  // namespace allox
