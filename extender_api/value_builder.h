// Builds one JSON value from a one-pass reader's SAX events, keeping everything or only the parts
// of a pod alloxd reads (PodFields::kRead). Not a public header: wire_readers.cc's readers use it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "extender_api/wire_read.h"

namespace allox::extender::wire_read {

using nlohmann::json;

// What of a JSON value ValueBuilder keeps: everything, or (PodFields::kRead) the pod's fields
// alloxd/model/pod.h reads, matched case-insensitively as find_key does.
enum class Scope : unsigned char { kAll, kPod, kMetadata, kSpec, kContainers, kContainer };

// The scope of the value under `key` in an object of scope `scope`; nullopt: dropped.
inline std::optional<Scope> child_scope(Scope scope, std::string_view key) {
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
      // ours(); pod_device_types (nodeSelector, affinity); the requests (containers, init
      // containers, overhead)
      for (std::string_view kept : {"schedulerName", "nodeSelector", "affinity", "overhead"}) {
        if (iequals(key, kept)) return Scope::kAll;
      }
      if (iequals(key, "containers") || iequals(key, "initContainers")) {
        return Scope::kContainers;
      }
      return std::nullopt;
    case Scope::kContainer:
      if (iequals(key, "resources") || iequals(key, "restartPolicy")) return Scope::kAll;
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

}  // namespace allox::extender::wire_read
