#include "kube/watch_event.h"

#include <cstdint>
#include <utility>

#include "core/json_sax.h"

namespace allox::kube {
namespace {

using nlohmann::json;

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// nlohmann's SAX interface (driven by json_sax::parse) building one value, dropping the members
// its FieldSet leaves out: a dropped subtree is only counted through, never built.
class Builder {
 public:
  explicit Builder(const FieldSet& root) : next_(&root) {}

  bool null() { return scalar(nullptr); }
  bool boolean(bool b) { return scalar(b); }
  bool number_integer(std::int64_t i) { return scalar(i); }
  bool number_unsigned(std::uint64_t u) { return scalar(u); }
  bool number_float(double d, const std::string&) { return scalar(d); }
  // Copied, not moved: the reader's scratch string keeps its capacity, so a string that is
  // dropped costs no allocation.
  bool string(std::string& text) { return scalar(std::as_const(text)); }
  bool start_object(std::size_t) { return open(json::value_t::object); }
  bool start_array(std::size_t) { return open(json::value_t::array); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& name) {
    if (skipping_ > 0) return true;
    next_ = stack_.back().fields->member(name);
    key_.swap(name);
    return true;
  }

  bool too_deep() const { return too_deep_; }
  json take() { return std::move(root_); }

 private:
  struct Open {
    json* value;
    const FieldSet* fields;
  };

  // What is kept of the value that starts now (null: dropped): an array's elements are kept as
  // the array is, an object's members as its key said.
  const FieldSet* fields_of_next() const {
    if (!stack_.empty() && stack_.back().value->is_array()) return stack_.back().fields;
    return next_;
  }
  // Where the value that starts now goes.
  json* place() {
    if (stack_.empty()) return &root_;
    json& open = *stack_.back().value;
    if (open.is_array()) return &open.emplace_back(nullptr);
    return &open[key_];
  }
  // Built only where it is kept.
  template <class T>
  bool scalar(T&& value) {
    if (skipping_ > 0 || fields_of_next() == nullptr) return true;
    *place() = json(std::forward<T>(value));
    return true;
  }
  bool open(json::value_t type) {
    if (++depth_ > kMaxWatchNesting) {
      too_deep_ = true;
      return false;
    }
    const FieldSet* fields = skipping_ > 0 ? nullptr : fields_of_next();
    if (fields == nullptr) {
      ++skipping_;
      return true;
    }
    json* value = place();
    *value = json(type);
    stack_.push_back({value, fields});
    return true;
  }
  bool close() {
    --depth_;
    if (skipping_ > 0) {
      --skipping_;
    } else {
      stack_.pop_back();
    }
    return true;
  }

  json root_;
  std::vector<Open> stack_;
  std::string key_;
  const FieldSet* next_;
  int depth_ = 0;
  int skipping_ = 0;  // depth inside a dropped subtree
  bool too_deep_ = false;
};

std::string resource_version_of(const json& object) {
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return "";
  auto rv = metadata->find("resourceVersion");
  return rv != metadata->end() && rv->is_string() ? rv->get<std::string>() : "";
}

}  // namespace

FieldSet FieldSet::only(std::initializer_list<std::string_view> paths) {
  FieldSet set;
  set.everything_ = false;
  for (std::string_view path : paths) set.keep(path);
  return set;
}

void FieldSet::keep(std::string_view path) {
  if (everything_ || path.empty()) return;
  const std::size_t dot = path.find('.');
  const std::string_view name = path.substr(0, dot);
  FieldSet* child = nullptr;
  for (auto& [member_name, fields] : members_) {
    if (iequals(member_name, name)) child = &fields;
  }
  if (child == nullptr) {
    FieldSet fresh;
    fresh.everything_ = false;
    members_.emplace_back(std::string(name), std::move(fresh));
    child = &members_.back().second;
  }
  if (dot == std::string_view::npos) {
    child->everything_ = true;
    child->members_.clear();
    return;
  }
  child->keep(path.substr(dot + 1));
}

const FieldSet* FieldSet::member(std::string_view name) const {
  if (everything_) return this;
  for (const auto& [member_name, fields] : members_) {
    if (iequals(member_name, name)) return &fields;
  }
  return nullptr;
}

WatchDecoder::WatchDecoder(FieldSet object) {
  object.keep("metadata.name");
  object.keep("metadata.resourceVersion");
  object.keep("code");
  line_ = FieldSet::only({"type"});
  line_.members_.emplace_back("object", std::move(object));
}

Expected<WatchEvent> WatchDecoder::decode(std::string_view line) const {
  Builder builder(line_);
  const json_sax::Outcome outcome = json_sax::parse(line, builder);
  if (builder.too_deep()) {
    return Error{"watch event: nested deeper than " + std::to_string(kMaxWatchNesting) +
                 " levels"};
  }
  if (!outcome.parsed) {
    return Error{"watch event: " + (outcome.error.empty() ? std::string("malformed JSON")
                                                          : outcome.error)};
  }
  json value = builder.take();
  if (!value.is_object()) return Error{"watch event: not a JSON object"};
  auto type = value.find("type");
  auto object = value.find("object");
  if (type == value.end() || !type->is_string()) return Error{"watch event: type missing"};
  if (object == value.end() || !object->is_object()) return Error{"watch event: object missing"};
  WatchEvent event;
  const std::string& name = type->get_ref<const std::string&>();
  if (name == "ERROR") {
    event.type = WatchEvent::Type::kError;
    auto code = object->find("code");
    event.error_code = code != object->end() && code->is_number_integer() ? code->get<int>() : 0;
    event.object = std::move(*object);
    return event;
  }
  if (name == "ADDED") {
    event.type = WatchEvent::Type::kAdded;
  } else if (name == "MODIFIED") {
    event.type = WatchEvent::Type::kModified;
  } else if (name == "DELETED") {
    event.type = WatchEvent::Type::kDeleted;
  } else if (name == "BOOKMARK") {
    event.type = WatchEvent::Type::kBookmark;
  } else {
    return Error{"watch event: unknown type \"" + name + "\""};
  }
  event.resource_version = resource_version_of(*object);
  if (event.resource_version.empty()) {
    return Error{"watch event: object.metadata.resourceVersion missing"};
  }
  if (event.type != WatchEvent::Type::kBookmark) {
    const json& metadata = (*object)["metadata"];
    auto name_field = metadata.find("name");
    if (name_field == metadata.end() || !name_field->is_string()) {
      return Error{"watch event: object.metadata.name missing"};
    }
  }
  event.object = std::move(*object);
  return event;
}

Expected<WatchEvent> parse_watch_event(std::string_view line) {
  static const WatchDecoder whole;
  return whole.decode(line);
}

}  // namespace allox::kube
