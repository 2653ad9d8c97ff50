#include "extender/wire.h"

#include <cctype>
#include <charconv>

namespace allox::extender {
namespace {

using nlohmann::json;

// nlohmann's parser recurses once per nesting level; a hostile body of a million '[' would
// exhaust the stack. Kubernetes objects nest a dozen levels deep, so 200 is generous.
constexpr int kMaxNesting = 200;

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

Error wrong_type(const std::string& field, const char* expected, const json& got) {
  return Error{field + ": expected " + expected + ", got " + type_name(got)};
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

Expected<std::vector<std::string>> string_list(const json& value, const std::string& field) {
  if (!value.is_array()) return wrong_type(field, "a list", value);
  std::vector<std::string> out;
  out.reserve(value.size());
  for (std::size_t i = 0; i < value.size(); ++i) {
    auto s = as_string(value[i], field + "[" + std::to_string(i) + "]");
    if (!s) return s.error();
    out.push_back(std::move(*s));
  }
  return out;
}

Expected<std::map<std::string, std::string>> string_map(const json& value,
                                                        const std::string& field) {
  std::map<std::string, std::string> out;
  if (value.is_null()) return out;
  if (!value.is_object()) return wrong_type(field, "an object", value);
  for (const auto& [key, reason] : value.items()) {
    auto s = as_string(reason, field + "." + key);
    if (!s) return s.error();
    out.emplace(key, std::move(*s));
  }
  return out;
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

// `Nodes` (a v1.NodeList): its items, each checked to carry metadata.name. Unset when null.
Expected<std::optional<std::vector<json>>> node_objects_field(const json& object) {
  const json* nodes = find_key(object, "Nodes");
  if (nodes == nullptr || nodes->is_null()) return std::optional<std::vector<json>>();
  if (!nodes->is_object()) return wrong_type("Nodes", "a NodeList object", *nodes);
  std::vector<json> objects;
  if (const json* items = find_key(*nodes, "items"); items != nullptr && !items->is_null()) {
    if (!items->is_array()) return wrong_type("Nodes.items", "a list", *items);
    for (std::size_t i = 0; i < items->size(); ++i) {
      auto name = node_name((*items)[i], "Nodes.items[" + std::to_string(i) + "]");
      if (!name) return name.error();
      objects.push_back((*items)[i]);
    }
  }
  return std::optional<std::vector<json>>(std::move(objects));
}

// `NodeNames`: unset when null.
Expected<std::optional<std::vector<std::string>>> node_names_field(const json& object) {
  const json* names = find_key(object, "NodeNames");
  if (names == nullptr || names->is_null()) return std::optional<std::vector<std::string>>();
  auto list = string_list(*names, "NodeNames");
  if (!list) return list.error();
  return std::optional<std::vector<std::string>>(std::move(*list));
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

// The one JSON writer behind every render(): appends to a string, no DOM. Strings here came from
// parsed JSON or from allox itself, so they are valid UTF-8; only quotes, backslashes and
// control characters need escaping, as Go does: \n \r \t short, the others as \u00XX.
void append_string(std::string& out, std::string_view text) {
  out.push_back('"');
  std::size_t plain = 0;  // start of the run of characters copied as they are
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto u = static_cast<unsigned char>(text[i]);
    if (u >= 0x20 && text[i] != '"' && text[i] != '\\') continue;
    out.append(text.data() + plain, i - plain);
    plain = i + 1;
    if (u >= 0x20) {
      out.push_back('\\');
      out.push_back(text[i]);
    } else if (text[i] == '\n') {
      out += "\\n";
    } else if (text[i] == '\r') {
      out += "\\r";
    } else if (text[i] == '\t') {
      out += "\\t";
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  out.append(text.data() + plain, text.size() - plain);
  out.push_back('"');
}

// `"Key":` (keys are allox's own ASCII field names).
void append_key(std::string& out, std::string_view key, bool first = false) {
  if (!first) out.push_back(',');
  out.push_back('"');
  out += key;
  out += "\":";
}

void append_integer(std::string& out, std::int64_t value) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, end);
}

// A Kubernetes object kept as received.
void append_object(std::string& out, const json& value) {
  out += value.dump(-1, ' ', false, json::error_handler_t::replace);
}

void append_strings(std::string& out, const std::optional<std::vector<std::string>>& list) {
  if (!list) {
    out += "null";
    return;
  }
  out.push_back('[');
  for (std::size_t i = 0; i < list->size(); ++i) {
    if (i > 0) out.push_back(',');
    append_string(out, (*list)[i]);
  }
  out.push_back(']');
}

// A v1.NodeList as Go writes one built from items alone.
void append_node_list(std::string& out, const std::optional<std::vector<json>>& nodes) {
  if (!nodes) {
    out += "null";
    return;
  }
  out += "{\"metadata\":{},\"items\":[";
  for (std::size_t i = 0; i < nodes->size(); ++i) {
    if (i > 0) out.push_back(',');
    append_object(out, (*nodes)[i]);
  }
  out += "]}";
}

// A Go map[string]string: null when empty, keys in byte order (std::map's, and Go's).
void append_string_map(std::string& out, const std::map<std::string, std::string>& map) {
  if (map.empty()) {
    out += "null";
    return;
  }
  out.push_back('{');
  bool first = true;
  for (const auto& [key, value] : map) {
    if (!first) out.push_back(',');
    first = false;
    append_string(out, key);
    out.push_back(':');
    append_string(out, value);
  }
  out.push_back('}');
}

void append_victims(std::string& out, const std::map<std::string, MetaVictims>& victims) {
  if (victims.empty()) {
    out += "null";
    return;
  }
  out.push_back('{');
  bool first = true;
  for (const auto& [node, meta] : victims) {
    if (!first) out.push_back(',');
    first = false;
    append_string(out, node);
    out += ":{\"Pods\":";
    if (meta.pod_uids.empty()) {
      out += "null";
    } else {
      out.push_back('[');
      for (std::size_t i = 0; i < meta.pod_uids.size(); ++i) {
        if (i > 0) out.push_back(',');
        out += "{\"UID\":";
        append_string(out, meta.pod_uids[i]);
        out.push_back('}');
      }
      out.push_back(']');
    }
    append_key(out, "NumPDBViolations");
    append_integer(out, meta.num_pdb_violations);
    out.push_back('}');
  }
  out.push_back('}');
}

}  // namespace

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

Expected<ExtenderArgs> parse_extender_args(std::string_view body) {
  auto object = top_object(body, "ExtenderArgs");
  if (!object) return object.error();
  ExtenderArgs args;
  auto pod = pod_field(*object);
  if (!pod) return pod.error();
  args.pod = std::move(*pod);

  auto objects = node_objects_field(*object);
  if (!objects) return objects.error();
  args.node_objects = std::move(*objects);
  auto names = node_names_field(*object);
  if (!names) return names.error();
  args.node_names = std::move(*names);
  return args;
}

Expected<FilterResult> parse_filter_result(std::string_view body) {
  auto object = top_object(body, "ExtenderFilterResult");
  if (!object) return object.error();
  FilterResult result;
  auto objects = node_objects_field(*object);
  if (!objects) return objects.error();
  result.node_objects = std::move(*objects);
  auto names = node_names_field(*object);
  if (!names) return names.error();
  result.node_names = std::move(*names);
  if (const json* failed = find_key(*object, "FailedNodes")) {
    auto map = string_map(*failed, "FailedNodes");
    if (!map) return map.error();
    result.failed_nodes = std::move(*map);
  }
  if (const json* failed = find_key(*object, "FailedAndUnresolvableNodes")) {
    auto map = string_map(*failed, "FailedAndUnresolvableNodes");
    if (!map) return map.error();
    result.failed_and_unresolvable_nodes = std::move(*map);
  }
  auto error = string_field(*object, "Error");
  if (!error) return error.error();
  result.error = std::move(*error);
  return result;
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

std::vector<std::string> ExtenderArgs::candidates() const {
  std::vector<std::string> names;
  if (node_objects) {
    for (const json& node : *node_objects) {
      // parse_extender_args checked every object's metadata.name.
      names.push_back((*find_key(*find_key(node, "metadata"), "name")).get<std::string>());
    }
  } else if (node_names) {
    names = *node_names;
  }
  return names;
}

std::string render(const ExtenderArgs& args) {
  std::string out = "{";
  append_key(out, "Pod", true);
  append_object(out, args.pod);
  append_key(out, "Nodes");
  append_node_list(out, args.node_objects);
  append_key(out, "NodeNames");
  append_strings(out, args.node_names);
  out.push_back('}');
  return out;
}

std::string render(const FilterResult& result) {
  std::string out;
  // One allocation for the usual answer: every node with a reason of a few dozen bytes.
  std::size_t nodes = result.failed_nodes.size() + result.failed_and_unresolvable_nodes.size() +
                      (result.node_names ? result.node_names->size() : 0);
  out.reserve(96 + 80 * nodes + result.error.size());
  out.push_back('{');
  append_key(out, "Nodes", true);
  append_node_list(out, result.node_objects);
  append_key(out, "NodeNames");
  append_strings(out, result.node_names);
  append_key(out, "FailedNodes");
  append_string_map(out, result.failed_nodes);
  append_key(out, "FailedAndUnresolvableNodes");
  append_string_map(out, result.failed_and_unresolvable_nodes);
  append_key(out, "Error");
  append_string(out, result.error);
  out.push_back('}');
  return out;
}

std::string render(const std::vector<HostPriority>& priorities) {
  std::string out = "[";
  out.reserve(2 + 40 * priorities.size());
  for (std::size_t i = 0; i < priorities.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.push_back('{');
    append_key(out, "Host", true);
    append_string(out, priorities[i].host);
    append_key(out, "Score");
    append_integer(out, priorities[i].score);
    out.push_back('}');
  }
  out.push_back(']');
  return out;
}

std::string render(const BindingArgs& args) {
  std::string out = "{";
  append_key(out, "PodName", true);
  append_string(out, args.pod_name);
  append_key(out, "PodNamespace");
  append_string(out, args.pod_namespace);
  append_key(out, "PodUID");
  append_string(out, args.pod_uid);
  append_key(out, "Node");
  append_string(out, args.node);
  out.push_back('}');
  return out;
}

std::string render(const BindingResult& result) {
  std::string out = "{";
  append_key(out, "Error", true);
  append_string(out, result.error);
  out.push_back('}');
  return out;
}

std::string render(const PreemptionResult& result) {
  std::string out = "{";
  append_key(out, "NodeNameToMetaVictims", true);
  append_victims(out, result.victims);
  out.push_back('}');
  return out;
}

json to_json(const ExtenderArgs& args) {
  return json::parse(render(args));
}
json to_json(const FilterResult& result) {
  return json::parse(render(result));
}
json to_json(const std::vector<HostPriority>& priorities) {
  return json::parse(render(priorities));
}
json to_json(const BindingArgs& args) {
  return json::parse(render(args));
}
json to_json(const BindingResult& result) {
  return json::parse(render(result));
}
json to_json(const PreemptionResult& result) {
  return json::parse(render(result));
}

}  // namespace allox::extender
