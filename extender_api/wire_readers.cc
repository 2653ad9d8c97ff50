// The one-pass readers of the two large bodies, ExtenderArgs (a /filter or /prioritize request)
// and ExtenderFilterResult (a /filter answer): SAX events from core/json_sax.h straight into the
// wire types, building JSON values only for the pods and nodes kept as received.
#include "extender_api/wire.h"

#include <optional>
#include <string>
#include <vector>

#include "extender_api/value_builder.h"
#include "extender_api/wire_read.h"
#include "core/json_sax.h"

namespace allox::extender {
namespace {

using namespace wire_read;

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

// The SAX interface json_sax::parse drives, shared by the one-pass readers below: a scalar
// becomes the reader's value(type, make), make() building it as JSON only where the reader keeps
// it, and objects and arrays its open(type) and close(), each called at the depth of the object
// or array itself. The base tracks what every reader needs of the document: its depth (bounded
// by kMaxNesting), its top-level type and the parser's verdict.
template <class Reader>
class SaxReader {
 public:
  using string_t = std::string;
  using number_integer_t = std::int64_t;
  using number_unsigned_t = std::uint64_t;
  using number_float_t = double;
  using binary_t = json::binary_t;

  bool null() {
    return self().value(json::value_t::null, [] { return json(); });
  }
  bool boolean(bool b) {
    return self().value(json::value_t::boolean, [b] { return json(b); });
  }
  bool number_integer(std::int64_t n) {
    return self().value(json::value_t::number_integer, [n] { return json(n); });
  }
  bool number_unsigned(std::uint64_t n) {
    return self().value(json::value_t::number_unsigned, [n] { return json(n); });
  }
  bool number_float(double n, const std::string&) {
    return self().value(json::value_t::number_float, [n] { return json(n); });
  }
  bool binary(binary_t&) { return true; }  // JSON text has no binary values

  bool start_object(std::size_t) { return start(json::value_t::object); }
  bool start_array(std::size_t) { return start(json::value_t::array); }
  bool end_object() { return end(); }
  bool end_array() { return end(); }

  // Reads `body` in one pass; what the reader made of it (its finish()).
  auto read(std::string_view body) {
    json_sax::Outcome outcome = json_sax::parse(body, self());
    syntax_error_ = std::move(outcome.error);  // a syntax error wins over anything noted
    return self().finish(outcome.parsed);
  }

 protected:
  // What every reader checks before its own fields (sax_frame_error).
  std::optional<Error> frame_error(bool parsed, std::string_view document) const {
    return sax_frame_error(too_deep_, syntax_error_, parsed, top_type_, document);
  }

  int depth_ = 0;
  json::value_t top_type_ = json::value_t::discarded;

 private:
  Reader& self() { return static_cast<Reader&>(*this); }
  // An object or array opens at the current depth, then the document is one level deeper;
  // false (the parse stops there) past kMaxNesting.
  bool start(json::value_t type) {
    self().open(type);
    if (++depth_ > kMaxNesting) {
      too_deep_ = true;
      return false;
    }
    return true;
  }
  bool end() {
    --depth_;
    self().close();
    return true;
  }

  std::string syntax_error_;
  bool too_deep_ = false;
};

// A `Nodes` value (a v1.NodeList, null when absent) moved into `objects`, each item checked to
// be a node with a name; `names`, when given, gets those names in order.
Status take_node_items(const json& nodes, std::optional<std::vector<json>>& objects,
                       NodeNameList* names) {
  if (nodes.is_null()) return OkStatus();
  if (!nodes.is_object()) return wrong_type("Nodes", "a NodeList object", nodes);
  objects.emplace();
  const json* found = find_key(nodes, "items");
  if (found == nullptr || found->is_null()) return OkStatus();
  if (!found->is_array()) return wrong_type("Nodes.items", "a list", *found);
  const json& items = *found;
  objects->reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto name = node_name(items[i], "Nodes.items[" + std::to_string(i) + "]");
    if (!name) return name.error();
    if (names != nullptr) names->push_back(*name);
    objects->push_back(items[i]);
  }
  return OkStatus();
}

// ExtenderArgs in one pass: `NodeNames` go straight into their list, `Pod` and `Nodes` are built
// as JSON values (the pod pruned for kRead), every other field is skipped. Type errors are noted
// and the body is read to its end, so a syntax error anywhere wins as it does for a DOM parse;
// the checks of the built values then run in the order parse_extender_args always had.
class ExtenderArgsReader : public SaxReader<ExtenderArgsReader> {
 public:
  explicit ExtenderArgsReader(PodFields pod_fields) : pod_fields_(pod_fields) {}

  bool string(std::string& s) {
    if (depth_ == 2 && target_ == Target::kNames && names_open_) {
      node_names_->push_back(s);
      ++names_index_;
      return true;
    }
    return value(json::value_t::string, [&s] { return json(s); });
  }

  bool key(std::string& key) {
    if (depth_ == 1) {
      choose_target(key);
    } else if (building()) {
      builder_.key(key);
    }
    return true;
  }

  Expected<ExtenderArgs> finish(bool parsed) {
    if (auto error = frame_error(parsed, "ExtenderArgs")) {
      return *std::move(error);
    }
    if (pod_.is_null()) return Error{"Pod: missing"};
    if (!pod_.is_object()) return wrong_type("Pod", "an object", pod_);
    args_.pod = std::move(pod_);
    if (auto s = take_node_items(nodes_, args_.node_objects, &args_.node_object_names); !s) {
      return s.error();
    }
    if (!names_error_.empty()) return Error{names_error_};
    args_.node_names = std::move(node_names_);
    return std::move(args_);
  }

 private:
  friend class SaxReader<ExtenderArgsReader>;
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

  void open(json::value_t type) {
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
  }

  void close() {
    if (building()) {
      builder_.end();
      if (depth_ == 1) done_building();
    } else if (target_ == Target::kNames && depth_ == 1) {
      names_open_ = false;
    }
  }

  // The value of a top-level Pod or Nodes key is complete.
  void done_building() {
    (target_ == Target::kPod ? pod_ : nodes_) = builder_.take();
    target_ = Target::kSkip;
  }

  PodFields pod_fields_;
  Target target_ = Target::kSkip;
  Field pod_field_, nodes_field_, names_field_;
  ValueBuilder builder_;
  json pod_;
  json nodes_;
  std::optional<NodeNameList> node_names_;
  bool names_open_ = false;
  std::size_t names_index_ = 0;
  std::string names_error_;
  ExtenderArgs args_;
};

// ExtenderFilterResult in one pass, the way ExtenderArgsReader reads a request: `NodeNames` go
// straight into their list, `FailedNodes` and `FailedAndUnresolvableNodes` into NodeReasons (a
// run of nodes with the same reason stores it once), `Error` into its string, and only `Nodes`
// (full v1.Node objects) is built as JSON. A 5,000-node answer is then a few allocations, not a
// DOM of 5,000 strings. The first type error of each field is noted and the body is read to its
// end (a syntax error anywhere wins); errors are reported in the fields' order.
class FilterResultReader : public SaxReader<FilterResultReader> {
 public:
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

  Expected<FilterResult> finish(bool parsed) {
    if (auto error = frame_error(parsed, "ExtenderFilterResult")) {
      return *std::move(error);
    }
    if (auto s = take_node_items(nodes_, result_.node_objects, nullptr); !s) return s.error();
    for (const std::string& error : errors_) {
      if (!error.empty()) return Error{error};
    }
    return std::move(result_);
  }

 private:
  friend class SaxReader<FilterResultReader>;
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

  void open(json::value_t type) {
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
  }

  void close() {
    if (target_ == Target::kNodes) {
      builder_.end();
      if (depth_ == 1) done_building();
    } else if (depth_ == 1) {
      open_ = false;
    }
  }

  void done_building() {
    nodes_ = builder_.take();
    target_ = Target::kSkip;
  }

  Target target_ = Target::kSkip;
  bool exact_[std::size(kFields)] = {};
  std::string errors_[std::size(kFields)];
  bool open_ = false;      // inside the list or map of a NodeNames / FailedNodes field
  std::size_t index_ = 0;  // the next element of that list
  std::string key_;        // the node the next reason belongs to
  ValueBuilder builder_;
  json nodes_;
  FilterResult result_;
};

}  // namespace

Expected<ExtenderArgs> parse_extender_args(std::string_view body, PodFields pod_fields) {
  return ExtenderArgsReader(pod_fields).read(body);
}

Expected<FilterResult> parse_filter_result(std::string_view body) {
  return FilterResultReader().read(body);
}

}  // namespace allox::extender
