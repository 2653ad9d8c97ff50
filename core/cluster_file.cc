#include "core/cluster_file.h"

#include <set>
#include <vector>

#include "core/input_file.h"
#include "core/yaml_fields.h"

namespace allox {

namespace {

constexpr auto kMaxPoolSize = static_cast<std::int64_t>(kMaxClusterDevices);

// Where each machine was declared, for messages about it (a pool declares several), and whether
// the cluster has reached kMaxClusterDevices (said once, not for every entry after it).
struct Origins {
  std::vector<YAML::Node> nodes;
  bool full = false;
};

// A node of `units` devices: one machine named `name` with no node when it has one unit (a plain
// machine), else `units` machines "<name>/0" .. sharing node `name`.
// False, with the problem recorded, when `devices` more would make the cluster larger than
// kMaxClusterDevices: checked before they are made, so a few lines cannot fill the memory.
bool room_for(FieldReader& reader, const YAML::Node& at, const std::string& subject,
              std::int64_t devices, const Cluster& cluster, Origins& origins) {
  if (origins.full) return false;
  if (cluster.machines.size() + static_cast<std::size_t>(devices) <= kMaxClusterDevices) {
    return true;
  }
  origins.full = true;
  reader.fail(at, subject,
              "the cluster would have over " + std::to_string(kMaxClusterDevices) +
                  " devices (machines and pools together, each unit counted)");
  return false;
}

void add_node(const std::string& name, const DeviceType& device, double busy_until,
              std::int64_t units, const YAML::Node& origin, Cluster& cluster, Origins& origins) {
  if (units == 1) {
    cluster.machines.push_back({name, device, busy_until, ""});
    origins.nodes.push_back(origin);
    return;
  }
  for (std::int64_t u = 0; u < units; ++u) {
    cluster.machines.push_back({name + "/" + std::to_string(u), device, busy_until, name});
    origins.nodes.push_back(origin);
  }
}

void read_machine(FieldReader& reader, const YAML::Node& node, std::size_t index, Cluster& cluster,
                  Origins& origins) {
  const std::string subject = "machines[" + std::to_string(index) + "]";
  if (!reader.check_map(node, subject, {"name", "device", "busy_until", "units"})) return;
  const auto name = reader.text(node, "name", subject, true);
  const std::string named = name ? "machine \"" + *name + "\"" : subject;
  const auto device = reader.text(node, "device", named, true);
  const auto busy_until = reader.seconds(node, "busy_until", named, false, false);
  const auto units = reader.integer(node, "units", named, 1, kMaxUnits, false);
  if (!name || !device || !reader.device_name(node["device"], named, "device", *device)) return;
  if (node["units"] && !units) return;
  if (!room_for(reader, node, named, units.value_or(1), cluster, origins)) return;
  add_node(*name, *device, busy_until.value_or(0), units.value_or(1), node, cluster, origins);
}

void read_pool(FieldReader& reader, const YAML::Node& node, std::size_t index, Cluster& cluster,
               Origins& origins) {
  const std::string subject = "pools[" + std::to_string(index) + "]";
  if (!reader.check_map(node, subject,
                        {"device", "count", "prefix", "start", "busy_until", "units"})) {
    return;
  }
  const auto device = reader.text(node, "device", subject, true);
  const auto count = reader.integer(node, "count", subject, 1, kMaxPoolSize, true);
  const auto prefix = reader.text(node, "prefix", subject, false);
  const auto start = reader.integer(node, "start", subject, 0, 1'000'000'000, false);
  const auto busy_until = reader.seconds(node, "busy_until", subject, false, false);
  const auto units = reader.integer(node, "units", subject, 1, kMaxUnits, false);
  if (!device || !count || !reader.device_name(node["device"], subject, "device", *device)) {
    return;
  }
  if (node["units"] && !units) return;
  if (*count * units.value_or(1) > kMaxPoolSize) {
    reader.fail(node["count"], subject,
                "count x units must be at most " + std::to_string(kMaxPoolSize) + " devices");
    return;
  }
  if (!room_for(reader, node, subject, *count * units.value_or(1), cluster, origins)) return;
  const std::string stem = prefix.value_or(*device + "-");
  for (std::int64_t i = 0; i < *count; ++i) {
    add_node(stem + std::to_string(start.value_or(0) + i), *device, busy_until.value_or(0),
             units.value_or(1), node, cluster, origins);
  }
}

}  // namespace

Expected<Cluster> parse_cluster(const std::string& text, const std::string& source) {
  auto root = parse_yaml(text, source);
  if (!root) return root.error();
  FieldReader reader(source);
  Cluster cluster;
  Origins origins;
  if (!reader.check_map(*root, "", {"machines", "pools"})) return reader.error();

  const auto machines = reader.sequence(*root, "machines", "");
  for (std::size_t i = 0; i < machines.size(); ++i)
    read_machine(reader, machines[i], i, cluster, origins);
  const auto pools = reader.sequence(*root, "pools", "");
  for (std::size_t i = 0; i < pools.size(); ++i) read_pool(reader, pools[i], i, cluster, origins);

  std::set<std::string> names;
  for (std::size_t i = 0; i < cluster.machines.size(); ++i) {
    const std::string& name = cluster.machines[i].name;
    if (!names.insert(name).second) {
      reader.fail(origins.nodes[i], "machine \"" + name + "\"", "duplicate machine name");
    }
  }
  if (reader.ok() && cluster.machines.empty()) {
    reader.fail(*root, "", "the cluster has no machines: list some under machines or pools");
  }
  if (!reader.ok()) return reader.error();
  return cluster;
}

Expected<Cluster> load_cluster_file(const std::string& path) {
  auto text = read_input_file(path);
  if (!text) return text.error();
  return parse_cluster(*text, path);
}

}  // namespace allox
