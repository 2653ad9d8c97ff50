// Measured throughputs of model configurations per device type, for predicting the time of a
// job that has not been profiled: p = iterations / steps-per-second.
//
// Loads Gavel's simulation_throughputs.json (stanford-futuredata/gavel, MIT): the top-level keys
// are device types ("k80", "p100", "v100", and "*_unconsolidated" variants), each mapping
// "('<model> (batch size B)', S)" (S = scale factor, machines per job) to an object whose "null"
// entry is the isolated steps/s; the other entries (co-location pairs) are ignored. A zero
// throughput means the configuration does not fit on that device (out of memory) and is left
// out. Speeds are not monotone across devices, so never assume an order.
//
// Immutable after loading; safe to share across threads.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"

namespace allox {

struct ThroughputKey {
  std::string config;    // "ResNet-18 (batch size 16)"
  int scale_factor = 1;  // machines per job

  auto operator<=>(const ThroughputKey&) const = default;
};

class ThroughputTable {
 public:
  // Errors name the file and the offending key.
  static Expected<ThroughputTable> load_gavel(const std::string& path);
  static Expected<ThroughputTable> parse_gavel(const std::string& json_text,
                                               const std::string& origin);

  std::optional<double> steps_per_second(const ThroughputKey& key, const DeviceType& device) const;
  // iterations / steps-per-second, nullopt if the configuration cannot run on the device.
  std::optional<double> job_time(const ThroughputKey& key, const DeviceType& device,
                                 double iterations) const;

  std::vector<ThroughputKey> keys() const;
  std::vector<DeviceType> devices() const;
  std::size_t size() const { return rates_.size(); }

 private:
  std::map<ThroughputKey, std::map<DeviceType, double>> rates_;
};

// Parses "('ResNet-18 (batch size 16)', 1)" in one pass, whatever the key's length. Error (naming
// the key, cut to 60 bytes) if it has another shape or its scale factor is not 1..kMaxUnits.
Expected<ThroughputKey> parse_gavel_key(const std::string& key);

}  // namespace allox
