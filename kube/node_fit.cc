#include "kube/node_fit.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <limits>
#include <set>
#include <utility>

namespace allox::kube {

using nlohmann::json;

namespace {

// The member `key` of `object`, or null when `object` is not an object or the member is absent
// or JSON null (the API server drops nulls). The whole key is looked up, a NUL byte in it too.
const json* find(const json* object, std::string_view key) {
  if (object == nullptr || !object->is_object()) return nullptr;
  auto it = object->find(key);
  return it == object->end() || it->is_null() ? nullptr : &*it;
}

// An optional string member: absent reads as "", another type makes the entry malformed.
bool optional_string(const json& object, const char* key, std::string& out) {
  const json* value = find(&object, key);
  if (value == nullptr) return true;
  if (!value->is_string()) return false;
  out = value->get<std::string>();
  return true;
}

// Go's strconv.ParseInt(s, 10, 64): an optional sign, then decimal digits only, in range.
std::optional<long long> parse_int64(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  unsigned long long magnitude = 0;
  auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), magnitude);
  if (error != std::errc() || end != s.data() + s.size()) return std::nullopt;
  constexpr unsigned long long kMax = 9223372036854775807ULL;
  if (magnitude > kMax + (negative ? 1 : 0)) return std::nullopt;
  if (negative)
    return magnitude == kMax + 1 ? std::numeric_limits<long long>::min()
                                 : -static_cast<long long>(magnitude);
  return static_cast<long long>(magnitude);
}

bool alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63 characters: a label name or value.
bool label_token(std::string_view s) {
  if (s.empty() || s.size() > 63 || !alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

// An RFC 1123 subdomain: lowercase alphanumeric labels joined by '.', '-' inside, <= 253.
bool dns_subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = s.find('.', start);
    const std::string_view part =
        s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    auto lower = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    if (part.empty() || !lower(part.front()) || !lower(part.back())) return false;
    if (!std::all_of(part.begin(), part.end(), [&](char c) { return lower(c) || c == '-'; }))
      return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// validation.IsQualifiedName: [prefix/]name, the prefix a DNS subdomain.
bool label_key(std::string_view key) {
  const std::size_t slash = key.find('/');
  if (slash == std::string_view::npos) return label_token(key);
  if (key.find('/', slash + 1) != std::string_view::npos) return false;
  return dns_subdomain(key.substr(0, slash)) && label_token(key.substr(slash + 1));
}

// validation.IsValidLabelValue: empty, or a label token.
bool label_value(std::string_view value) {
  return value.empty() || label_token(value);
}

// An In or NotIn requirement's values, sorted and unique (parses_as_label_requirement): a
// lookup is a binary search, so a pod listing 250,000 values costs each node microseconds.
bool contains(const std::vector<std::string>& values, std::string_view v) {
  return std::binary_search(values.begin(), values.end(), v);
}

// Which of the two effects that block scheduling a toleration's effect covers (bit 0
// NoSchedule, bit 1 NoExecute): an empty effect both, another effect neither.
unsigned blocking_effects(const std::string& effect) {
  if (effect.empty()) return 3;
  if (effect == "NoSchedule") return 1;
  if (effect == "NoExecute") return 2;
  return 0;
}

// A pod's tolerations indexed by what they tolerate, for many tolerations against many taints
// (10,000 of each: 5e7 pairs, half a second per node, compared one by one). Answers as
// tolerates() over every toleration, for taints that block scheduling. Its views point into
// the tolerations, which must outlive it.
class ToleratedIndex {
 public:
  explicit ToleratedIndex(const std::vector<Toleration>& tolerations) {
    for (const Toleration& t : tolerations) {
      const unsigned effects = blocking_effects(t.effect);
      if (effects == 0) continue;
      if (t.op == "Exists") {
        if (t.key.empty()) {
          every_key_ |= effects;
        } else {
          by_key_[t.key] |= effects;
        }
      } else if (t.op.empty() || t.op == "Equal") {
        if (t.key.empty()) {
          by_value_[t.value] |= effects;
        } else {
          by_key_value_[{t.key, t.value}] |= effects;
        }
      }  // any other operator tolerates nothing
    }
  }

  // Precondition: blocks_scheduling(taint).
  bool tolerates(const Taint& taint) const {
    const unsigned effect = taint.effect == "NoSchedule" ? 1 : 2;
    if ((every_key_ & effect) != 0) return true;
    auto has = [effect](const auto& map, const auto& key) {
      auto it = map.find(key);
      return it != map.end() && (it->second & effect) != 0;
    };
    return has(by_key_, std::string_view(taint.key)) ||
           has(by_value_, std::string_view(taint.value)) ||
           has(by_key_value_,
               std::pair<std::string_view, std::string_view>(taint.key, taint.value));
  }

 private:
  unsigned every_key_ = 0;                                      // Exists, no key
  std::map<std::string_view, unsigned, std::less<>> by_key_;    // Exists on a key
  std::map<std::string_view, unsigned, std::less<>> by_value_;  // Equal, no key: any key's value
  std::map<std::pair<std::string_view, std::string_view>, unsigned> by_key_value_;  // Equal
};

// From how many tolerations and taints the index pays (below, the pairs are cheaper).
constexpr std::size_t kIndexedTolerations = 64;

}  // namespace

NodeFacts node_facts(const json& node) {
  NodeFacts facts;
  const json* metadata = find(&node, "metadata");
  if (const json* name = find(metadata, "name"); name != nullptr && name->is_string())
    facts.name = name->get<std::string>();
  if (const json* labels = find(metadata, "labels"); labels != nullptr && labels->is_object()) {
    for (auto it = labels->begin(); it != labels->end(); ++it) {
      if (it->is_string()) facts.labels.emplace(it.key(), it->get<std::string>());
    }
  }
  const json* spec = find(&node, "spec");
  if (const json* cordoned = find(spec, "unschedulable"); cordoned != nullptr)
    facts.unschedulable = cordoned->is_boolean() && cordoned->get<bool>();
  if (const json* taints = find(spec, "taints"); taints != nullptr && taints->is_array()) {
    for (const json& entry : *taints) {
      if (!entry.is_object()) continue;
      const json* key = find(&entry, "key");
      const json* effect = find(&entry, "effect");
      if (key == nullptr || !key->is_string() || effect == nullptr || !effect->is_string())
        continue;
      Taint taint{key->get<std::string>(), "", effect->get<std::string>()};
      if (!optional_string(entry, "value", taint.value)) continue;
      facts.taints.push_back(std::move(taint));
    }
  }
  return facts;
}

bool tolerates(const Toleration& toleration, const Taint& taint) {
  if (!toleration.effect.empty() && toleration.effect != taint.effect) return false;
  if (!toleration.key.empty() && toleration.key != taint.key) return false;
  if (toleration.op.empty() || toleration.op == "Equal") return toleration.value == taint.value;
  return toleration.op == "Exists";
}

bool blocks_scheduling(const Taint& taint) {
  return taint.effect == "NoSchedule" || taint.effect == "NoExecute";
}

std::string untolerated_taint_reason(const Taint& taint) {
  return "node(s) had untolerated taint {" + taint.key + ": " + taint.value + "}";
}

// ---- NodeAffinity ---------------------------------------------------------------------------

NodeAffinity::NodeAffinity(const json& pod) {
  const json* spec = find(&pod, "spec");
  if (const json* selector = find(spec, "nodeSelector"); selector && selector->is_object()) {
    for (auto it = selector->begin(); it != selector->end(); ++it) {
      if (it->is_string()) selector_.emplace_back(it.key(), it->get<std::string>());
    }
  }
  const json* required = find(find(find(spec, "affinity"), "nodeAffinity"),
                              "requiredDuringSchedulingIgnoredDuringExecution");
  if (required == nullptr) return;
  required_ = true;
  // A list of requirements; false when one of them is not {key, operator, values} of strings.
  auto read = [](const json* list, std::vector<Requirement>& out) {
    if (list == nullptr) return true;
    if (!list->is_array()) return false;
    for (const json& r : *list) {
      const json* key = find(&r, "key");
      const json* op = find(&r, "operator");
      if (key == nullptr || !key->is_string() || op == nullptr || !op->is_string()) return false;
      Requirement requirement{key->get<std::string>(), op->get<std::string>(), {}, 0};
      if (const json* values = find(&r, "values"); values != nullptr) {
        if (!values->is_array()) return false;
        for (const json& v : *values) {
          if (!v.is_string()) return false;
          requirement.values.push_back(v.get<std::string>());
        }
      }
      out.push_back(std::move(requirement));
    }
    return true;
  };
  // labels.NewRequirement's checks, through nodeSelectorRequirementsAsSelector.
  auto parses_as_label_requirement = [](Requirement& r) {
    if (!label_key(r.key)) return false;
    if (r.op == "In" || r.op == "NotIn") {
      if (r.values.empty()) return false;
    } else if (r.op == "Exists" || r.op == "DoesNotExist") {
      if (!r.values.empty()) return false;
    } else if (r.op == "Gt" || r.op == "Lt") {
      if (r.values.size() != 1) return false;
      auto number = parse_int64(r.values.front());
      if (!number) return false;
      r.number = *number;
    } else {
      return false;
    }
    if (!std::all_of(r.values.begin(), r.values.end(),
                     [](const std::string& v) { return label_value(v); })) {
      return false;
    }
    if (r.op == "In" || r.op == "NotIn") {  // a set: looked up by contains()
      std::sort(r.values.begin(), r.values.end());
      r.values.erase(std::unique(r.values.begin(), r.values.end()), r.values.end());
    }
    return true;
  };
  std::set<std::string> names;
  bool every_term_names = true;
  const json* terms = find(required, "nodeSelectorTerms");
  if (terms != nullptr && terms->is_array()) {
    for (const json& t : *terms) {
      Term term;
      term.valid = t.is_object() && read(find(&t, "matchExpressions"), term.expressions) &&
                   read(find(&t, "matchFields"), term.fields);
      for (Requirement& r : term.expressions)
        term.valid = term.valid && parses_as_label_requirement(r);
      for (const Requirement& r : term.fields) {
        term.valid = term.valid && (r.op == "In" || r.op == "NotIn") && r.values.size() == 1;
      }
      // The PreFilter reads the pod as stored, parsed or not: the nodes this term allows by
      // name are the intersection of its `metadata.name In` lists.
      std::optional<std::set<std::string>> named;
      for (const Requirement& r : term.fields) {
        if (r.key != "metadata.name" || r.op != "In") continue;
        std::set<std::string> these(r.values.begin(), r.values.end());
        if (named) {
          std::set<std::string> both;
          std::set_intersection(named->begin(), named->end(), these.begin(), these.end(),
                                std::inserter(both, both.end()));
          these = std::move(both);
        }
        named = std::move(these);
      }
      if (named) {
        names.insert(named->begin(), named->end());
      } else {
        every_term_names = false;  // terms are ORed: this one may allow any node
      }
      terms_.push_back(std::move(term));
    }
  }
  if (every_term_names && !terms_.empty()) names_.emplace(names.begin(), names.end());
}

template <typename Label>
bool NodeAffinity::match(const Label& label, std::string_view name) const {
  for (const auto& [key, value] : selector_) {
    const std::string* have = label(key);
    if (have == nullptr || *have != value) return false;
  }
  if (!required_) return true;
  for (const Term& term : terms_) {
    if (!term.valid || (term.expressions.empty() && term.fields.empty())) continue;
    bool all = true;
    for (std::size_t k = 0; all && k < term.expressions.size(); ++k) {
      const Requirement& r = term.expressions[k];
      const std::string* have = label(r.key);
      if (r.op == "Exists") {
        all = have != nullptr;
      } else if (r.op == "DoesNotExist") {
        all = have == nullptr;
      } else if (r.op == "In") {
        all = have != nullptr && contains(r.values, *have);
      } else if (r.op == "NotIn") {
        all = have == nullptr || !contains(r.values, *have);
      } else {  // Gt, Lt
        const auto number = have != nullptr ? parse_int64(*have) : std::nullopt;
        all = number && (r.op == "Gt" ? *number > r.number : *number < r.number);
      }
    }
    // The field set holds metadata.name alone; any other field reads as "".
    for (std::size_t k = 0; all && k < term.fields.size(); ++k) {
      const Requirement& r = term.fields[k];
      const std::string_view field = r.key == "metadata.name" ? name : std::string_view();
      all = (field == r.values.front()) == (r.op == "In");
    }
    if (all) return true;
  }
  return false;
}

bool NodeAffinity::matches(const json* node, std::string_view name) const {
  const json* labels = find(find(node, "metadata"), "labels");
  return match(
      [labels](const std::string& key) -> const std::string* {
        const json* value = find(labels, key);
        return value != nullptr && value->is_string() ? &value->get_ref<const std::string&>()
                                                      : nullptr;
      },
      name);
}

bool NodeAffinity::matches(const std::map<std::string, std::string>& labels,
                           std::string_view name) const {
  return match(
      [&labels](const std::string& key) -> const std::string* {
        auto it = labels.find(key);
        return it == labels.end() ? nullptr : &it->second;
      },
      name);
}

// ---- PodPlacement ---------------------------------------------------------------------------

PodPlacement::PodPlacement(const json& pod) : affinity_(pod) {
  const json* list = find(find(&pod, "spec"), "tolerations");
  if (list == nullptr || !list->is_array()) return;
  for (const json& entry : *list) {
    if (!entry.is_object()) continue;
    Toleration toleration;
    if (!optional_string(entry, "key", toleration.key) ||
        !optional_string(entry, "operator", toleration.op) ||
        !optional_string(entry, "value", toleration.value) ||
        !optional_string(entry, "effect", toleration.effect)) {
      continue;
    }
    tolerations_.push_back(std::move(toleration));
  }
  static const Taint kCordoned{"node.kubernetes.io/unschedulable", "", "NoSchedule"};
  tolerates_unschedulable_ =
      std::any_of(tolerations_.begin(), tolerations_.end(),
                  [](const Toleration& t) { return tolerates(t, kCordoned); });
}

const Taint* PodPlacement::untolerated(const std::vector<Taint>& taints) const {
  if (tolerations_.size() >= kIndexedTolerations && taints.size() >= kIndexedTolerations) {
    const ToleratedIndex index(tolerations_);
    for (const Taint& taint : taints) {
      if (blocks_scheduling(taint) && !index.tolerates(taint)) return &taint;
    }
    return nullptr;
  }
  for (const Taint& taint : taints) {
    if (!blocks_scheduling(taint)) continue;
    const bool tolerated = std::any_of(tolerations_.begin(), tolerations_.end(),
                                       [&](const Toleration& t) { return tolerates(t, taint); });
    if (!tolerated) return &taint;
  }
  return nullptr;
}

std::optional<std::string> PodPlacement::refuses(const NodeFacts& node) const {
  if (node.unschedulable && !tolerates_unschedulable_) return std::string(kUnschedulableReason);
  if (const Taint* taint = untolerated(node.taints)) return untolerated_taint_reason(*taint);
  if (affinity_.any() && !affinity_.matches(node.labels, node.name))
    return std::string(kNodeAffinityReason);
  return std::nullopt;
}

}  // namespace allox::kube
