#include "core/yaml_fields.h"

#include <yaml-cpp/depthguard.h>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <unordered_map>
#include <vector>

#include "core/csv.h"
#include "core/model.h"
#include "core/utf8.h"

namespace allox {

namespace {

int line_of(const YAML::Node& node) {
  const int line = node.Mark().line;
  return line < 0 ? 1 : line + 1;
}

std::string join(std::span<const std::string_view> items) {
  std::string out;
  for (std::string_view item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

}  // namespace

// Every mapping in the document, at any depth, checked for a key given twice. yaml-cpp keeps
// both entries and lookups see the first, so a later line that seems to change a setting would
// silently not. An explicit stack: the document's depth is the input's to choose. An alias is
// walked again wherever it is used, as every reader of the document will walk it, so the walk
// stops past `max_nodes`: aliases of aliases ("billion laughs") would otherwise expand a few
// lines into more nodes than any computer visits.
std::string repeated_keys(const YAML::Node& root, const std::string& source,
                          std::size_t max_nodes) {
  std::vector<std::pair<int, std::string>> found;  // line, message
  std::vector<YAML::Node> pending = {root};
  std::size_t visited = 0;
  while (!pending.empty()) {
    const YAML::Node node = pending.back();
    pending.pop_back();
    if (++visited > max_nodes) {
      return source + ":" + std::to_string(line_of(node)) +
             ": aliases expand the document past " + std::to_string(max_nodes) +
             " nodes; write the repeated parts out or drop the aliases";
    }
    if (node.IsSequence()) {
      for (const YAML::Node& item : node) pending.push_back(item);
      continue;
    }
    if (!node.IsMap()) continue;
    std::unordered_map<std::string, int> first_line;
    for (const auto& entry : node) {
      pending.push_back(entry.second);
      if (!entry.first.IsScalar()) continue;
      const int line = line_of(entry.first);
      auto [at, added] = first_line.emplace(entry.first.Scalar(), line);
      if (added) continue;
      found.emplace_back(line, source + ":" + std::to_string(line) + ": duplicate key \"" +
                                   at->first + "\" (first on line " +
                                   std::to_string(at->second) + ")");
    }
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string problems;
  for (const auto& [line, message] : found) {
    if (!problems.empty()) problems += '\n';
    problems += message;
  }
  return problems;
}

Expected<YAML::Node> parse_yaml(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    return Error{source + ":" + std::to_string(e.mark.line + 1) +
                 ": not valid YAML or JSON: lists or mappings nested over " +
                 std::to_string(e.depth() - 1) + " levels deep"};
  } catch (const YAML::Exception& e) {
    return Error{source + ":" + std::to_string(e.mark.line + 1) +
                 ": not valid YAML or JSON: " + e.msg};
  }
  // A document without aliases has at most about one node per byte of its text.
  const std::size_t max_nodes = 2 * text.size() + 1024;
  if (std::string repeated = repeated_keys(root, source, max_nodes); !repeated.empty()) {
    return Error{repeated};
  }
  return root;
}

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar:
      // Numbers read as themselves ("got -3"); anything else is quoted ("got \"fast\"").
      if (parse_decimal(node.Scalar())) return node.Scalar();
      return "\"" + node.Scalar() + "\"";
    default:
      return "nothing";
  }
}

void FieldReader::fail(const YAML::Node& at, std::string_view subject, std::string_view message) {
  std::string line = source_ + ":" + std::to_string(line_of(at)) + ": ";
  if (!subject.empty()) line.append(subject).append(": ");
  line.append(message);
  problems_.push_back(std::move(line));
}

Error FieldReader::error() const {
  std::string all;
  for (const std::string& p : problems_) {
    if (!all.empty()) all += '\n';
    all += p;
  }
  return Error{all};
}

bool FieldReader::check_map(const YAML::Node& node, std::string_view subject,
                            std::initializer_list<std::string_view> allowed) {
  return check_map(node, subject, std::span<const std::string_view>(allowed.begin(), allowed.size()));
}

bool FieldReader::check_map(const YAML::Node& node, std::string_view subject,
                            std::span<const std::string_view> allowed) {
  if (!node.IsMap()) {
    fail(node, subject,
         "expected a mapping with keys " + join(allowed) + ", got " + describe(node));
    return false;
  }
  bool clean = true;
  for (const auto& entry : node) {
    const std::string key = entry.first.as<std::string>("");
    bool known = false;
    for (std::string_view a : allowed) known = known || key == a;
    if (!known) {
      fail(entry.first, subject,
           "unknown key \"" + key + "\" (expected one of: " + join(allowed) + ")");
      clean = false;
    }
  }
  return clean;
}

std::vector<YAML::Node> FieldReader::sequence(const YAML::Node& map, const char* key,
                                              std::string_view subject) {
  const YAML::Node node = map[key];
  if (!node || node.IsNull()) return {};
  if (!node.IsSequence()) {
    fail(node, subject, std::string(key) + " must be a list, got " + describe(node));
    return {};
  }
  return {node.begin(), node.end()};
}

std::optional<std::string> FieldReader::text(const YAML::Node& map, const char* key,
                                             std::string_view subject, bool required) {
  const YAML::Node node = map[key];
  if (!node || node.IsNull()) {
    if (required) fail(map, subject, std::string(key) + " is required");
    return std::nullopt;
  }
  if (!node.IsScalar() || node.Scalar().empty()) {
    fail(node, subject, std::string(key) + " must be a non-empty string, got " + describe(node));
    return std::nullopt;
  }
  if (!is_utf8_text(node.Scalar())) {
    fail(node, subject,
         std::string(key) + " must be UTF-8 text without control characters");
    return std::nullopt;
  }
  return node.Scalar();
}

std::optional<double> FieldReader::number_at(const YAML::Node& node, std::string_view subject,
                                             std::string_view field, std::string_view requirement,
                                             bool strictly_positive, double max) {
  std::optional<double> value;
  if (node.IsScalar()) value = parse_decimal(node.Scalar());
  if (!value || *value < 0 || (strictly_positive && *value == 0)) {
    fail(node, subject,
         std::string(field) + " must be " + std::string(requirement) + ", got " + describe(node));
    return std::nullopt;
  }
  if (*value > max) {
    fail(node, subject,
         std::string(field) + " must be at most " + csv_number(max) + ", got " + describe(node));
    return std::nullopt;
  }
  return value;
}

std::optional<double> FieldReader::bounded_number(const YAML::Node& map, const char* key,
                                                  std::string_view subject,
                                                  std::string_view requirement,
                                                  bool strictly_positive, bool required) {
  const YAML::Node node = map[key];
  if (!node || node.IsNull()) {
    if (required) fail(map, subject, std::string(key) + " is required");
    return std::nullopt;
  }
  return number_at(node, subject, key, requirement, strictly_positive);
}

std::optional<double> FieldReader::positive(const YAML::Node& map, const char* key,
                                            std::string_view subject, std::string_view unit,
                                            bool required) {
  return bounded_number(map, key, subject, "a positive number of " + std::string(unit), true,
                        required);
}

std::optional<double> FieldReader::non_negative(const YAML::Node& map, const char* key,
                                                std::string_view subject, std::string_view unit,
                                                bool required) {
  return bounded_number(map, key, subject, "a non-negative number of " + std::string(unit), false,
                        required);
}

std::optional<double> FieldReader::seconds(const YAML::Node& map, const char* key,
                                           std::string_view subject, bool positive,
                                           bool required) {
  const YAML::Node node = map[key];
  if (!node || node.IsNull()) {
    if (required) fail(map, subject, std::string(key) + " is required");
    return std::nullopt;
  }
  return seconds_at(node, subject, key, positive);
}

std::optional<double> FieldReader::seconds_at(const YAML::Node& node, std::string_view subject,
                                              std::string_view field, bool positive) {
  return number_at(node, subject, field,
                   positive ? "a positive number of seconds" : "a non-negative number of seconds",
                   positive, kMaxInputSeconds);
}

std::optional<std::int64_t> FieldReader::integer(const YAML::Node& map, const char* key,
                                                 std::string_view subject, std::int64_t min,
                                                 std::int64_t max, bool required) {
  const YAML::Node node = map[key];
  if (!node || node.IsNull()) {
    if (required) fail(map, subject, std::string(key) + " is required");
    return std::nullopt;
  }
  return integer_at(node, subject, key, min, max);
}

std::optional<std::int64_t> FieldReader::integer_at(const YAML::Node& node,
                                                    std::string_view subject,
                                                    std::string_view field, std::int64_t min,
                                                    std::int64_t max) {
  std::optional<double> value;
  if (node.IsScalar()) value = parse_decimal(node.Scalar());
  if (!value || *value != std::floor(*value) || *value < static_cast<double>(min) ||
      *value > static_cast<double>(max)) {
    fail(node, subject,
         std::string(field) + " must be a whole number from " + std::to_string(min) + " to " +
             std::to_string(max) + ", got " + describe(node));
    return std::nullopt;
  }
  return static_cast<std::int64_t>(*value);
}

bool FieldReader::device_name(const YAML::Node& at, std::string_view subject,
                              std::string_view field, const std::string& name) {
  const bool valid = is_device_type_name(name);
  if (!valid) {
    fail(at, subject,
         std::string(field) +
             " must be a device type name (lowercase letters, digits, '-', '_', "
             "'.'; at most 63 characters), got \"" +
             name + "\"");
  }
  return valid;
}

}  // namespace allox
