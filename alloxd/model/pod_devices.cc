#include "alloxd/model/pod_devices.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>

#include "alloxd/config.h"
#include "extender_api/wire.h"

namespace allox::extender {
namespace {

using nlohmann::json;
using Rule = DeviceMapping::NodeLabelRule;

// One label requirement on a rule key: key Op values.
struct Requirement {
  std::string key;
  std::string op;  // In, NotIn, Exists, DoesNotExist
  std::set<std::string> values;
};

// A node of one type as the rules see it: the rule it matched (a label type), or none (plain:
// its value of any rule key is one no rule names, or absent).
bool allows(const Requirement& r, const Rule* node_rule, const std::vector<Rule>& rules) {
  if (node_rule != nullptr && node_rule->label == r.key) {
    const bool listed = r.values.count(node_rule->value) > 0;
    if (r.op == "In") return listed;
    if (r.op == "NotIn") return !listed;
    if (r.op == "Exists") return true;
    if (r.op == "DoesNotExist") return false;
    return true;
  }
  if (node_rule != nullptr) return true;  // its value of another key is unknown: may hold
  // Plain: the key's value is absent or one no rule names.
  if (r.op == "In") {
    return std::any_of(r.values.begin(), r.values.end(), [&](const std::string& v) {
      return std::none_of(rules.begin(), rules.end(),
                          [&](const Rule& rule) { return rule.label == r.key && rule.value == v; });
    });
  }
  return true;
}

const json* at(const json& object, std::initializer_list<std::string_view> path) {
  const json* node = &object;
  for (std::string_view key : path) {
    if (!node->is_object()) return nullptr;
    node = find_key(*node, key);
    if (node == nullptr) return nullptr;
  }
  return node;
}

// The requirements of one nodeSelectorTerm on rule keys.
std::vector<Requirement> term_requirements(const json& term, const std::set<std::string>& keys) {
  std::vector<Requirement> out;
  const json* expressions = term.is_object() ? find_key(term, "matchExpressions") : nullptr;
  if (expressions == nullptr || !expressions->is_array()) return out;
  for (const json& e : *expressions) {
    if (!e.is_object()) continue;
    const json* key = find_key(e, "key");
    const json* op = find_key(e, "operator");
    if (key == nullptr || !key->is_string() || op == nullptr || !op->is_string()) continue;
    if (!keys.count(key->get<std::string>())) continue;
    Requirement r{key->get<std::string>(), op->get<std::string>(), {}};
    if (const json* values = find_key(e, "values"); values != nullptr && values->is_array()) {
      for (const json& v : *values) {
        if (v.is_string()) r.values.insert(v.get<std::string>());
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

std::vector<DeviceType> pod_device_types(const json& pod, const DeviceMapping& mapping,
                                         const DeviceType& plain) {
  std::vector<DeviceType> types = mapping.interchangeable(plain);
  const DeviceMapping::Resource* resource = mapping.resource_of(plain);
  if (types.size() < 2 || resource == nullptr) return types;
  const std::vector<Rule>& rules = resource->node_labels;
  std::set<std::string> keys;
  for (const Rule& rule : rules) keys.insert(rule.label);

  // Every requirement of the nodeSelector, and the affinity's terms (alternatives).
  std::vector<Requirement> selector;
  if (const json* s = at(pod, {"spec", "nodeSelector"}); s != nullptr && s->is_object()) {
    for (const auto& [key, value] : s->items()) {
      if (keys.count(key) && value.is_string()) {
        selector.push_back({key, "In", {value.get<std::string>()}});
      }
    }
  }
  std::vector<std::vector<Requirement>> terms;
  const json* listed =
      at(pod, {"spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
               "nodeSelectorTerms"});
  if (listed != nullptr && listed->is_array()) {
    for (const json& term : *listed) terms.push_back(term_requirements(term, keys));
  }
  if (terms.empty()) terms.emplace_back();  // no affinity: one term that requires nothing

  // A node of `rule` (null: plain) passes when the selector holds and one term does.
  auto passes = [&](const Rule* rule) {
    auto all = [&](const std::vector<Requirement>& rs) {
      return std::all_of(rs.begin(), rs.end(),
                         [&](const Requirement& r) { return allows(r, rule, rules); });
    };
    return all(selector) && std::any_of(terms.begin(), terms.end(), all);
  };
  std::vector<DeviceType> allowed;
  if (passes(nullptr)) allowed.push_back(plain);
  for (const DeviceType& type : types) {
    if (type == plain) continue;
    const bool any = std::any_of(rules.begin(), rules.end(), [&](const Rule& rule) {
      return rule.device == type && passes(&rule);
    });
    if (any) allowed.push_back(type);
  }
  if (allowed.empty()) allowed.push_back(plain);
  return allowed;
}

}  // namespace allox::extender
