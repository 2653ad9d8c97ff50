// Field and label selectors of list and watch requests (?fieldSelector=, ?labelSelector=), with
// the API server's rules:
//   - a field selector is a comma-separated conjunction of `path=value`, `path==value` and
//     `path!=value`; only the fields the API server indexes for that resource are allowed (pods:
//     metadata.name, metadata.namespace, spec.nodeName, spec.schedulerName, status.phase, ...);
//     anything else is a 400 "field label not supported: <path>", as kube-apiserver answers;
//   - a label selector supports `k=v`, `k==v`, `k!=v`, `k` (exists), `!k`, `k in (a,b)` and
//     `k notin (a,b)`.
// A missing field compares as the empty string (so `spec.nodeName=` selects unbound pods).
// Thread-safe: immutable after parsing.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kubesim/api_error.h"

namespace allox::emulator {

class Selector {
 public:
  // Everything matches.
  Selector() = default;
  static ApiResult<Selector> parse(const std::string& plural, const std::string& field_selector,
                                   const std::string& label_selector);
  bool matches(const nlohmann::json& object) const;
  bool empty() const { return fields_.empty() && labels_.empty(); }

 private:
  struct FieldTerm {
    std::vector<std::string> path;
    std::string value;
    bool equal = true;
  };
  struct LabelTerm {
    enum class Op { kEqual, kNotEqual, kExists, kNotExists, kIn, kNotIn } op = Op::kEqual;
    std::string key;
    std::vector<std::string> values;
  };
  std::vector<FieldTerm> fields_;
  std::vector<LabelTerm> labels_;
};

}  // namespace allox::emulator
