// Loads cluster.yaml (or the same shape in JSON): the machines allox schedules onto.
//
//   machines:                       # one entry per machine (one job at a time each)
//     - {name: gpu-0, device: gpu}
//     - {name: cpu-0, device: cpu, busy_until: 120}
//     - {name: dgx-0, device: v100, units: 8}    # a node of 8 devices: dgx-0/0 .. dgx-0/7
//   pools:                          # shorthand for identical machines: gpu-1 .. gpu-20
//     - {device: gpu, count: 20, prefix: gpu-, start: 1}
//     - {device: p100, count: 2, units: 4}      # 2 nodes of 4: p100-0/0 .. p100-1/3
//
// `units` (1..kMaxUnits, default 1) makes an entry a node of that many devices of its type: one
// Machine per device, named "<node>/<i>", with Machine::node the entry's name; units: 1 is the
// plain one-device machine. Pool keys: device (required), count (nodes, 1..100000, required;
// count x units at most 100000), prefix (default "<device>-"), start (default 0), busy_until
// (default 0, for every unit), units. Machine names must be unique across both lists; the
// cluster holds at most kMaxClusterDevices devices in all.
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
