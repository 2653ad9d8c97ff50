// The scheduling model every allox module shares (docs/design.md, "Model").
//
// A Cluster is a list of Machines; each machine runs one job at a time on one device type and
// may be busy until a known time. A Job has a processing time per device type it can run on
// (seconds); a device type missing from Job::time means the job cannot run there. Users are the
// unit of fairness. These are plain values: validation happens where they are loaded
// (core/cluster_file.h, core/workload_file.h), so code that receives them may trust them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace allox {

// Free-form device type name such as "cpu", "gpu", "v100" (lowercase, digits, '-', '_', '.').
using DeviceType = std::string;

struct Machine {
  std::string name;
  DeviceType device;
  double busy_until = 0;  // seconds; the machine is free from this time on
};

struct Cluster {
  std::vector<Machine> machines;

  // Device types present, sorted, each once.
  std::vector<DeviceType> device_types() const;
  std::size_t count(const DeviceType& device) const;
  bool has_device(const DeviceType& device) const { return count(device) > 0; }
};

struct Job {
  std::string id;
  std::string user = "default";
  double arrival = 0;                      // seconds
  std::map<DeviceType, double> time;       // processing time in seconds per runnable device
  std::optional<std::int64_t> iterations;  // total iterations, when known (profiler input)
  std::string family;                      // model family or image, for rate prediction

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
