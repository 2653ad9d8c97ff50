#include "alloxd/config.h"

#include <charconv>
#include <cstdio>
#include <iterator>
#include <set>

#include "core/input_file.h"
#include "core/yaml_fields.h"

namespace allox::extender {
namespace {

// A token file holds one bearer token (a service-account JWT is ~1 KiB); anything far larger is
// a wrong path, refused before it is read.
constexpr std::size_t kMaxTokenFileBytes = 64u << 10;
constexpr std::int64_t kMaxBodyBytes = std::int64_t{1} << 30;
constexpr std::int64_t kMaxMachinesPerNode = 100000;
// The top-level keys: the ones read_root allows, and how an alloxd config is told from some other
// file (not_a_config).
constexpr std::string_view kRootKeys[] = {
    "listen", "reports_listen", "database", "policy", "alpha", "starvation_bound", "batch_rounds",
    "tick", "default_job_seconds", "fairness_window", "max_body_bytes", "http_threads",
    "http_thread_slice_us", "background_threads", "request_threads", "admin_token",
    "admin_token_file", "devices", "cpu", "nodes", "tenancy", "retention", "log", "apiserver",
    "scheduler_name", "webhook", "limits"};

// Scheduling rounds at most 20 times a second, at least once an hour.
constexpr double kMinTickSeconds = 0.05;
constexpr double kMaxTickSeconds = 3600;
// Any other duration (starvation bound, windows, retention): at most ten years.
constexpr double kMaxDurationSeconds = 10.0 * 365 * 24 * 3600;

// Printable ASCII without spaces: what an Authorization header carries after "Bearer ".
bool is_token(std::string_view token) {
  for (char c : token) {
    if (c <= ' ' || c >= 0x7f) return false;
  }
  return !token.empty();
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  return s.substr(start);
}

// The trimmed contents of the file named under `key`, if present and readable; records why not.
std::optional<std::string> token_file(FieldReader& reader, const YAML::Node& map, const char* key,
                                      std::string_view subject) {
  const auto path = reader.text(map, key, subject, false);
  if (!path) return std::nullopt;
  auto text = read_regular_file(*path, kMaxTokenFileBytes);
  if (!text) {
    reader.fail(map[key], subject,
                std::string(key) + " must name a readable token file: " + text.message());
    return std::nullopt;
  }
  std::string token = trim(*text);
  if (token.empty()) {
    reader.fail(map[key], subject,
                std::string(key) + " must name a file holding a token, got \"" + *path +
                    "\", which is empty");
    return std::nullopt;
  }
  if (!is_token(token)) {
    // The file's contents are a secret (or not a token at all): never quoted.
    reader.fail(map[key], subject,
                std::string(key) + " must name a file holding one token, got \"" + *path +
                    "\", which holds spaces or control characters");
    return std::nullopt;
  }
  return token;
}

// A token given inline: non-empty, no whitespace or control characters (a bearer token is
// compared with the Authorization header byte for byte, so " " or "s3cret " could never match
// what a client sends, or would match a padded header). Its value is never quoted.
std::optional<std::string> inline_token(FieldReader& reader, const YAML::Node& map,
                                        const char* key, std::string_view subject) {
  const YAML::Node node = map[key];
  if (!node || node.IsNull()) return std::nullopt;
  if (!node.IsScalar() || node.Scalar().empty()) {
    reader.fail(node, subject, std::string(key) + " must be a non-empty token");
    return std::nullopt;
  }
  if (trim(node.Scalar()).empty()) {
    reader.fail(node, subject, std::string(key) + " must be a token, got only whitespace");
    return std::nullopt;
  }
  if (!is_token(node.Scalar())) {
    reader.fail(node, subject,
                std::string(key) + " must be a token without spaces or control characters");
    return std::nullopt;
  }
  return node.Scalar();
}

// What is wrong with an http(s):// URL's authority, if anything: it must name a host (and a
// port from 1 to 65535 if it gives one); no spaces or control characters anywhere.
std::optional<std::string> url_problem(const std::string& url) {
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
      return std::string("it holds spaces or control characters");
    }
  }
  const std::size_t start = url.find("://") + 3;
  const std::size_t end = url.find_first_of("/?#", start);
  const std::string authority =
      url.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (authority.find('@') != std::string::npos) {
    return std::string("credentials belong in token or token_file, not in the URL");
  }
  // host, [IPv6], host:port or [IPv6]:port
  if (authority.empty()) return std::string("no host");
  std::string host = authority;
  std::optional<std::string> port;
  const bool bracketed = host.front() == '[';
  const std::size_t close = bracketed ? host.find(']') : std::string::npos;
  if (bracketed && close == std::string::npos) {
    return std::string("an IPv6 host needs its closing ']'");
  }
  const std::size_t colon = host.find(':', close == std::string::npos ? 0 : close);
  if (colon != std::string::npos) {
    if (close != std::string::npos && colon != close + 1) {
      return std::string("junk after the IPv6 host");
    }
    port = host.substr(colon + 1);
    host.resize(colon);
  } else if (close != std::string::npos && close + 1 != host.size()) {
    return std::string("junk after the IPv6 host");
  }
  if (host.empty() || host == "[]") return std::string("no host");
  if (port && port->empty()) return std::string("an empty port");
  if (port) {
    int number = 0;
    auto [at, ec] = std::from_chars(port->data(), port->data() + port->size(), number);
    if (ec != std::errc() || at != port->data() + port->size() || number < 1 || number > 65535) {
      return std::string("the port must be from 1 to 65535");
    }
  }
  return std::nullopt;
}

// A duration in seconds under `key` within [min, max], into `out` (unchanged when absent).
// Bounded both ways: `tick: 1e-300` would plan hundreds of times a second, and a duration near
// DBL_MAX overflows to infinity in the sums it enters.
void read_seconds(FieldReader& reader, const YAML::Node& map, const char* key,
                  std::string_view subject, double min, double max, double& out) {
  const YAML::Node node = map[key];
  if (!node || node.IsNull()) return;
  char range[96];
  std::snprintf(range, sizeof range, "a number of seconds from %g to %g", min, max);
  const auto value = reader.number_at(node, subject, key, range, false);
  if (!value) return;
  if (*value < min || *value > max) {
    reader.fail(node, subject, std::string(key) + " must be " + range + ", got " + describe(node));
    return;
  }
  out = *value;
}

std::optional<ListenAddress> listen_address(FieldReader& reader, const YAML::Node& map,
                                            const char* key) {
  const auto text = reader.text(map, key, "", false);
  if (!text) return std::nullopt;
  auto address = parse_listen_address(*text);
  if (!address) {
    reader.fail(map[key], "", std::string(key) + " must be " + address.message());
    return std::nullopt;
  }
  return *address;
}

void read_devices(FieldReader& reader, const YAML::Node& root, DeviceMapping& devices) {
  if (!root["devices"] || root["devices"].IsNull()) return;  // the default mapping stays
  devices.resources.clear();
  const auto entries = reader.sequence(root, "devices", "");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const YAML::Node& entry = entries[i];
    const std::string subject = "devices[" + std::to_string(i) + "]";
    if (!reader.check_map(entry, subject, {"resource", "device"})) continue;
    const auto resource = reader.text(entry, "resource", subject, true);
    const auto device = reader.text(entry, "device", subject, true);
    if (!resource || !device || !reader.device_name(entry["device"], subject, "device", *device)) {
      continue;
    }
    devices.resources.push_back({*resource, *device});
  }
}

void read_cpu(FieldReader& reader, const YAML::Node& root, DeviceMapping& devices) {
  const YAML::Node cpu = root["cpu"];
  if (!cpu || cpu.IsNull()) return;
  if (!reader.check_map(cpu, "cpu", {"device", "cores_per_machine"})) return;
  if (const auto device = reader.text(cpu, "device", "cpu", false)) {
    if (reader.device_name(cpu["device"], "cpu", "device", *device)) devices.cpu_device = *device;
  }
  if (const auto cores = reader.positive(cpu, "cores_per_machine", "cpu", "cores", false)) {
    devices.cores_per_machine = *cores;
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

// The gate admission webhook's listener (POST /admission/gate), HTTPS with a cert and key.
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

// Tenancy: who is charged for a pod. users maps namespace -> user;
// user_annotation_namespaces lists the namespaces whose pods may name their user.
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

// Retention: how long a finished job stays in memory and in the SQLite history.
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

// What one client, one request or the API server may cost (config.h Limits).
void read_limits(FieldReader& reader, const YAML::Node& root, Limits& limits) {
  const YAML::Node node = root["limits"];
  if (!node || node.IsNull()) return;
  if (!reader.check_map(node, "limits",
                        {"unread_reply_bytes", "apiserver_reply_bytes", "realtime_filter_body_bytes",
                         "realtime_node_names"})) {
    return;
  }
  auto read = [&](const char* key, std::int64_t min, std::int64_t max, std::size_t& out) {
    out = static_cast<std::size_t>(
        reader.integer(node, key, "limits", min, max, false).value_or(static_cast<std::int64_t>(out)));
  };
  read("unread_reply_bytes", 4096, kMaxBodyBytes, limits.unread_reply_bytes);
  read("apiserver_reply_bytes", 65536, kMaxBodyBytes, limits.apiserver_reply_bytes);
  read("realtime_filter_body_bytes", 1024, kMaxBodyBytes, limits.realtime_filter_body_bytes);
  read("realtime_node_names", 1, 1'000'000, limits.realtime_node_names);
}

// One of a fixed set of names under `key`, read with `parse` (core/log.h's parse_log_level ...),
// whose error completes "must be ...".
template <class T, class Parse>
void read_choice(FieldReader& reader, const YAML::Node& map, const char* key,
                 std::string_view subject, Parse parse, T& out) {
  const auto text = reader.text(map, key, subject, false);
  if (!text) return;
  auto parsed = parse(*text);
  if (parsed) {
    out = *parsed;
  } else {
    reader.fail(map[key], subject,
                std::string(key) + " must be " + parsed.message() + ", got " + describe(map[key]));
  }
}

// A setting of two names under `key` ("batch or idle"): `out` is true for `yes`, false for the
// other, unchanged when the key is absent.
void read_either(FieldReader& reader, const YAML::Node& map, const char* key, const char* first,
                 const char* second, const char* yes, bool& out) {
  read_choice(
      reader, map, key, "",
      [&](const std::string& text) -> Expected<bool> {
        if (text == first || text == second) return text == yes;
        return Error{std::string(first) + " or " + second};
      },
      out);
}

// log: {level: info, format: text} (core/log.h).
void read_log(FieldReader& reader, const YAML::Node& root, LogOptions& log) {
  const YAML::Node node = root["log"];
  if (!node || node.IsNull()) return;
  if (!reader.check_map(node, "log", {"level", "format"})) return;
  read_choice(reader, node, "level", "log", parse_log_level, log.level);
  read_choice(reader, node, "format", "log", parse_log_format, log.format);
}

void read_root(FieldReader& reader, const YAML::Node& root, ExtenderConfig& config) {
  if (!reader.check_map(root, "", kRootKeys)) {
    return;
  }
  if (auto listen = listen_address(reader, root, "listen")) {
    config.listen_host = listen->host;
    config.listen_port = listen->port;
  }
  config.reports_listen = listen_address(reader, root, "reports_listen");
  config.database = reader.text(root, "database", "", false).value_or(config.database);
  config.policy = reader.text(root, "policy", "", false).value_or(config.policy);
  if (root["alpha"] && !root["alpha"].IsNull()) {
    const auto alpha = reader.number_at(root["alpha"], "", "alpha", "a number in (0, 1]", true);
    if (alpha && *alpha > 1) {
      reader.fail(root["alpha"], "",
                  "alpha must be a number in (0, 1], got " + describe(root["alpha"]));
    } else if (alpha) {
      config.alpha = *alpha;
    }
  }
  read_seconds(reader, root, "starvation_bound", "", 1, kMaxDurationSeconds,
               config.starvation_bound);
  read_either(reader, root, "batch_rounds", "true", "false", "true", config.batch_rounds);
  read_seconds(reader, root, "tick", "", kMinTickSeconds, kMaxTickSeconds, config.tick);
  read_seconds(reader, root, "default_job_seconds", "", kMinJobSeconds, kMaxJobSeconds,
               config.default_job_seconds);
  read_seconds(reader, root, "fairness_window", "", 1, kMaxDurationSeconds,
               config.fairness_window);
  config.max_body_bytes = static_cast<std::size_t>(
      reader.integer(root, "max_body_bytes", "", 1024, kMaxBodyBytes, false)
          .value_or(static_cast<std::int64_t>(config.max_body_bytes)));
  config.http_threads = static_cast<int>(
      reader.integer(root, "http_threads", "", 1, 256, false).value_or(config.http_threads));
  config.http_thread_slice_us =
      static_cast<int>(reader.integer(root, "http_thread_slice_us", "", 0, 100'000, false)
                           .value_or(config.http_thread_slice_us));
  read_either(reader, root, "background_threads", "batch", "idle", "idle",
              config.idle_background_threads);
  read_choice(reader, root, "request_threads", "", parse_request_threads, config.request_threads);
  config.admin_token = inline_token(reader, root, "admin_token", "").value_or("");
  if (auto token = token_file(reader, root, "admin_token_file", "")) config.admin_token = *token;
  read_devices(reader, root, config.devices);
  read_cpu(reader, root, config.devices);
  read_nodes(reader, root, config.nodes);
  read_tenancy(reader, root, config.tenancy);
  read_retention(reader, root, config.retention);
  read_log(reader, root, config.log);
  read_apiserver(reader, root, config.apiserver);
  // allox's pods, by spec.schedulerName (the pods the API-server watch lists).
  config.scheduler_name = reader.text(root, "scheduler_name", "", false).value_or("");
  if (config.apiserver && config.scheduler_name.empty()) config.scheduler_name = "allox-scheduler";
  read_webhook(reader, root, config.webhook);
  read_limits(reader, root, config.limits);
  // GET /v1/fairness reads the jobs held in memory; a job finished inside the window must still
  // be there, or the windowed share would forget it.
  if (config.fairness_window > config.retention.finished_seconds) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "fairness_window must be <= retention.finished_seconds (%g): the windowed share "
                  "counts the jobs kept in memory, got %g",
                  config.retention.finished_seconds, config.fairness_window);
    reader.fail(root["fairness_window"] ? root["fairness_window"] : root, "", text);
  }
}

// A document that is not an alloxd config at all (the path names some other file, perhaps a
// secret): refused without quoting a byte of it. One whose top level is a mapping holding at
// least one of alloxd's keys is a config, and its problems are reported field by field.
std::optional<Error> not_a_config(const YAML::Node& root, const std::string& source) {
  const char* what = nullptr;
  if (root.IsSequence()) {
    what = "a list";
  } else if (!root.IsMap()) {
    what = "plain text";
  } else if (root.size() == 0) {
    return std::nullopt;  // {}: every default, said on purpose
  } else {
    for (const auto& entry : root) {
      const std::string key = entry.first.as<std::string>("");
      for (std::string_view known : kRootKeys) {
        if (key == known) return std::nullopt;
      }
    }
    what = "a mapping none of whose keys is an alloxd setting";
  }
  std::string keys;
  for (std::string_view known : kRootKeys) {
    keys += std::string(keys.empty() ? "" : ", ") + std::string(known);
  }
  return Error{source + ":1: not an alloxd config: expected a mapping of settings (" + keys +
               "), got " + what + " (its contents are not shown)"};
}

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
  const std::string expected = "host:port with a port from 0 to 65535, got \"" + address + "\"";
  const auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) return Error{expected};
  const std::string port_text = address.substr(colon + 1);
  int port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 0 || port > 65535) {
    return Error{expected};
  }
  return ListenAddress{address.substr(0, colon), port};
}

Status set_listen_address(ExtenderConfig& config, const std::string& address) {
  auto parsed = parse_listen_address(address);
  if (!parsed) return Error{"expected " + parsed.message()};
  config.listen_host = parsed->host;
  config.listen_port = parsed->port;
  return OkStatus();
}

Expected<ExtenderConfig> parse_extender_config(const std::string& yaml, const std::string& source) {
  auto root = parse_yaml(yaml, source);
  if (!root) return root.error();
  ExtenderConfig config;
  if (root->IsNull()) {
    // An empty file is far more often a mistake (a wrong mount, a truncated ConfigMap) than a
    // wish for every default; `{}` says that wish.
    return Error{source +
                 ":1: the config is empty; give at least one setting, or {} to start on "
                 "every default"};
  }
  if (auto refused = not_a_config(*root, source)) return *refused;
  FieldReader reader(source);
  read_root(reader, *root, config);
  if (!reader.ok()) return reader.error();
  return config;
}

Expected<ExtenderConfig> load_extender_config(const std::string& path) {
  auto text = read_regular_file(path);
  if (!text) return text.error();
  return parse_extender_config(*text, path);
}

}  // namespace allox::extender
