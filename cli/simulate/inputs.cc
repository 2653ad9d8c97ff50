#include "cli/simulate/inputs.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "core/cluster_file.h"
#include "profiler/throughput_table.h"
#include "sim/allox_trace.h"
#include "sim/experiment.h"
#include "sim/synthetic.h"
#include "sim/trace_file.h"
#include "sim/trace_format.h"

namespace allox::cli {
namespace {

// One --machines entry: device=N (N one-device machines) or device=NxU (N nodes of U units),
// added to the counts and node shapes per device type.
Status add_machines(const std::string& m, std::map<DeviceType, int>& count,
                    std::map<DeviceType, int>& units) {
  const auto eq = m.find('=');
  const std::string value = eq == std::string::npos ? "" : m.substr(eq + 1);
  const auto x = value.find('x');
  auto whole = [](const std::string& digits) -> long long {
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      return 0;
    }
    return std::stoll(digits);
  };
  const long long n = whole(value.substr(0, x));
  const long long u = x == std::string::npos ? 1 : whole(value.substr(x + 1));
  if (eq == 0 || n <= 0 || u < 1 || u > kMaxUnits || n * u > 100000) {
    return Error{
        "--machines expects device=N or device=NxU (N >= 1 machines, or N nodes of U "
        "units, U at most " +
        std::to_string(kMaxUnits) + ", at most 100000 devices), got '" + m + "'"};
  }
  const DeviceType device = m.substr(0, eq);
  if (auto [it, fresh] = units.try_emplace(device, static_cast<int>(u));
      !fresh && it->second != u) {
    return Error{"--machines: two node shapes for " + device + " ('" + m + "')"};
  }
  // n <= 100000 here, so the sum cannot overflow before it is refused.
  if (count[device] + n > static_cast<long long>(kMaxClusterDevices)) {
    return Error{"--machines " + m + ": over " + std::to_string(kMaxClusterDevices) +
                 " machines of " + device};
  }
  count[device] += static_cast<int>(n);
  return OkStatus();
}

}  // namespace

Status check_option_pairs(const SimulateArgs& args) {
  if (args.trace.empty() && args.synthetic_jobs == 0) {
    return Error{"give --trace FILE or --synthetic N"};
  }
  if (args.plots && args.out.empty()) return Error{"--plots needs --out DIR"};
  // The trace is written before it is replayed: over its own file it would replace the input.
  std::error_code ec;
  if (!args.trace.empty() && !args.save_trace.empty() &&
      (args.trace == args.save_trace ||
       std::filesystem::equivalent(args.trace, args.save_trace, ec))) {
    return Error{"--save-trace " + args.save_trace + " is the --trace file " + args.trace +
                 ": it would be overwritten; save the trace elsewhere"};
  }
  return OkStatus();
}

Expected<Trace> load_trace(const SimulateArgs& a) {
  Expected<Trace> trace = Error{""};
  if (a.synthetic_jobs > 0) {
    auto table = ThroughputTable::load_gavel(a.gavel);
    if (!table) return table.error();
    SyntheticOptions o = a.synthetic;
    o.jobs = a.synthetic_jobs;
    SyntheticOptionNames names;
    names.jobs = "--synthetic";
    names.users = "--users";
    names.arrival_rate = "--rate";
    names.median_duration = "--median-duration";
    names.table = "--gavel " + a.gavel;
    trace = generate_synthetic_trace(*table, o, names);
  } else {
    // --format is checked against these three names (options.cc); none: the file says.
    std::optional<TraceFormat> format;
    if (a.format == "allox") format = TraceFormat::kAllox;
    if (a.format == "yaml") format = TraceFormat::kYaml;
    if (a.format == "csv") format = TraceFormat::kCsv;
    trace = load_trace(a.trace, format, AlloxTraceOptions{a.exact_estimates});
  }
  if (trace && a.exact_estimates) use_true_times_as_estimates(*trace);
  return trace;
}

Expected<Cluster> load_cluster(const SimulateArgs& a) {
  if (!a.cluster.empty()) return load_cluster_file(a.cluster);
  std::map<DeviceType, int> count;
  std::map<DeviceType, int> units;
  if (a.gpus > 0) count["gpu"] = a.gpus;
  if (a.cpus > 0) count["cpu"] = a.cpus;
  for (const std::string& m : a.machines) {
    if (Status s = add_machines(m, count, units); !s.ok()) return s.error();
  }
  if (count.empty()) return Error{"give --cluster FILE, or --gpus/--cpus/--machines counts"};
  // --gpus and --cpus are one-unit machines; --machines entries count every unit.
  long long devices = 0;
  for (const auto& [device, n] : count) {
    const auto shape = units.find(device);
    devices += static_cast<long long>(n) * (shape == units.end() ? 1 : shape->second);
  }
  if (devices > static_cast<long long>(kMaxClusterDevices)) {
    return Error{"--gpus, --cpus and --machines describe " + std::to_string(devices) +
                 " devices; a cluster has at most " + std::to_string(kMaxClusterDevices)};
  }
  return make_uniform_cluster(count, units);
}

Status check_sweep_gpus(const SimulateArgs& args, const Cluster& cluster) {
  const auto others = std::count_if(cluster.machines.begin(), cluster.machines.end(),
                                    [](const Machine& m) { return m.device != "gpu"; });
  for (int gpus : args.sweep_gpus) {
    if (static_cast<std::size_t>(others) + static_cast<std::size_t>(gpus) > kMaxClusterDevices) {
      return Error{"--sweep-gpus " + std::to_string(gpus) + ": the cluster would have over " +
                   std::to_string(kMaxClusterDevices) + " devices"};
    }
  }
  return OkStatus();
}

}  // namespace allox::cli
