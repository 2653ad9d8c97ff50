#include "extender_api/wire.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>

#include "extender_api/wire_sax.h"

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

// What of a JSON value ValueBuilder keeps: everything, or (PodFields::kRead) the pod's fields
// alloxd/model/pod.h reads, matched case-insensitively as find_key does.
enum class Scope : unsigned char { kAll, kPod, kMetadata, kSpec, kContainers, kContainer };

// The scope of the value under `key` in an object of scope `scope`; nullopt: dropped.
std::optional<Scope> child_scope(Scope scope, std::string_view key) {
  switch (scope) {
    case Scope::kAll:
    case Scope::kContainers:  // an object where the pod reader expects a list: kept, ignored
      return Scope::kAll;
    case Scope::kPod:
      if (iequals(key, "metadata")) return Scope::kMetadata;
      if (iequals(key, "spec")) return Scope::kSpec;
      return std::nullopt;
    case Scope::kMetadata:
      for (std::string_view kept : {"name", "namespace", "uid", "labels", "annotations"}) {
        if (iequals(key, kept)) return Scope::kAll;
      }
      return std::nullopt;
    case Scope::kSpec:
      if (iequals(key, "schedulerName")) return Scope::kAll;
      if (iequals(key, "containers")) return Scope::kContainers;
      return std::nullopt;
    case Scope::kContainer:
      if (iequals(key, "resources")) return Scope::kAll;
      return std::nullopt;
  }
  return std::nullopt;
}

// Builds one JSON value from SAX events, dropping the subtrees its root scope leaves out.
class ValueBuilder {
 public:
  void reset(Scope root) {
    root_ = nullptr;
    stack_.clear();
    skipping_ = 0;
    drop_next_ = false;
    next_scope_ = root;
  }
  json take() { return std::move(root_); }

  void scalar(json value) {
    if (skipping_ > 0) return;
    if (drop_next_) {
      drop_next_ = false;
      return;
    }
    *place() = std::move(value);
  }
  void start(json::value_t type) {
    if (skipping_ > 0 || drop_next_) {
      drop_next_ = false;
      ++skipping_;
      return;
    }
    Scope scope = next_scope_;
    json* value = place();
    *value = json(type);
    stack_.push_back({value, scope});
    if (type == json::value_t::array) {
      next_scope_ = scope == Scope::kContainers ? Scope::kContainer : Scope::kAll;
    }
  }
  void end() {
    if (skipping_ > 0) {
      --skipping_;
      return;
    }
    stack_.pop_back();
    if (!stack_.empty() && stack_.back().value->is_array()) {
      next_scope_ = stack_.back().scope == Scope::kContainers ? Scope::kContainer : Scope::kAll;
    }
  }
  void key(const std::string& key) {
    if (skipping_ > 0) return;
    auto scope = child_scope(stack_.back().scope, key);
    drop_next_ = !scope;
    next_scope_ = scope.value_or(Scope::kAll);
    key_ = key;
  }

 private:
  struct Open {
    json* value;
    Scope scope;
  };
  // Where the next value goes: the root, the end of the open array, or the open object's key.
  json* place() {
    if (stack_.empty()) return &root_;
    json& open = *stack_.back().value;
    if (open.is_array()) return &open.emplace_back(nullptr);
    return &open[key_];
  }

  json root_;
  std::vector<Open> stack_;
  std::string key_;
  int skipping_ = 0;  // depth inside a dropped subtree
  bool drop_next_ = false;
  Scope next_scope_ = Scope::kAll;
};

const char* sax_type_name(json::value_t type) {
  return json(type).type_name();
}

// What every SAX reader checks before its own fields, in this order: nesting, syntax, a body
// that did not parse, and a top level that is not an object (`document` names the type).
std::optional<Error> sax_frame_error(bool too_deep, const std::string& syntax_error, bool parsed,
                                     json::value_t top_type, std::string_view document) {
  if (too_deep) {
    return Error{"malformed JSON: nested deeper than " + std::to_string(kMaxNesting) + " levels"};
  }
  if (!syntax_error.empty()) return Error{syntax_error};
  if (!parsed) return Error{"malformed JSON"};
  if (top_type != json::value_t::object) {
    return Error{std::string(document) + ": expected an object, got " + sax_type_name(top_type)};
  }
  return std::nullopt;
}

// ExtenderArgs in one pass: `NodeNames` go straight into their list, `Pod` and `Nodes` are built
// as JSON values (the pod pruned for kRead), every other field is skipped. Type errors are noted
// and the body is read to its end, so a syntax error anywhere wins as it does for a DOM parse;
// the checks of the built values then run in the order parse_extender_args always had.
class ExtenderArgsReader {
 public:
  using string_t = std::string;
  using number_integer_t = std::int64_t;
  using number_unsigned_t = std::uint64_t;
  using number_float_t = double;
  using binary_t = json::binary_t;

  explicit ExtenderArgsReader(PodFields pod_fields) : pod_fields_(pod_fields) {}

  bool null() {
    return value(json::value_t::null, [] { return json(); });
  }
  bool boolean(bool b) {
    return value(json::value_t::boolean, [b] { return json(b); });
  }
  bool number_integer(std::int64_t n) {
    return value(json::value_t::number_integer, [n] { return json(n); });
  }
  bool number_unsigned(std::uint64_t n) {
    return value(json::value_t::number_unsigned, [n] { return json(n); });
  }
  bool number_float(double n, const std::string&) {
    return value(json::value_t::number_float, [n] { return json(n); });
  }
  bool string(std::string& s) {
    if (depth_ == 2 && target_ == Target::kNames && names_open_) {
      node_names_->push_back(s);
      ++names_index_;
      return true;
    }
    return value(json::value_t::string, [&s] { return json(s); });
  }
  bool binary(binary_t&) { return true; }  // JSON text has no binary values

  bool start_object(std::size_t) { return open(json::value_t::object); }
  bool start_array(std::size_t) { return open(json::value_t::array); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(std::string& key) {
    if (depth_ == 1) {
      choose_target(key);
    } else if (building()) {
      builder_.key(key);
    }
    return true;
  }

  // wire_sax::parse's verdict on the body: a syntax error wins over anything noted.
  void syntax_error(std::string message) { syntax_error_ = std::move(message); }

  Expected<ExtenderArgs> finish(bool parsed) {
    if (auto error = sax_frame_error(too_deep_, syntax_error_, parsed, top_type_, "ExtenderArgs")) {
      return *std::move(error);
    }
    if (pod_.is_null()) return Error{"Pod: missing"};
    if (!pod_.is_object()) return wrong_type("Pod", "an object", pod_);
    args_.pod = std::move(pod_);
    if (!nodes_.is_null()) {
      if (!nodes_.is_object()) return wrong_type("Nodes", "a NodeList object", nodes_);
      args_.node_objects.emplace();
      if (const json* items = find_key(nodes_, "items"); items != nullptr && !items->is_null()) {
        if (!items->is_array()) return wrong_type("Nodes.items", "a list", *items);
        args_.node_objects->reserve(items->size());
        for (std::size_t i = 0; i < items->size(); ++i) {
          auto name = node_name((*items)[i], "Nodes.items[" + std::to_string(i) + "]");
          if (!name) return name.error();
          args_.node_object_names.push_back(*name);
          args_.node_objects->push_back(std::move((*items)[i]));
        }
      }
    }
    if (!names_error_.empty()) return Error{names_error_};
    args_.node_names = std::move(node_names_);
    return std::move(args_);
  }

 private:
  enum class Target { kSkip, kPod, kNodes, kNames };
  struct Field {
    bool seen = false;
    bool exact = false;
  };

  bool building() const { return target_ == Target::kPod || target_ == Target::kNodes; }

  // A top-level key: where its value goes. An exact-case key wins over a folded one; among
  // keys of one kind the last wins (as in a parsed object).
  void choose_target(const std::string& key) {
    target_ = Target::kSkip;
    struct Known {
      std::string_view name;
      Target target;
      Field* field;
    };
    for (Known known :
         {Known{"Pod", Target::kPod, &pod_field_}, Known{"Nodes", Target::kNodes, &nodes_field_},
          Known{"NodeNames", Target::kNames, &names_field_}}) {
      bool exact = key == known.name;
      if (!exact && (!iequals(key, known.name) || known.field->exact)) continue;
      *known.field = {true, exact};
      target_ = known.target;
      if (target_ == Target::kNames) {
        node_names_.reset();
        names_error_.clear();
        names_open_ = false;
      } else {
        builder_.reset(target_ == Target::kPod && pod_fields_ == PodFields::kRead ? Scope::kPod
                                                                                  : Scope::kAll);
      }
      return;
    }
  }

  template <class Make>
  bool value(json::value_t type, Make make) {
    if (depth_ == 0) {
      top_type_ = type;
    } else if (building()) {
      builder_.scalar(make());
      if (depth_ == 1) done_building();
    } else if (target_ == Target::kNames) {
      if (depth_ == 1 && type != json::value_t::null) {
        names_error_ = std::string("NodeNames: expected a list, got ") + sax_type_name(type);
      } else if (depth_ == 2 && names_open_) {
        element_error(type);
      }
    }
    return true;
  }

  void element_error(json::value_t type) {
    if (names_error_.empty()) {
      names_error_ = "NodeNames[" + std::to_string(names_index_) + "]: expected a string, got " +
                     sax_type_name(type);
    }
    ++names_index_;
  }

  bool open(json::value_t type) {
    if (depth_ == 0) {
      top_type_ = type;
    } else if (building()) {
      builder_.start(type);
    } else if (target_ == Target::kNames) {
      if (depth_ == 1) {
        if (type == json::value_t::array) {
          node_names_.emplace();
          names_open_ = true;
          names_index_ = 0;
        } else {
          names_error_ = std::string("NodeNames: expected a list, got ") + sax_type_name(type);
        }
      } else if (depth_ == 2 && names_open_) {
        element_error(type);
      }
    }
    if (++depth_ > kMaxNesting) {
      too_deep_ = true;
      return false;
    }
    return true;
  }

  bool close() {
    --depth_;
    if (building()) {
      builder_.end();
      if (depth_ == 1) done_building();
    } else if (target_ == Target::kNames && depth_ == 1) {
      names_open_ = false;
    }
    return true;
  }

  // The value of a top-level Pod or Nodes key is complete.
  void done_building() {
    (target_ == Target::kPod ? pod_ : nodes_) = builder_.take();
    target_ = Target::kSkip;
  }

  PodFields pod_fields_;
  int depth_ = 0;
  json::value_t top_type_ = json::value_t::discarded;
  Target target_ = Target::kSkip;
  Field pod_field_, nodes_field_, names_field_;
  ValueBuilder builder_;
  json pod_;
  json nodes_;
  std::optional<NodeNameList> node_names_;
  bool names_open_ = false;
  std::size_t names_index_ = 0;
  std::string names_error_;
  std::string syntax_error_;
  bool too_deep_ = false;
  ExtenderArgs args_;
};

// ExtenderFilterResult in one pass, the way ExtenderArgsReader reads a request: `NodeNames` go
// straight into their list, `FailedNodes` and `FailedAndUnresolvableNodes` into NodeReasons (a
// run of nodes with the same reason stores it once), `Error` into its string, and only `Nodes`
// (full v1.Node objects) is built as JSON. A 5,000-node answer is then a few allocations, not a
// DOM of 5,000 strings. The first type error of each field is noted and the body is read to its
// end (a syntax error anywhere wins); errors are reported in the fields' order.
class FilterResultReader {
 public:
  using string_t = std::string;
  using number_integer_t = std::int64_t;
  using number_unsigned_t = std::uint64_t;
  using number_float_t = double;
  using binary_t = json::binary_t;

  bool null() {
    return value(json::value_t::null, [] { return json(); });
  }
  bool boolean(bool b) {
    return value(json::value_t::boolean, [b] { return json(b); });
  }
  bool number_integer(std::int64_t n) {
    return value(json::value_t::number_integer, [n] { return json(n); });
  }
  bool number_unsigned(std::uint64_t n) {
    return value(json::value_t::number_unsigned, [n] { return json(n); });
  }
  bool number_float(double n, const std::string&) {
    return value(json::value_t::number_float, [n] { return json(n); });
  }
  bool string(std::string& s) {
    if (depth_ == 2 && open_) {
      if (target_ == Target::kNames) {
        if (result_.node_names) result_.node_names->push_back(s);
        ++index_;
        return true;
      }
      if (target_ == Target::kFailed || target_ == Target::kUnresolvable) {
        reasons().add(key_, s);
        return true;
      }
    }
    if (depth_ == 1 && target_ == Target::kError) {
      result_.error = std::move(s);
      return true;
    }
    return value(json::value_t::string, [&s] { return json(s); });
  }
  bool binary(binary_t&) { return true; }  // JSON text has no binary values

  bool start_object(std::size_t) { return open(json::value_t::object); }
  bool start_array(std::size_t) { return open(json::value_t::array); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(std::string& key) {
    if (depth_ == 1) {
      choose_target(key);
    } else if (target_ == Target::kNodes) {
      builder_.key(key);
    } else if (depth_ == 2) {
      key_ = key;  // keeps key_'s buffer: no allocation per node
    }
    return true;
  }

  // wire_sax::parse's verdict on the body: a syntax error wins over anything noted.
  void syntax_error(std::string message) { syntax_error_ = std::move(message); }

  Expected<FilterResult> finish(bool parsed) {
    if (auto error =
            sax_frame_error(too_deep_, syntax_error_, parsed, top_type_, "ExtenderFilterResult")) {
      return *std::move(error);
    }
    if (!nodes_.is_null()) {
      if (!nodes_.is_object()) return wrong_type("Nodes", "a NodeList object", nodes_);
      result_.node_objects.emplace();
      if (const json* items = find_key(nodes_, "items"); items != nullptr && !items->is_null()) {
        if (!items->is_array()) return wrong_type("Nodes.items", "a list", *items);
        for (std::size_t i = 0; i < items->size(); ++i) {
          auto name = node_name((*items)[i], "Nodes.items[" + std::to_string(i) + "]");
          if (!name) return name.error();
          result_.node_objects->push_back(std::move((*items)[i]));
        }
      }
    }
    for (const std::string& error : errors_) {
      if (!error.empty()) return Error{error};
    }
    return std::move(result_);
  }

 private:
  // The fields in the order their errors are reported.
  enum class Target { kNodes, kNames, kFailed, kUnresolvable, kError, kSkip };
  static constexpr std::string_view kFields[] = {"Nodes", "NodeNames", "FailedNodes",
                                                 "FailedAndUnresolvableNodes", "Error"};

  NodeReasons& reasons() {
    return target_ == Target::kFailed ? result_.failed_nodes
                                      : result_.failed_and_unresolvable_nodes;
  }
  std::string& error_of(Target target) { return errors_[static_cast<std::size_t>(target)]; }
  std::string_view name_of(Target target) { return kFields[static_cast<std::size_t>(target)]; }

  // A top-level key: where its value goes. An exact-case key wins over a folded one; among keys
  // of one kind the last wins (as in a parsed object), so a repeated field starts over.
  void choose_target(const std::string& key) {
    target_ = Target::kSkip;
    for (std::size_t i = 0; i < std::size(kFields); ++i) {
      bool exact = key == kFields[i];
      if (!exact && (!iequals(key, kFields[i]) || exact_[i])) continue;
      exact_[i] = exact;
      target_ = static_cast<Target>(i);
      errors_[i].clear();
      open_ = false;
      index_ = 0;
      switch (target_) {
        case Target::kNodes:
          builder_.reset(Scope::kAll);
          break;
        case Target::kNames:
          result_.node_names.reset();
          break;
        case Target::kFailed:
        case Target::kUnresolvable:
          reasons() = NodeReasons();
          break;
        case Target::kError:
          result_.error.clear();
          break;
        case Target::kSkip:
          break;
      }
      return;
    }
  }

  template <class Make>
  bool value(json::value_t type, Make make) {
    if (depth_ == 0) {
      top_type_ = type;
    } else if (target_ == Target::kNodes) {
      builder_.scalar(make());
      if (depth_ == 1) done_building();
    } else if (depth_ == 1) {
      if (type != json::value_t::null) top_level_error(type);
    } else if (depth_ == 2 && open_) {
      element_error(type);
    }
    return true;
  }

  // The field's own value has the wrong type (null is always allowed: Go's nil).
  void top_level_error(json::value_t type) {
    if (target_ == Target::kSkip) return;
    const char* expected = target_ == Target::kNames   ? "a list"
                           : target_ == Target::kError ? "a string"
                                                       : "an object";
    error_of(target_) =
        std::string(name_of(target_)) + ": expected " + expected + ", got " + sax_type_name(type);
  }

  // An element of an open list or map has the wrong type; the first one is reported.
  void element_error(json::value_t type) {
    std::string& error = error_of(target_);
    if (error.empty()) {
      std::string at = target_ == Target::kNames
                           ? std::string(name_of(target_)) + "[" + std::to_string(index_) + "]"
                           : std::string(name_of(target_)) + "." + key_;
      error = at + ": expected a string, got " + sax_type_name(type);
    }
    ++index_;
  }

  bool open(json::value_t type) {
    if (depth_ == 0) {
      top_type_ = type;
    } else if (target_ == Target::kNodes) {
      builder_.start(type);
    } else if (depth_ == 1 && target_ != Target::kSkip) {
      const auto wanted = target_ == Target::kNames ? json::value_t::array : json::value_t::object;
      if (type == wanted && target_ != Target::kError) {
        open_ = true;
        if (target_ == Target::kNames) result_.node_names.emplace();
      } else {
        top_level_error(type);
      }
    } else if (depth_ == 2 && open_) {
      element_error(type);
    }
    if (++depth_ > kMaxNesting) {
      too_deep_ = true;
      return false;
    }
    return true;
  }

  bool close() {
    --depth_;
    if (target_ == Target::kNodes) {
      builder_.end();
      if (depth_ == 1) done_building();
    } else if (depth_ == 1) {
      open_ = false;
    }
    return true;
  }

  void done_building() {
    nodes_ = builder_.take();
    target_ = Target::kSkip;
  }

  int depth_ = 0;
  json::value_t top_type_ = json::value_t::discarded;
  Target target_ = Target::kSkip;
  bool exact_[std::size(kFields)] = {};
  std::string errors_[std::size(kFields)];
  bool open_ = false;      // inside the list or map of a NodeNames / FailedNodes field
  std::size_t index_ = 0;  // the next element of that list
  std::string key_;        // the node the next reason belongs to
  ValueBuilder builder_;
  json nodes_;
  FilterResult result_;
  std::string syntax_error_;
  bool too_deep_ = false;
};

Expected<json> top_object(std::string_view body, const char* what) {
  auto value = parse_body(body);
  if (!value) return value.error();
  if (!value->is_object()) return wrong_type(what, "an object", *value);
  return value;
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

Expected<ExtenderArgs> parse_extender_args(std::string_view body, PodFields pod_fields) {
  ExtenderArgsReader reader(pod_fields);
  wire_sax::Outcome outcome = wire_sax::parse(body, reader);
  reader.syntax_error(std::move(outcome.error));
  return reader.finish(outcome.parsed);
}

Expected<FilterResult> parse_filter_result(std::string_view body) {
  FilterResultReader reader;
  wire_sax::Outcome outcome = wire_sax::parse(body, reader);
  reader.syntax_error(std::move(outcome.error));
  return reader.finish(outcome.parsed);
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

bool NodeReasons::operator==(const NodeReasons& other) const {
  auto mine = sorted();
  auto theirs = other.sorted();
  return std::equal(
      mine.begin(), mine.end(), theirs.begin(), theirs.end(),
      [](const Entry& a, const Entry& b) { return a.node == b.node && a.reason == b.reason; });
}

const NodeNameList& ExtenderArgs::candidates() const {
  static const NodeNameList kNone;
  if (node_objects) return node_object_names;
  return node_names ? *node_names : kNone;
}

NodeNameList::NodeNameList(std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) push_back(name);
}

void NodeNameList::push_back(std::string_view name) {
  text_.append(name);
  ends_.push_back(text_.size());
}

void NodeNameList::reserve(std::size_t names, std::size_t bytes) {
  ends_.reserve(names);
  text_.reserve(bytes);
}

bool NodeNameList::contains(std::string_view name) const {
  for (std::string_view n : *this) {
    if (n == name) return true;
  }
  return false;
}

std::vector<std::string> NodeNameList::strings() const {
  return std::vector<std::string>(begin(), end());
}

NodeReasons::NodeReasons(
    std::initializer_list<std::pair<std::string_view, std::string_view>> entries) {
  for (const auto& [node, why] : entries) add(node, why);
}

NodeReasons::Reason NodeReasons::reason(std::string text) {
  reasons_.push_back(std::move(text));
  return static_cast<Reason>(reasons_.size() - 1);
}

void NodeReasons::add(std::string_view node, Reason why) {
  names_.append(node);
  entries_.push_back({names_.size(), why});
}

void NodeReasons::add(std::string_view node, std::string_view why) {
  if (reasons_.empty() || reasons_.back() != why) reason(std::string(why));
  add(node, static_cast<Reason>(reasons_.size() - 1));
}

bool NodeReasons::contains(std::string_view node) const {
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (name(i) == node) return true;
  }
  return false;
}

std::string_view NodeReasons::at(std::string_view node) const {
  for (std::size_t i = entries_.size(); i-- > 0;) {
    if (name(i) == node) return reasons_[entries_[i].reason];
  }
  throw std::out_of_range("NodeReasons::at: no node " + std::string(node));
}

std::vector<NodeReasons::Entry> NodeReasons::sorted() const {
  std::vector<Entry> out;
  out.reserve(entries_.size());
  bool in_order = true;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    out.push_back((*this)[i]);
    in_order = in_order && (i == 0 || out[i - 1].node < out[i].node);
  }
  if (in_order) return out;  // kube-scheduler often sends names in order: nothing to sort
  // Stable, so among repeats of a node the last added comes last and is the one kept.
  std::stable_sort(out.begin(), out.end(),
                   [](const Entry& a, const Entry& b) { return a.node < b.node; });
  std::size_t kept = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (i + 1 < out.size() && out[i + 1].node == out[i].node) continue;
    out[kept++] = out[i];
  }
  out.resize(kept);
  return out;
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
