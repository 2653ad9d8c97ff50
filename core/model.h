// The scheduling model every allox module shares (docs/design.md, "Model").
//
// A Cluster is a list of Machines; a machine is one device (a GPU, or a CPU bundle) that runs at
// most one job at a time, of one device type, and may be busy until a known time. Machines that
// name the same Machine::node and device type are the units of one node: a job that needs k
// devices (Job::units) runs on k units of one node at once, all of one type, and holds them all
// until it ends (a gang on one node, as a pod asking for `nvidia.com/gpu: 4` does). A machine
// with an empty node is a node of its own with one unit; on a cluster of such machines with
// k = 1 jobs everything is the plain one-job-per-machine model (R||ΣCj for the matcher).
//
// A Job has a processing time per device type it can run on (seconds): with Job::units = k it is
// the time on k devices of that type (k is the job's request, fixed as in Gavel's traces; the
// scheduler does not choose it). A device type missing from Job::time means the job cannot run
// there. Users are the unit of fairness. These are plain values: validation happens where they
// are loaded (core/cluster_file.h, core/workload_file.h, sim/trace.h), so code that receives them
// may trust them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace allox {

// A device type's name such as "cpu", "gpu", "v100": lowercase letters, digits, '-', '_', '.',
// starting with a letter or digit, at most 63 characters (is_device_type_name). Every file reader
// checks it, so a name is safe in CSV headers, JSON, file names and terminals.
using DeviceType = std::string;
bool is_device_type_name(std::string_view name);

struct Machine {
  std::string name;
  DeviceType device;
  double busy_until = 0;  // seconds; the machine is free from this time on
  std::string node{};     // the node this unit belongs to; empty: a one-unit node of its own
};

// Longest time in seconds an input file may state (an arrival, a processing time, a busy_until):
// about 285,000 years, where a double still resolves milliseconds and the matcher's integer
// costs stay inside int64 (matcher/prepared_problem.h).
inline constexpr double kMaxInputSeconds = 9.0e12;

// Largest cluster (devices of all types) a cluster file or a command's counts may describe: each
// device is a Machine, and a matching's memory grows with them.
inline constexpr std::size_t kMaxClusterDevices = 100000;

// Largest number of devices a job may ask for, and a node may offer, of one type.
inline constexpr int kMaxUnits = 64;

// Dense node ids: node_ids(m)[i] is the same for machines sharing a non-empty node and device
// type, distinct otherwise (a machine with an empty node gets one of its own). Ids follow the
// order of each node's first machine. O(M log M).
std::vector<std::size_t> node_ids(const std::vector<Machine>& machines);

// Units of the largest node of each device type (node_ids' nodes): a job of more units than
// largest_node_units(m)[d] can never run on d. O(M log M), O(M) when no machine names a node.
std::map<DeviceType, int> largest_node_units(const std::vector<Machine>& machines);

struct Cluster {
  std::vector<Machine> machines;

  // Device types present, sorted, each once.
  std::vector<DeviceType> device_types() const;
  std::size_t count(const DeviceType& device) const;  // machines (units) of the type
  bool has_device(const DeviceType& device) const { return count(device) > 0; }
};

struct Job {
  std::string id;
  std::string user = "default";
  double arrival = 0;                      // seconds
  std::map<DeviceType, double> time;       // processing time in seconds per runnable device
  std::optional<std::int64_t> iterations;  // total iterations, when known (profiler input)
  std::string family;                      // model family or image, for rate prediction
  int units = 1;  // devices of one type on one node the job needs at once (1..kMaxUnits)
  // What the job holds while it runs on a device type, by resource name ("cpu" -> {"cores": 32,
  // "memory_gb": 14}), when the workload says (the AlloX trace format does); empty otherwise.
  // Read only by drf's dominant share over a resource vector (fairness/drf_share.h).
  std::map<DeviceType, std::map<std::string, double>> holds{};

  std::optional<double> time_on(const DeviceType& device) const;
  // The device type with the smallest processing time (ties: the alphabetically first).
  // Precondition: time is not empty.
  std::pair<DeviceType, double> fastest() const;
};

struct User {
  std::string name;
  double weight = 1;  // > 0; fair share is proportional to weight
};

struct Workload {
  std::vector<User> users;  // every user that owns a job appears here (weight 1 if not declared)
  std::vector<Job> jobs;

  double weight_of(const std::string& user) const;
};

}  // namespace allox
