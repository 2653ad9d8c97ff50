// The renderer: every wire type written as Go's encoder writes it (upstream's key order, `null`
// for empty), appended to one string with no DOM.
#include "extender_api/wire.h"

#include <charconv>
#include <string>

namespace allox::extender {

// The one JSON writer behind every render(): appends to a string, no DOM. Strings here came from
// parsed JSON or from allox itself, so they are valid UTF-8; only quotes, backslashes and
// control characters need escaping, as Go does: \n \r \t short, the others as \u00XX.
void append_json_string(std::string& out, std::string_view text) {
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

namespace {

using nlohmann::json;

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

void append_strings(std::string& out, const std::optional<NodeNameList>& list) {
  if (!list) {
    out += "null";
    return;
  }
  out.push_back('[');
  for (std::size_t i = 0; i < list->size(); ++i) {
    if (i > 0) out.push_back(',');
    append_json_string(out, (*list)[i]);
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

// A Go map[string]string: null when empty, keys in byte order (Go's), each once.
void append_node_reasons(std::string& out, const NodeReasons& reasons) {
  if (reasons.empty()) {
    out += "null";
    return;
  }
  // A reason is escaped once and copied for each node it applies to.
  std::vector<std::string> escaped(reasons.reason_count());
  out.push_back('{');
  bool first = true;
  for (const NodeReasons::Entry& entry : reasons.sorted()) {
    if (!first) out.push_back(',');
    first = false;
    append_json_string(out, entry.node);
    out.push_back(':');
    std::string& reason = escaped[entry.reason_id];
    if (reason.empty()) append_json_string(reason, entry.reason);
    out += reason;
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
    append_json_string(out, node);
    out += ":{\"Pods\":";
    if (meta.pod_uids.empty()) {
      out += "null";
    } else {
      out.push_back('[');
      for (std::size_t i = 0; i < meta.pod_uids.size(); ++i) {
        if (i > 0) out.push_back(',');
        out += "{\"UID\":";
        append_json_string(out, meta.pod_uids[i]);
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
  append_node_reasons(out, result.failed_nodes);
  append_key(out, "FailedAndUnresolvableNodes");
  append_node_reasons(out, result.failed_and_unresolvable_nodes);
  append_key(out, "Error");
  append_json_string(out, result.error);
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
    append_json_string(out, priorities[i].host);
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
  append_json_string(out, args.pod_name);
  append_key(out, "PodNamespace");
  append_json_string(out, args.pod_namespace);
  append_key(out, "PodUID");
  append_json_string(out, args.pod_uid);
  append_key(out, "Node");
  append_json_string(out, args.node);
  out.push_back('}');
  return out;
}

std::string render(const BindingResult& result) {
  std::string out = "{";
  append_key(out, "Error", true);
  append_json_string(out, result.error);
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

}  // namespace allox::extender
