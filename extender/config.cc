#include "extender/config.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

namespace allox::extender {
namespace {

// Reads one YAML mapping, refusing keys it does not know so a typo is an error, not a silent
// default.
class Fields {
 public:
  Fields(const YAML::Node& node, std::string where) : node_(node), where_(std::move(where)) {}

  Status check(const std::set<std::string>& known) const {
    std::string prefix = where_.empty() ? "" : where_ + ": ";
    if (!node_.IsMap()) return Error{prefix + "expected a mapping"};
    for (const auto& entry : node_) {
      std::string key = entry.first.as<std::string>();
      if (!known.count(key)) return Error{"unknown key '" + path(key) + "'"};
    }
    return OkStatus();
  }

  bool has(const std::string& key) const { return node_[key].IsDefined() && !node_[key].IsNull(); }
  YAML::Node get(const std::string& key) const { return node_[key]; }
  std::string path(const std::string& key) const {
    return where_.empty() ? key : where_ + "." + key;
  }

  template <class T>
  Status read(const std::string& key, T& out) const {
    if (!has(key)) return OkStatus();
    try {
      out = node_[key].as<T>();
    } catch (const YAML::Exception&) {
      return Error{path(key) + ": expected " + expected<T>() + ", got '" + scalar(key) + "'"};
    }
    return OkStatus();
  }

 private:
  template <class T>
  static const char* expected() {
    if constexpr (std::is_same_v<T, std::string>) return "a string";
    if constexpr (std::is_same_v<T, std::vector<std::string>>) return "a list of strings";
    if constexpr (std::is_same_v<T, std::map<std::string, std::string>>) {
      return "a mapping of strings";
    }
    if constexpr (std::is_floating_point_v<T>) return "a number";
    return "an integer";
  }
  std::string scalar(const std::string& key) const {
    const YAML::Node value = node_[key];
    return value.IsScalar() ? value.Scalar() : std::string("(a collection)");
  }

  YAML::Node node_;
  std::string where_;
};

Expected<std::string> read_file(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) return Error{what + ": cannot read '" + path + "'"};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  return s.substr(start);
}

Status check_device_name(const std::string& name, const std::string& where) {
  if (name.empty()) return Error{where + ": empty device type"};
  for (char c : name) {
    bool ok = std::islower(static_cast<unsigned char>(c)) ||
              std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    if (!ok) {
      return Error{where + ": device type '" + name +
                   "' may hold only lowercase letters, digits, '-', '_' and '.'"};
    }
  }
  return OkStatus();
}

#define ALLOX_TRY(expr)                                          \
  do {                                                           \
    if (auto status_ = (expr); !status_) return status_.error(); \
  } while (0)

Expected<ExtenderConfig> parse_root(const YAML::Node& root) {
  ExtenderConfig config;
  Fields top(root, "");
  ALLOX_TRY(top.check({"listen", "reports_listen", "database", "policy", "alpha",
                       "starvation_bound", "tick", "default_job_seconds", "max_body_bytes",
                       "http_threads", "admin_token", "admin_token_file", "devices", "cpu", "nodes",
                       "tenancy", "retention", "apiserver"}));

  std::string listen = config.listen_host + ":" + std::to_string(config.listen_port);
  ALLOX_TRY(top.read("listen", listen));
  if (auto s = set_listen_address(config, listen); !s) {
    return Error{top.path("listen") + ": " + s.message()};
  }

  if (top.has("reports_listen")) {
    std::string reports;
    ALLOX_TRY(top.read("reports_listen", reports));
    auto address = parse_listen_address(reports);
    if (!address) return Error{top.path("reports_listen") + ": " + address.message()};
    config.reports_listen = *address;
  }

  ALLOX_TRY(top.read("database", config.database));
  ALLOX_TRY(top.read("policy", config.policy));
  ALLOX_TRY(top.read("alpha", config.alpha));
  ALLOX_TRY(top.read("starvation_bound", config.starvation_bound));
  ALLOX_TRY(top.read("tick", config.tick));
  ALLOX_TRY(top.read("default_job_seconds", config.default_job_seconds));
  ALLOX_TRY(top.read("max_body_bytes", config.max_body_bytes));
  ALLOX_TRY(top.read("http_threads", config.http_threads));
  ALLOX_TRY(top.read("admin_token", config.admin_token));
  if (top.has("admin_token_file")) {
    std::string file;
    ALLOX_TRY(top.read("admin_token_file", file));
    auto token = read_file(file, top.path("admin_token_file"));
    if (!token) return token.error();
    config.admin_token = trim(*token);
  }
  if (!(config.alpha > 0 && config.alpha <= 1)) {
    return Error{top.path("alpha") + ": must be in (0, 1]"};
  }
  if (!(config.starvation_bound > 0)) return Error{top.path("starvation_bound") + ": must be > 0"};
  if (!(config.tick > 0)) return Error{top.path("tick") + ": must be > 0"};
  if (!(config.default_job_seconds > 0)) {
    return Error{top.path("default_job_seconds") + ": must be > 0"};
  }
  if (config.http_threads < 1 || config.http_threads > 256) {
    return Error{top.path("http_threads") + ": must be in 1..256"};
  }
  if (config.max_body_bytes < 1024) return Error{top.path("max_body_bytes") + ": must be >= 1024"};
  if (config.database.empty()) return Error{top.path("database") + ": must not be empty"};

  if (top.has("devices")) {
    YAML::Node devices = top.get("devices");
    if (!devices.IsSequence()) return Error{top.path("devices") + ": expected a list"};
    for (std::size_t i = 0; i < devices.size(); ++i) {
      Fields entry(devices[i], top.path("devices") + "[" + std::to_string(i) + "]");
      ALLOX_TRY(entry.check({"resource", "device"}));
      DeviceMapping::Resource resource;
      ALLOX_TRY(entry.read("resource", resource.resource));
      ALLOX_TRY(entry.read("device", resource.device));
      if (resource.resource.empty()) return Error{entry.path("resource") + ": missing"};
      ALLOX_TRY(check_device_name(resource.device, entry.path("device")));
      config.devices.resources.push_back(std::move(resource));
    }
  } else {
    config.devices.resources.push_back({"nvidia.com/gpu", "gpu"});
  }
  if (top.has("cpu")) {
    Fields cpu(top.get("cpu"), top.path("cpu"));
    ALLOX_TRY(cpu.check({"device", "cores_per_machine"}));
    ALLOX_TRY(cpu.read("device", config.devices.cpu_device));
    ALLOX_TRY(cpu.read("cores_per_machine", config.devices.cores_per_machine));
    ALLOX_TRY(check_device_name(config.devices.cpu_device, cpu.path("device")));
    if (!(config.devices.cores_per_machine > 0)) {
      return Error{cpu.path("cores_per_machine") + ": must be > 0"};
    }
  }

  if (top.has("nodes")) {
    YAML::Node nodes = top.get("nodes");
    if (!nodes.IsSequence()) return Error{top.path("nodes") + ": expected a list"};
    std::set<std::string> seen;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      Fields entry(nodes[i], top.path("nodes") + "[" + std::to_string(i) + "]");
      ALLOX_TRY(entry.check({"name", "machines"}));
      NodeInventory node;
      ALLOX_TRY(entry.read("name", node.name));
      if (node.name.empty()) return Error{entry.path("name") + ": missing"};
      if (!seen.insert(node.name).second) {
        return Error{entry.path("name") + ": duplicate node '" + node.name + "'"};
      }
      YAML::Node machines = entry.get("machines");
      if (!machines.IsMap()) return Error{entry.path("machines") + ": expected a mapping"};
      for (const auto& m : machines) {
        std::string device = m.first.as<std::string>();
        std::string where = entry.path("machines") + "." + device;
        ALLOX_TRY(check_device_name(device, where));
        int count = 0;
        try {
          count = m.second.as<int>();
        } catch (const YAML::Exception&) {
          return Error{where + ": expected a machine count"};
        }
        if (count < 0) return Error{where + ": must be >= 0"};
        node.machines[device] = count;
      }
      config.nodes.push_back(std::move(node));
    }
  }

  // Tenancy and retention (issue 11): who is charged, how long finished jobs are kept.
  if (top.has("tenancy")) {
    Fields tenancy(top.get("tenancy"), top.path("tenancy"));
    ALLOX_TRY(tenancy.check({"users", "user_annotation_namespaces"}));
    ALLOX_TRY(tenancy.read("users", config.tenancy.namespace_users));
    std::vector<std::string> listed;
    ALLOX_TRY(tenancy.read("user_annotation_namespaces", listed));
    config.tenancy.user_annotation_namespaces.insert(listed.begin(), listed.end());
  }
  if (top.has("retention")) {
    Fields retention(top.get("retention"), top.path("retention"));
    ALLOX_TRY(retention.check({"finished_seconds", "history_seconds"}));
    ALLOX_TRY(retention.read("finished_seconds", config.retention.finished_seconds));
    ALLOX_TRY(retention.read("history_seconds", config.retention.history_seconds));
    if (!(config.retention.finished_seconds >= 0)) {
      return Error{retention.path("finished_seconds") + ": must be >= 0"};
    }
    if (!(config.retention.history_seconds >= config.retention.finished_seconds)) {
      return Error{retention.path("history_seconds") + ": must be >= finished_seconds"};
    }
  }

  if (top.has("apiserver")) {
    Fields api(top.get("apiserver"), top.path("apiserver"));
    ALLOX_TRY(api.check({"url", "token", "token_file", "ca_file"}));
    ApiServerConfig server;
    ALLOX_TRY(api.read("url", server.url));
    ALLOX_TRY(api.read("token", server.token));
    ALLOX_TRY(api.read("ca_file", server.ca_file));
    if (server.url.rfind("http://", 0) != 0 && server.url.rfind("https://", 0) != 0) {
      return Error{api.path("url") + ": expected an http:// or https:// URL"};
    }
    while (!server.url.empty() && server.url.back() == '/') server.url.pop_back();
    if (api.has("token_file")) {
      std::string file;
      ALLOX_TRY(api.read("token_file", file));
      auto token = read_file(file, api.path("token_file"));
      if (!token) return token.error();
      server.token = trim(*token);
    }
    config.apiserver = std::move(server);
  }
  return config;
}

#undef ALLOX_TRY

}  // namespace

std::optional<DeviceType> DeviceMapping::device_for(const std::string& resource) const {
  for (const Resource& r : resources) {
    if (r.resource == resource) return r.device;
  }
  return std::nullopt;
}

std::string DeviceMapping::resource_for(const DeviceType& device) const {
  for (const Resource& r : resources) {
    if (r.device == device) return r.resource;
  }
  return device == cpu_device ? std::string("cpu") : device;
}

Expected<ListenAddress> parse_listen_address(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Error{"expected host:port, got '" + address + "'"};
  }
  std::string port_text = address.substr(colon + 1);
  int port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 0 || port > 65535) {
    return Error{"bad port in '" + address + "'"};
  }
  return ListenAddress{address.substr(0, colon), port};
}

Status set_listen_address(ExtenderConfig& config, const std::string& address) {
  auto parsed = parse_listen_address(address);
  if (!parsed) return parsed.error();
  config.listen_host = parsed->host;
  config.listen_port = parsed->port;
  return OkStatus();
}

Expected<ExtenderConfig> parse_extender_config(const std::string& yaml, const std::string& source) {
  try {
    YAML::Node root = YAML::Load(yaml);
    if (root.IsNull()) return ExtenderConfig{};
    auto config = parse_root(root);
    if (!config) return Error{source + ": " + config.message()};
    return config;
  } catch (const YAML::Exception& e) {
    return Error{source + ": " + e.what()};
  }
}

Expected<ExtenderConfig> load_extender_config(const std::string& path) {
  auto text = read_file(path, "config");
  if (!text) return text.error();
  return parse_extender_config(*text, path);
}

}  // namespace allox::extender
