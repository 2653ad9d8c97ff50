// How alloxd.yaml is read below its top level (config.cc reads the root): the readers of its
// sections, each into its part of ExtenderConfig, and the readers of fields that several
// sections share. Every reader records each problem it finds in the FieldReader, as
// `file:line: subject: field must be ..., got X`, and leaves its output unchanged then.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "alloxd/config.h"
#include "core/yaml_fields.h"

namespace allox::extender::config_yaml {

// A request body (max_body_bytes, limits): at most 1 GiB.
inline constexpr std::int64_t kMaxBodyBytes = std::int64_t{1} << 30;
// A duration other than the tick (starvation bound, windows, retention): at most ten years.
inline constexpr double kMaxDurationSeconds = 10.0 * 365 * 24 * 3600;

// Fields (config_fields.cc).

// The trimmed contents of the file named under `key`, if present and readable; records why not.
std::optional<std::string> token_file(FieldReader& reader, const YAML::Node& map, const char* key,
                                      std::string_view subject);

// A token given inline: non-empty, no whitespace or control characters (a bearer token is
// compared with the Authorization header byte for byte, so " " or "s3cret " could never match
// what a client sends, or would match a padded header). Its value is never quoted.
std::optional<std::string> inline_token(FieldReader& reader, const YAML::Node& map, const char* key,
                                        std::string_view subject);

// What is wrong with an http(s):// URL's authority, if anything: it must name a host (and a
// port from 1 to 65535 if it gives one); no spaces or control characters anywhere.
std::optional<std::string> url_problem(const std::string& url);

// A duration in seconds under `key` within [min, max], into `out` (unchanged when absent).
// Bounded both ways: `tick: 1e-300` would plan hundreds of times a second, and a duration near
// DBL_MAX overflows to infinity in the sums it enters.
void read_seconds(FieldReader& reader, const YAML::Node& map, const char* key,
                  std::string_view subject, double min, double max, double& out);

std::optional<ListenAddress> listen_address(FieldReader& reader, const YAML::Node& map,
                                            const char* key);

// A setting of two names under `key` ("batch or idle"): `out` is true for `yes`, false for the
// other, unchanged when the key is absent.
void read_either(FieldReader& reader, const YAML::Node& map, const char* key, const char* first,
                 const char* second, const char* yes, bool& out);

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

// Sections (config_sections.cc), each under its key of the root.

void read_devices(FieldReader& reader, const YAML::Node& root, DeviceMapping& devices);

void read_cpu(FieldReader& reader, const YAML::Node& root, DeviceMapping& devices);

// After devices and cpu: a type named by two things (a label rule's type that is a plain type,
// the CPU device or another resource's label type) is an error at the rule.
void check_device_types(FieldReader& reader, const YAML::Node& root, const DeviceMapping& devices);

// `throughputs`: a Gavel throughput file (profiler/throughput_table.h), loaded now.
void read_throughputs(FieldReader& reader, const YAML::Node& root,
                      std::shared_ptr<const ThroughputTable>& out);

void read_nodes(FieldReader& reader, const YAML::Node& root, std::vector<NodeInventory>& nodes);

void read_apiserver(FieldReader& reader, const YAML::Node& root,
                    std::optional<ApiServerConfig>& out);

// The gate admission webhook's listener (POST /admission/gate), HTTPS with a cert and key.
void read_webhook(FieldReader& reader, const YAML::Node& root, std::optional<WebhookConfig>& out);

// Tenancy: who is charged for a pod. users maps namespace -> user;
// user_annotation_namespaces lists the namespaces whose pods may name their user.
void read_tenancy(FieldReader& reader, const YAML::Node& root, Tenancy& tenancy);

// Retention: how long a finished job stays in memory and in the SQLite history.
void read_retention(FieldReader& reader, const YAML::Node& root, Retention& retention);

// What one client, one request or the API server may cost (config.h Limits).
void read_limits(FieldReader& reader, const YAML::Node& root, Limits& limits);

// log: {level: info, format: text} (core/log.h).
void read_log(FieldReader& reader, const YAML::Node& root, LogOptions& log);

}  // namespace allox::extender::config_yaml
