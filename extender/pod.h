// What allox reads from a v1.Pod: its identity, its allox.io annotations and the resources it
// requests, turned into a JobVariant (DESIGN section 5, "Pod conventions").
//
//   allox.io/job          job id; pods sharing it are device variants of one job
//                         (default: namespace/name)
//   allox.io/user         the user charged for the job (default: the namespace)
//   allox.io/device       device type of this variant (default: inferred from the requested
//                         resources through the config's resource mapping, else the CPU device)
//   allox.io/iterations   total iterations (profiler input)
//   allox.io/time.<dev>   processing-time hint in seconds on device <dev>
//
// Resource requests are summed over containers (limits stand in for missing requests, as in
// Kubernetes). Quantities use Kubernetes suffixes (500m, 2, 1k, 32Gi). Thread-safe: pure.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/model.h"
#include "core/result.h"

namespace allox::extender {

struct DeviceMapping;  // extender/config.h

struct PodIdentity {
  std::string name;
  std::string namespace_name;
  std::string uid;
};

struct JobVariant {
  PodIdentity pod;
  std::string job_id;
  std::string user;
  DeviceType device;
  std::optional<std::int64_t> iterations;
  std::map<DeviceType, double> time_hints;  // seconds, from allox.io/time.<dev>
};

// Parses a Kubernetes quantity ("500m", "8", "32Gi", "1e3") into a number of base units.
Expected<double> parse_quantity(std::string_view text);

// The pod's identity, or an error naming the missing field (metadata.name is required; a
// missing namespace reads as "default", a missing uid as "").
Expected<PodIdentity> pod_identity(const nlohmann::json& pod);

// Reads the pod as a job variant. Errors name the field, e.g.
// `annotation allox.io/time.gpu: "fast" is not a number of seconds`.
Expected<JobVariant> read_job_variant(const nlohmann::json& pod, const DeviceMapping& mapping);

}  // namespace allox::extender
