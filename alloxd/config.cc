#include "alloxd/config.h"

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <charconv>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "alloxd/config_sections.h"
#include "core/input_file.h"
#include "core/yaml_fields.h"
#include "fairness/policy.h"

namespace allox::extender {
namespace {

using namespace config_yaml;

// The top-level keys: the ones read_root allows, and how an alloxd config is told from some other
// file (not_a_config).
constexpr std::string_view kRootKeys[] = {"listen",
                                          "reports_listen",
                                          "database",
                                          "policy",
                                          "alpha",
                                          "starvation_bound",
                                          "batch_rounds",
                                          "tick",
                                          "default_job_seconds",
                                          "fairness_window",
                                          "max_body_bytes",
                                          "http_threads",
                                          "request_threads",
                                          "admin_token",
                                          "admin_token_file",
                                          "devices",
                                          "throughputs",
                                          "cpu",
                                          "nodes",
                                          "tenancy",
                                          "retention",
                                          "log",
                                          "apiserver",
                                          "scheduler_name",
                                          "webhook",
                                          "limits"};

// Scheduling rounds at most 20 times a second, at least once an hour.
constexpr double kMinTickSeconds = 0.05;
constexpr double kMaxTickSeconds = 3600;

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
  if (const std::vector<std::string> known = policy_names();
      std::find(known.begin(), known.end(), config.policy) == known.end()) {
    std::string names;
    for (const std::string& name : known) names += (names.empty() ? "" : ", ") + name;
    reader.fail(root["policy"] ? root["policy"] : root, "",
                "policy must be one of " + names + ", got " + describe(root["policy"]));
  }
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
  read_seconds(reader, root, "fairness_window", "", 1, kMaxDurationSeconds, config.fairness_window);
  config.max_body_bytes = static_cast<std::size_t>(
      reader.integer(root, "max_body_bytes", "", 1024, kMaxBodyBytes, false)
          .value_or(static_cast<std::int64_t>(config.max_body_bytes)));
  config.http_threads = static_cast<int>(
      reader.integer(root, "http_threads", "", 1, 256, false).value_or(config.http_threads));
  read_choice(reader, root, "request_threads", "", parse_request_threads, config.request_threads);
  config.admin_token = inline_token(reader, root, "admin_token", "").value_or("");
  if (auto token = token_file(reader, root, "admin_token_file", "")) config.admin_token = *token;
  read_devices(reader, root, config.devices);
  read_cpu(reader, root, config.devices);
  check_device_types(reader, root, config.devices);
  read_throughputs(reader, root, config.throughputs);
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
  // Two listeners on one address: the second cannot listen, and alloxd would stop at start-up.
  const ListenAddress extender{config.listen_host, config.listen_port};
  auto same = [&](const ListenAddress& other) {
    return other.port != 0 && other.port == extender.port && other.host == extender.host;
  };
  if (config.reports_listen && same(*config.reports_listen)) {
    reader.fail(root["reports_listen"], "",
                "reports_listen must differ from listen, got the same "
                "address");
  }
  if (config.webhook && same(config.webhook->listen)) {
    reader.fail(root["webhook"], "webhook",
                "listen must differ from the root listen, got the "
                "same address");
  }
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
  if (const Resource* r = resource_of(device)) return r->resource;
  return device == cpu_device ? std::string("cpu") : device;
}

const DeviceMapping::Resource* DeviceMapping::resource_of(const DeviceType& device) const {
  for (const Resource& r : resources) {
    if (r.device == device) return &r;
  }
  for (const Resource& r : resources) {
    for (const NodeLabelRule& rule : r.node_labels) {
      if (rule.device == device) return &r;
    }
  }
  return nullptr;
}

Expected<std::optional<DeviceType>> DeviceMapping::node_device(
    const std::string& resource, const std::map<std::string, std::string>& labels) const {
  for (const Resource& r : resources) {
    if (r.resource != resource) continue;
    const NodeLabelRule* matched = nullptr;
    for (const NodeLabelRule& rule : r.node_labels) {
      auto label = labels.find(rule.label);
      if (label == labels.end() || label->second != rule.value) continue;
      if (matched != nullptr && matched->device != rule.device) {
        return Error{resource + ": labels " + matched->label + "=" + matched->value + " and " +
                     rule.label + "=" + rule.value + " give two device types (" + matched->device +
                     ", " + rule.device + ")"};
      }
      matched = &rule;
    }
    return std::optional<DeviceType>(matched != nullptr ? matched->device : r.device);
  }
  return std::optional<DeviceType>();
}

std::vector<DeviceType> DeviceMapping::interchangeable(const DeviceType& device) const {
  std::vector<DeviceType> out{device};
  for (const Resource& r : resources) {
    if (r.device != device) continue;
    for (const NodeLabelRule& rule : r.node_labels) {
      if (std::find(out.begin(), out.end(), rule.device) == out.end()) out.push_back(rule.device);
    }
    break;
  }
  return out;
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
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);  // [::1]:8888
  }
  boost::system::error_code not_ip;
  boost::asio::ip::make_address(host, not_ip);
  if (not_ip) {
    return Error{
        "host:port whose host is an IP address (alloxd resolves no names; 127.0.0.1, "
        "0.0.0.0, [::1]), got \"" +
        address + "\""};
  }
  return ListenAddress{host, port};
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
