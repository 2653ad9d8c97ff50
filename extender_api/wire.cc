#include "extender_api/wire.h"

#include <cctype>
#include <string>

#include "extender_api/wire_read.h"

namespace allox::extender {
namespace {

using nlohmann::json;
using wire_read::iequals;
using wire_read::kMaxNesting;
using wire_read::node_name;
using wire_read::wrong_type;

bool nesting_within_limit(std::string_view body) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxNesting) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

Expected<json> parse_body(std::string_view body) {
  if (!nesting_within_limit(body)) {
    return Error{"malformed JSON: nested deeper than " + std::to_string(kMaxNesting) + " levels"};
  }
  json value = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    // Re-parse to get the position; only for bodies already known to be bad.
    // Syntax errors throw parse_error; a number beyond double's range (1e999) throws
    // out_of_range. Both are the client's fault.
    try {
      json again = json::parse(body);  // throws: the body is known to be bad
      (void)again;
    } catch (const json::exception& e) {
      std::string what = e.what();
      auto pos = what.find("] ");
      if (pos != std::string::npos) what = what.substr(pos + 2);
      constexpr std::size_t kMaxMessage = 200;  // the message quotes the token, which may be huge
      if (what.size() > kMaxMessage) what = what.substr(0, kMaxMessage) + "...";
      return Error{"malformed JSON: " + what};
    }
    return Error{"malformed JSON"};
  }
  return value;
}

const char* type_name(const json& value) {
  return value.type_name();
}

Expected<std::string> as_string(const json& value, const std::string& field) {
  if (!value.is_string()) return wrong_type(field, "a string", value);
  return value.get<std::string>();
}

Expected<std::int64_t> as_integer(const json& value, const std::string& field) {
  if (!value.is_number_integer()) return wrong_type(field, "an integer", value);
  return value.get<std::int64_t>();
}

// A Go string field: absent or null reads as "".
Expected<std::string> string_field(const json& object, std::string_view key) {
  const json* value = find_key(object, key);
  if (value == nullptr || value->is_null()) return std::string();
  return as_string(*value, std::string(key));
}

Expected<json> pod_field(const json& object) {
  const json* pod = find_key(object, "Pod");
  if (pod == nullptr || pod->is_null()) return Error{"Pod: missing"};
  if (!pod->is_object()) return wrong_type("Pod", "an object", *pod);
  return *pod;
}

// How one entry of a victims' Pods list yields its UID; `at` names the entry in errors.
using PodUidReader = Expected<std::string> (*)(const json& pod, const std::string& at);

// NodeNameToMetaVictims lists {"UID": ...} entries.
Expected<std::string> meta_pod_uid(const json& pod, const std::string& at) {
  if (!pod.is_object()) return wrong_type(at, "an object", pod);
  auto uid = string_field(pod, "UID");
  if (!uid) return Error{at + "." + uid.message()};
  return uid;
}

// NodeNameToVictims carries full pods; keep their UIDs (empty when a pod has none).
Expected<std::string> full_pod_uid(const json& pod, const std::string& at) {
  if (!pod.is_object()) return wrong_type(at, "a pod object", pod);
  const json* metadata = find_key(pod, "metadata");
  if (metadata == nullptr || !metadata->is_object()) return std::string();
  auto uid = string_field(*metadata, "uid");
  if (!uid) return Error{at + ".metadata." + uid.message()};
  return uid;
}

Expected<std::map<std::string, MetaVictims>> victims_map(const json& value,
                                                         const std::string& field,
                                                         PodUidReader pod_uid) {
  std::map<std::string, MetaVictims> out;
  if (value.is_null()) return out;
  if (!value.is_object()) return wrong_type(field, "an object", value);
  for (const auto& [node, victims] : value.items()) {
    std::string where = field + "." + node;
    if (victims.is_null()) {
      out[node];
      continue;
    }
    if (!victims.is_object()) return wrong_type(where, "an object", victims);
    MetaVictims meta;
    if (const json* pods = find_key(victims, "Pods"); pods != nullptr && !pods->is_null()) {
      if (!pods->is_array()) return wrong_type(where + ".Pods", "a list", *pods);
      for (std::size_t i = 0; i < pods->size(); ++i) {
        auto uid = pod_uid((*pods)[i], where + ".Pods[" + std::to_string(i) + "]");
        if (!uid) return uid.error();
        meta.pod_uids.push_back(std::move(*uid));
      }
    }
    if (const json* n = find_key(victims, "NumPDBViolations"); n != nullptr && !n->is_null()) {
      auto count = as_integer(*n, where + ".NumPDBViolations");
      if (!count) return count.error();
      meta.num_pdb_violations = *count;
    }
    out[node] = std::move(meta);
  }
  return out;
}

Expected<json> top_object(std::string_view body, const char* what) {
  auto value = parse_body(body);
  if (!value) return value.error();
  if (!value->is_object()) return wrong_type(what, "an object", *value);
  return value;
}

}  // namespace

namespace wire_read {

Error wrong_type(const std::string& field, const char* expected, const json& got) {
  return Error{field + ": expected " + expected + ", got " + type_name(got)};
}

// The node's name from a v1.Node object (metadata.name).
Expected<std::string> node_name(const json& node, const std::string& field) {
  if (!node.is_object()) return wrong_type(field, "a node object", node);
  const json* metadata = find_key(node, "metadata");
  if (metadata == nullptr || !metadata->is_object()) {
    return Error{field + ".metadata: missing"};
  }
  const json* name = find_key(*metadata, "name");
  if (name == nullptr) return Error{field + ".metadata.name: missing"};
  return as_string(*name, field + ".metadata.name");
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace wire_read

Expected<json> parse_json_body(std::string_view body) {
  return parse_body(body);
}

const json* find_key(const json& object, std::string_view key) {
  auto exact = object.find(key);
  if (exact != object.end()) return &*exact;
  for (auto it = object.begin(); it != object.end(); ++it) {
    const std::string& candidate = it.key();
    if (candidate.size() != key.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < key.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(candidate[i])) ==
             std::tolower(static_cast<unsigned char>(key[i]));
    }
    if (same) return &*it;
  }
  return nullptr;
}

Expected<std::vector<HostPriority>> parse_host_priorities(std::string_view body) {
  auto value = parse_body(body);
  if (!value) return value.error();
  std::vector<HostPriority> out;
  if (value->is_null()) return out;
  // A single HostPriority object (upstream's golden test) reads as a list of one.
  json list = value->is_object() ? json::array({*value}) : *value;
  if (!list.is_array()) return wrong_type("HostPriorityList", "a list", list);
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::string at = "[" + std::to_string(i) + "]";
    const json& entry = list[i];
    if (!entry.is_object()) return wrong_type(at, "an object", entry);
    HostPriority priority;
    auto host = string_field(entry, "Host");
    if (!host) return Error{at + "." + host.message()};
    priority.host = std::move(*host);
    if (const json* score = find_key(entry, "Score"); score != nullptr && !score->is_null()) {
      auto s = as_integer(*score, at + ".Score");
      if (!s) return s.error();
      priority.score = *s;
    }
    out.push_back(std::move(priority));
  }
  return out;
}

Expected<BindingArgs> parse_binding_args(std::string_view body) {
  auto object = top_object(body, "ExtenderBindingArgs");
  if (!object) return object.error();
  BindingArgs args;
  struct Field {
    const char* key;
    std::string* out;
  };
  for (Field field : {Field{"PodName", &args.pod_name}, Field{"PodNamespace", &args.pod_namespace},
                      Field{"PodUID", &args.pod_uid}, Field{"Node", &args.node}}) {
    auto value = string_field(*object, field.key);
    if (!value) return value.error();
    *field.out = std::move(*value);
  }
  if (args.pod_name.empty()) return Error{"PodName: missing"};
  if (args.node.empty()) return Error{"Node: missing"};
  return args;
}

Expected<BindingResult> parse_binding_result(std::string_view body) {
  auto object = top_object(body, "ExtenderBindingResult");
  if (!object) return object.error();
  auto error = string_field(*object, "Error");
  if (!error) return error.error();
  return BindingResult{std::move(*error)};
}

Expected<PreemptionArgs> parse_preemption_args(std::string_view body) {
  auto object = top_object(body, "ExtenderPreemptionArgs");
  if (!object) return object.error();
  PreemptionArgs args;
  auto pod = pod_field(*object);
  if (!pod) return pod.error();
  args.pod = std::move(*pod);
  if (const json* full = find_key(*object, "NodeNameToVictims")) {
    auto map = victims_map(*full, "NodeNameToVictims", full_pod_uid);
    if (!map) return map.error();
    args.victims = std::move(*map);
  }
  if (const json* meta = find_key(*object, "NodeNameToMetaVictims")) {
    auto map = victims_map(*meta, "NodeNameToMetaVictims", meta_pod_uid);
    if (!map) return map.error();
    for (auto& [node, victims] : *map) args.victims[node] = std::move(victims);
  }
  return args;
}

Expected<PreemptionResult> parse_preemption_result(std::string_view body) {
  auto object = top_object(body, "ExtenderPreemptionResult");
  if (!object) return object.error();
  PreemptionResult result;
  if (const json* meta = find_key(*object, "NodeNameToMetaVictims")) {
    auto map = victims_map(*meta, "NodeNameToMetaVictims", meta_pod_uid);
    if (!map) return map.error();
    result.victims = std::move(*map);
  }
  return result;
}

}  // namespace allox::extender
