// Typed, validated reads of YAML (or JSON) input, with errors a person can act on.
//
// Every loader of a user file (cluster, jobs, config) reads fields through a FieldReader, which
// records each problem as "<source>:<line>: <subject>: <message>", e.g.
//   jobs.yaml:14: job "j7": time.gpu must be a positive number of seconds, got -3
// and lets the loader go on to report the next problem. Lines are 1-based. JSON goes through the
// same parser (yaml-cpp reads JSON as YAML), so both formats give identical messages.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace allox {

// Parses `text` as one YAML document; a syntax error names the line. A key given twice in one
// mapping is an error too ("f.yaml:9: duplicate key \"tick\" (first on line 3)"), every one.
Expected<YAML::Node> parse_yaml(const std::string& text, const std::string& source);

class FieldReader {
 public:
  explicit FieldReader(std::string source) : source_(std::move(source)) {}

  // Records "<source>:<line of at>: <subject>: <message>" (subject may be empty).
  void fail(const YAML::Node& at, std::string_view subject, std::string_view message);
  bool ok() const { return problems_.empty(); }
  // All recorded problems, one per line, in input order.
  Error error() const;

  // True when `node` is a mapping whose keys are all in `allowed`; records what is wrong.
  bool check_map(const YAML::Node& node, std::string_view subject,
                 std::initializer_list<std::string_view> allowed);
  bool check_map(const YAML::Node& node, std::string_view subject,
                 std::span<const std::string_view> allowed);
  // A sequence under `key` (absent: empty). Records an error if present but not a sequence.
  std::vector<YAML::Node> sequence(const YAML::Node& map, const char* key,
                                   std::string_view subject);

  std::optional<std::string> text(const YAML::Node& map, const char* key, std::string_view subject,
                                  bool required);
  // A finite number > 0 (positive) or >= 0; `unit` completes "must be a ... number of <unit>".
  std::optional<double> positive(const YAML::Node& map, const char* key, std::string_view subject,
                                 std::string_view unit, bool required);
  std::optional<double> non_negative(const YAML::Node& map, const char* key,
                                     std::string_view subject, std::string_view unit,
                                     bool required);
  // A time in seconds, >= 0 (> 0 when `positive`) and at most kMaxInputSeconds (core/model.h).
  std::optional<double> seconds(const YAML::Node& map, const char* key, std::string_view subject,
                                bool positive, bool required);
  std::optional<double> seconds_at(const YAML::Node& node, std::string_view subject,
                                   std::string_view field, bool positive);
  // An integer in [min, max].
  std::optional<std::int64_t> integer(const YAML::Node& map, const char* key,
                                      std::string_view subject, std::int64_t min, std::int64_t max,
                                      bool required);
  // An integer in [min, max] read from `node` itself, with the wording of `field` for errors
  // (for values under keys chosen by the user, e.g. "machines.gpu").
  std::optional<std::int64_t> integer_at(const YAML::Node& node, std::string_view subject,
                                         std::string_view field, std::int64_t min,
                                         std::int64_t max);

  // Checks the spelling of a device type name; records an error naming `field`.
  bool device_name(const YAML::Node& at, std::string_view subject, std::string_view field,
                   const std::string& name);

  // Reads a number with the wording of `field` for errors ("time.gpu"), at most `max`.
  std::optional<double> number_at(const YAML::Node& node, std::string_view subject,
                                  std::string_view field, std::string_view requirement,
                                  bool strictly_positive,
                                  double max = std::numeric_limits<double>::max());

 private:
  std::optional<double> bounded_number(const YAML::Node& map, const char* key,
                                       std::string_view subject, std::string_view requirement,
                                       bool strictly_positive, bool required);

  std::string source_;
  std::vector<std::string> problems_;
};

// How a scalar looks in an error message: its text, or "a list" / "a mapping" / "null".
std::string describe(const YAML::Node& node);

}  // namespace allox
