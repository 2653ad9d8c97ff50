// Loads cluster.yaml (or the same shape in JSON): the machines allox schedules onto.
//
//   machines:                       # one entry per machine (one job at a time each)
//     - {name: gpu-0, device: gpu}
//     - {name: cpu-0, device: cpu, busy_until: 120}
//   pools:                          # shorthand for identical machines: gpu-1 .. gpu-20
//     - {device: gpu, count: 20, prefix: gpu-, start: 1}
//
// Pool keys: device (required), count (1..100000, required), prefix (default "<device>-"),
// start (default 0), busy_until (default 0). Machine names must be unique across both lists.
// Every problem is reported with file, line and field (see core/yaml_fields.h); an empty
// cluster is an error.
#pragma once

#include <string>

#include "core/model.h"
#include "core/result.h"

namespace allox {

Expected<Cluster> parse_cluster(const std::string& text, const std::string& source);
Expected<Cluster> load_cluster_file(const std::string& path);

}  // namespace allox
