// alloxd.yaml's sections below the root: devices, cpu, nodes, apiserver, webhook, tenancy,
// retention, limits, log.
#include "alloxd/config_sections.h"

#include <map>
#include <memory>
#include <set>
#include <utility>

#include "core/model.h"

namespace allox::extender::config_yaml {
namespace {

constexpr std::int64_t kMaxMachinesPerNode = 100000;
constexpr double kMinCoresPerMachine = 0.001;
constexpr double kMaxCoresPerMachine = 1e6;

}  // namespace

namespace {

// A resource's node_labels: {label, value, device} each, one type per label key and value.
std::vector<DeviceMapping::NodeLabelRule> read_node_labels(FieldReader& reader,
                                                           const YAML::Node& entry,
                                                           const std::string& subject,
                                                           const DeviceType& plain) {
  std::vector<DeviceMapping::NodeLabelRule> rules;
  const auto items = reader.sequence(entry, "node_labels", subject);
  std::map<std::pair<std::string, std::string>, DeviceType> seen;
  for (std::size_t j = 0; j < items.size(); ++j) {
    const YAML::Node& item = items[j];
    const std::string at = subject + ".node_labels[" + std::to_string(j) + "]";
    if (!reader.check_map(item, at, {"label", "value", "device"})) continue;
    const auto label = reader.text(item, "label", at, true);
    const auto value = reader.text(item, "value", at, true);
    const auto device = reader.text(item, "device", at, true);
    if (!label || !value || !device || !reader.device_name(item["device"], at, "device", *device)) {
      continue;
    }
    if (*device == plain) {
      reader.fail(item["device"], at,
                  "device must differ from the resource's plain device " + plain +
                      " (nodes matching no rule are " + plain + " already), got " + *device);
      continue;
    }
    auto [it, added] = seen.emplace(std::pair(*label, *value), *device);
    if (!added) {
      reader.fail(item, at,
                  "nodes labelled " + *label + "=" + *value + " are given a type twice (" +
                      it->second + ", then " + *device + ")");
      continue;
    }
    rules.push_back({*label, *value, *device});
  }
  return rules;
}

}  // namespace

void read_devices(FieldReader& reader, const YAML::Node& root, DeviceMapping& devices) {
  if (!root["devices"] || root["devices"].IsNull()) return;  // the default mapping stays
  devices.resources.clear();
  const auto entries = reader.sequence(root, "devices", "");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const YAML::Node& entry = entries[i];
    const std::string subject = "devices[" + std::to_string(i) + "]";
    if (!reader.check_map(entry, subject, {"resource", "device", "node_labels"})) continue;
    const auto resource = reader.text(entry, "resource", subject, true);
    const auto device = reader.text(entry, "device", subject, true);
    if (!resource || !device || !reader.device_name(entry["device"], subject, "device", *device)) {
      continue;
    }
    devices.resources.push_back(
        {*resource, *device, read_node_labels(reader, entry, subject, *device)});
  }
}

void check_device_types(FieldReader& reader, const YAML::Node& root, const DeviceMapping& devices) {
  const YAML::Node listed = root["devices"];
  auto at = [&](std::size_t i, const char* key) {
    return listed && listed.IsSequence() && listed[i][key] ? listed[i][key] : root;
  };
  // A resource maps to one device type, and CPUs are the cpu section's: a second mapping of a
  // resource would be ignored, and a GPU resource read as CPU bundles would queue its pods
  // behind the CPU pods for CPU slots.
  std::map<std::string, std::size_t> first_of;  // resource -> the entry that maps it
  for (std::size_t i = 0; i < devices.resources.size(); ++i) {
    const auto& r = devices.resources[i];
    const std::string subject = "devices[" + std::to_string(i) + "]";
    if (auto [it, fresh] = first_of.emplace(r.resource, i); !fresh) {
      reader.fail(at(i, "resource"), subject,
                  "resource " + r.resource + " is already mapped by devices[" +
                      std::to_string(it->second) + "]; a resource names one device type");
    }
    if (r.resource == "cpu") {
      reader.fail(at(i, "resource"), subject,
                  "resource cpu is counted in CPU bundles (the cpu section); map extended "
                  "resources such as nvidia.com/gpu here");
    }
    if (r.device == devices.cpu_device) {
      reader.fail(at(i, "device"), subject,
                  "device " + r.device + " is the CPU bundles' type (cpu.device); give " +
                      r.resource + " a type of its own");
    }
  }
  std::map<DeviceType, std::string> plain;  // plain type (and the CPU device) -> its resource
  plain[devices.cpu_device] = "cpu";
  for (const auto& r : devices.resources) plain.emplace(r.device, r.resource);
  std::map<DeviceType, std::string> labelled;  // label type -> its resource
  const YAML::Node entries = root["devices"];
  for (std::size_t i = 0; i < devices.resources.size(); ++i) {
    const auto& r = devices.resources[i];
    for (std::size_t j = 0; j < r.node_labels.size(); ++j) {
      const DeviceType& type = r.node_labels[j].device;
      const std::string at =
          "devices[" + std::to_string(i) + "].node_labels[" + std::to_string(j) + "]";
      const YAML::Node where =
          entries && entries.IsSequence() ? entries[i]["node_labels"][j] : root;
      std::string other;
      if (auto p = plain.find(type); p != plain.end()) other = p->second + "'s plain device";
      if (auto l = labelled.emplace(type, r.resource).first; l->second != r.resource) {
        other = l->second + "'s label type";
      }
      if (!other.empty()) {
        reader.fail(where, at,
                    "device " + type + " is already " + other + "; a type names one resource");
      }
    }
  }
}

void read_throughputs(FieldReader& reader, const YAML::Node& root,
                      std::shared_ptr<const ThroughputTable>& out) {
  const auto path = reader.text(root, "throughputs", "", false);
  if (!path) return;
  auto table = ThroughputTable::load_gavel(*path);
  if (!table) {
    reader.fail(root["throughputs"], "", "throughputs: " + table.message());
    return;
  }
  out = std::make_shared<const ThroughputTable>(std::move(*table));
}

void read_cpu(FieldReader& reader, const YAML::Node& root, DeviceMapping& devices) {
  const YAML::Node cpu = root["cpu"];
  if (!cpu || cpu.IsNull()) return;
  if (!reader.check_map(cpu, "cpu", {"device", "cores_per_machine"})) return;
  if (const auto device = reader.text(cpu, "device", "cpu", false)) {
    if (reader.device_name(cpu["device"], "cpu", "device", *device)) devices.cpu_device = *device;
  }
  // From a millicore, the smallest CPU quantity Kubernetes has, to a million cores: a pod's
  // CPU request is a count of these bundles.
  if (const YAML::Node cores = cpu["cores_per_machine"]; cores && !cores.IsNull()) {
    const auto value =
        reader.number_at(cores, "cpu", "cores_per_machine", "a number of cores from 0.001 to 1e6",
                         true, kMaxCoresPerMachine);
    if (value && *value < kMinCoresPerMachine) {
      reader.fail(
          cores, "cpu",
          "cores_per_machine must be a number of cores from 0.001 to 1e6, got " + describe(cores));
    } else if (value) {
      devices.cores_per_machine = *value;
    }
  }
}

void read_nodes(FieldReader& reader, const YAML::Node& root, std::vector<NodeInventory>& nodes) {
  const auto entries = reader.sequence(root, "nodes", "");
  std::set<std::string> seen;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const YAML::Node& entry = entries[i];
    const std::string index = "nodes[" + std::to_string(i) + "]";
    if (!reader.check_map(entry, index, {"name", "machines"})) continue;
    const auto name = reader.text(entry, "name", index, true);
    const std::string subject = name ? "node \"" + *name + "\"" : index;
    if (name && !seen.insert(*name).second)
      reader.fail(entry["name"], subject, "duplicate node name");
    NodeInventory node{name.value_or(""), {}};
    const YAML::Node machines = entry["machines"];
    if (!machines || machines.IsNull()) {
      reader.fail(entry, subject, "machines is required");
    } else if (!machines.IsMap()) {
      reader.fail(machines, subject,
                  "machines must be a mapping of device type to count, got " + describe(machines));
    } else {
      for (const auto& m : machines) {
        const std::string device = m.first.as<std::string>("");
        const std::string field = "machines." + device;
        const bool named = reader.device_name(m.first, subject, "machines key", device);
        const auto count = reader.integer_at(m.second, subject, field, 0, kMaxMachinesPerNode);
        if (named && count) node.machines[device] = static_cast<int>(*count);
      }
    }
    nodes.push_back(std::move(node));
  }
  // Each machine is a slot in the book and a row on the status page: the whole inventory is
  // bounded as a planner's cluster file is.
  std::size_t total = 0;
  for (const NodeInventory& node : nodes) {
    for (const auto& [device, count] : node.machines) total += static_cast<std::size_t>(count);
  }
  if (total > kMaxClusterDevices) {
    reader.fail(root["nodes"], "nodes",
                std::to_string(total) + " machines in all, over the " +
                    std::to_string(kMaxClusterDevices) + " alloxd keeps");
  }
}

void read_apiserver(FieldReader& reader, const YAML::Node& root,
                    std::optional<ApiServerConfig>& out) {
  const YAML::Node api = root["apiserver"];
  if (!api || api.IsNull()) return;
  if (!reader.check_map(api, "apiserver", {"url", "token", "token_file", "ca_file", "lease"})) {
    return;
  }
  ApiServerConfig server;
  if (const auto url = reader.text(api, "url", "apiserver", true)) {
    if (url->rfind("http://", 0) != 0 && url->rfind("https://", 0) != 0) {
      reader.fail(api["url"], "apiserver",
                  "url must be an http:// or https:// URL, got " + describe(api["url"]));
    } else if (auto problem = url_problem(*url)) {
      // A URL with credentials in it is not quoted back.
      const bool secret = url->find('@') != std::string::npos;
      reader.fail(api["url"], "apiserver",
                  "url must be an http:// or https:// URL with a host, got " +
                      (secret ? std::string("a URL") : describe(api["url"])) + ": " + *problem);
    }
    server.url = *url;
    while (!server.url.empty() && server.url.back() == '/') server.url.pop_back();
  }
  server.token = inline_token(reader, api, "token", "apiserver").value_or("");
  if (auto token = token_file(reader, api, "token_file", "apiserver")) server.token = *token;
  server.ca_file = reader.text(api, "ca_file", "apiserver", false).value_or("");
  const YAML::Node lease = api["lease"];
  if (lease && !lease.IsNull() &&
      reader.check_map(lease, "apiserver.lease", {"namespace", "name"})) {
    LeaseConfig held;
    held.namespace_name =
        reader.text(lease, "namespace", "apiserver.lease", false).value_or(held.namespace_name);
    held.name = reader.text(lease, "name", "apiserver.lease", false).value_or(held.name);
    server.lease = held;
  }
  out = std::move(server);
}

void read_webhook(FieldReader& reader, const YAML::Node& root, std::optional<WebhookConfig>& out) {
  const YAML::Node node = root["webhook"];
  if (!node || node.IsNull()) return;
  if (!reader.check_map(node, "webhook", {"listen", "tls_cert_file", "tls_key_file"})) return;
  WebhookConfig webhook;
  if (auto listen = listen_address(reader, node, "listen")) {
    webhook.listen = *listen;
  } else if (!node["listen"]) {
    reader.fail(node, "webhook", "listen is required");
  }
  webhook.tls_cert_file = reader.text(node, "tls_cert_file", "webhook", false).value_or("");
  webhook.tls_key_file = reader.text(node, "tls_key_file", "webhook", false).value_or("");
  if (webhook.tls_cert_file.empty() != webhook.tls_key_file.empty()) {
    reader.fail(node, "webhook", "give both tls_cert_file and tls_key_file, or neither");
  }
  out = std::move(webhook);
}

void read_tenancy(FieldReader& reader, const YAML::Node& root, Tenancy& tenancy) {
  const YAML::Node node = root["tenancy"];
  if (!node || node.IsNull()) return;
  if (!reader.check_map(node, "tenancy", {"users", "user_annotation_namespaces"})) return;
  const YAML::Node users = node["users"];
  if (users && !users.IsNull()) {
    if (!users.IsMap()) {
      reader.fail(users, "tenancy",
                  "users must be a mapping of namespace to user, got " + describe(users));
    } else {
      for (const auto& entry : users) {
        const std::string name = entry.first.as<std::string>("");
        if (!entry.second.IsScalar() || entry.second.Scalar().empty()) {
          reader.fail(
              entry.second, "tenancy",
              "users." + name + " must be a non-empty user name, got " + describe(entry.second));
          continue;
        }
        tenancy.namespace_users[name] = entry.second.Scalar();
      }
    }
  }
  const auto listed = reader.sequence(node, "user_annotation_namespaces", "tenancy");
  for (std::size_t i = 0; i < listed.size(); ++i) {
    if (!listed[i].IsScalar() || listed[i].Scalar().empty()) {
      reader.fail(listed[i], "tenancy",
                  "user_annotation_namespaces[" + std::to_string(i) +
                      "] must be a namespace name, got " + describe(listed[i]));
      continue;
    }
    tenancy.user_annotation_namespaces.insert(listed[i].Scalar());
  }
}

void read_retention(FieldReader& reader, const YAML::Node& root, Retention& retention) {
  const YAML::Node node = root["retention"];
  if (!node || node.IsNull()) return;
  if (!reader.check_map(node, "retention", {"finished_seconds", "history_seconds"})) return;
  read_seconds(reader, node, "finished_seconds", "retention", 0, kMaxDurationSeconds,
               retention.finished_seconds);
  read_seconds(reader, node, "history_seconds", "retention", 0, kMaxDurationSeconds,
               retention.history_seconds);
  if (retention.history_seconds < retention.finished_seconds) {
    char text[96];
    std::snprintf(text, sizeof text, "history_seconds must be >= finished_seconds (%g), got %g",
                  retention.finished_seconds, retention.history_seconds);
    reader.fail(node["history_seconds"] ? node["history_seconds"] : node, "retention", text);
  }
}

void read_limits(FieldReader& reader, const YAML::Node& root, Limits& limits) {
  const YAML::Node node = root["limits"];
  if (!node || node.IsNull()) return;
  if (!reader.check_map(node, "limits",
                        {"unread_reply_bytes", "apiserver_reply_bytes",
                         "realtime_filter_body_bytes", "realtime_node_names"})) {
    return;
  }
  auto read = [&](const char* key, std::int64_t min, std::int64_t max, std::size_t& out) {
    out = static_cast<std::size_t>(reader.integer(node, key, "limits", min, max, false)
                                       .value_or(static_cast<std::int64_t>(out)));
  };
  read("unread_reply_bytes", 4096, kMaxBodyBytes, limits.unread_reply_bytes);
  read("apiserver_reply_bytes", 65536, kMaxBodyBytes, limits.apiserver_reply_bytes);
  read("realtime_filter_body_bytes", 1024, kMaxBodyBytes, limits.realtime_filter_body_bytes);
  read("realtime_node_names", 1, 1'000'000, limits.realtime_node_names);
}

void read_log(FieldReader& reader, const YAML::Node& root, LogOptions& log) {
  const YAML::Node node = root["log"];
  if (!node || node.IsNull()) return;
  if (!reader.check_map(node, "log", {"level", "format"})) return;
  read_choice(reader, node, "level", "log", parse_log_level, log.level);
  read_choice(reader, node, "format", "log", parse_log_format, log.format);
}

}  // namespace allox::extender::config_yaml
