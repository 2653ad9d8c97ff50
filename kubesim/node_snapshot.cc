#include "kubesim/node_snapshot.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace allox::emulator {

std::int64_t to_milli(double quantity) {
  return static_cast<std::int64_t>(std::llround(quantity * 1000));
}

namespace {

using nlohmann::json;

const json* member(const json* object, const char* key) {
  if (object == nullptr || !object->is_object()) return nullptr;
  auto it = object->find(key);
  return it == object->end() || it->is_null() ? nullptr : &*it;
}

std::string string_of(const json& value) {
  return value.is_string() ? value.get<std::string>() : "";
}

}  // namespace

NodeAffinity::NodeAffinity(const json& pod) {
  const json* spec = member(&pod, "spec");
  if (const json* selector = member(spec, "nodeSelector"); selector && selector->is_object()) {
    for (auto it = selector->begin(); it != selector->end(); ++it)
      selector_.emplace_back(it.key(), string_of(*it));
  }
  const json* required = member(member(member(spec, "affinity"), "nodeAffinity"),
                                "requiredDuringSchedulingIgnoredDuringExecution");
  if (required == nullptr) return;
  required_ = true;
  auto read = [](const json* list) {
    std::vector<Requirement> out;
    if (list == nullptr || !list->is_array()) return out;
    for (const json& r : *list) {
      if (!r.is_object()) continue;
      Requirement requirement{
          string_of(r.value("key", json())), string_of(r.value("operator", json())), {}};
      if (const json* values = member(&r, "values"); values && values->is_array()) {
        for (const json& v : *values) requirement.values.push_back(string_of(v));
      }
      out.push_back(std::move(requirement));
    }
    return out;
  };
  std::set<std::string> names;
  bool every_term_names = true;
  if (const json* terms = member(required, "nodeSelectorTerms"); terms && terms->is_array()) {
    for (const json& t : *terms) {
      Term term{read(member(&t, "matchExpressions")), read(member(&t, "matchFields"))};
      // The nodes this term allows by name: the intersection of its `metadata.name In` lists.
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

bool NodeAffinity::matches(const json* node, std::string_view name) const {
  const json* labels = member(member(node, "metadata"), "labels");
  auto label = [&](const std::string& key) -> const json* { return member(labels, key.c_str()); };
  for (const auto& [key, value] : selector_) {
    const json* have = label(key);
    if (have == nullptr || string_of(*have) != value) return false;
  }
  if (!required_) return true;
  auto in = [](const std::vector<std::string>& values, std::string_view v) {
    return std::find(values.begin(), values.end(), v) != values.end();
  };
  for (const Term& term : terms_) {
    if (term.expressions.empty() && term.fields.empty()) continue;  // matches no node
    bool all = true;
    for (const Requirement& r : term.expressions) {
      const json* have = label(r.key);
      if (r.op == "Exists") {
        all = have != nullptr;
      } else if (r.op == "DoesNotExist") {
        all = have == nullptr;
      } else if (r.op == "In") {
        all = have != nullptr && in(r.values, string_of(*have));
      } else if (r.op == "NotIn") {
        all = have == nullptr || !in(r.values, string_of(*have));
      } else {
        all = false;
      }
      if (!all) break;
    }
    for (std::size_t k = 0; all && k < term.fields.size(); ++k) {
      const Requirement& r = term.fields[k];
      if (r.key != "metadata.name") {
        all = false;
      } else if (r.op == "In") {
        all = in(r.values, name);
      } else if (r.op == "NotIn") {
        all = !in(r.values, name);
      } else {
        all = false;
      }
    }
    if (all) return true;
  }
  return false;
}

NodeSnapshot::NodeSnapshot(const std::set<std::string>& ignored) {
  pods_ = resource("pods");
  for (const std::string& name : ignored) resources_[resource(name)].ignored = true;
  resources_[pods_].ignored = false;  // kube-scheduler only ignores extended resources
}

ResourceId NodeSnapshot::resource(std::string_view name) {
  auto [it, added] =
      resource_ids_.try_emplace(std::string(name), static_cast<ResourceId>(resources_.size()));
  if (added) resources_.push_back({std::string(name), false});
  return it->second;
}

ResourceAmounts NodeSnapshot::amounts(const std::map<std::string, double>& quantities) {
  ResourceAmounts out;
  out.reserve(quantities.size());
  for (const auto& [name, value] : quantities) out.push_back({resource(name), to_milli(value)});
  return out;
}

NodeSnapshot::Node* NodeSnapshot::find_mutable(std::string_view name) {
  const std::size_t i = index_of(name);
  return i == nodes_.size() ? nullptr : nodes_[i].get();
}

const NodeSnapshot::Node* NodeSnapshot::find(std::string_view name) const {
  const std::size_t i = index_of(name);
  return i == nodes_.size() ? nullptr : nodes_[i].get();
}

std::size_t NodeSnapshot::index_of(std::string_view name) const {
  auto it = std::lower_bound(
      nodes_.begin(), nodes_.end(), name,
      [](const std::unique_ptr<Node>& n, std::string_view v) { return n->name < v; });
  return it != nodes_.end() && (*it)->name == name ? static_cast<std::size_t>(it - nodes_.begin())
                                                   : nodes_.size();
}

bool NodeSnapshot::upsert(const std::string& name, ObjectPtr object,
                          const std::map<std::string, double>& allocatable, bool unschedulable) {
  auto it = std::lower_bound(
      nodes_.begin(), nodes_.end(), name,
      [](const std::unique_ptr<Node>& n, const std::string& v) { return n->name < v; });
  bool added = false;
  if (it == nodes_.end() || (*it)->name != name) {
    const auto row = static_cast<std::ptrdiff_t>(it - nodes_.begin());
    it = nodes_.insert(it, std::make_unique<Node>());
    (*it)->name = name;
    free_.insert(free_.begin() + row * static_cast<std::ptrdiff_t>(stride_), stride_, 0);
    flags_.insert(flags_.begin() + row, 0);
    added = true;
  }
  Node& node = **it;
  const bool changed =
      added || unschedulable != node.unschedulable || allocatable != node.quantities;
  node.allocatable.assign(resources_.size(), 0);
  node.declared.assign(resources_.size(), false);
  for (const auto& [resource_name, value] : allocatable) {
    const ResourceId r = resource(resource_name);
    if (r >= node.allocatable.size()) {
      node.allocatable.resize(r + 1, 0);
      node.declared.resize(r + 1, false);
    }
    node.allocatable[r] = to_milli(value);
    node.declared[r] = true;
  }
  node.quantities = allocatable;
  node.object = std::move(object);
  node.unschedulable = unschedulable;
  node.declares_pods = node.declares(pods_);
  if (resources_.size() > stride_) {
    relayout();
  } else {
    write_row(static_cast<std::size_t>(it - nodes_.begin()));
  }
  return changed;
}

void NodeSnapshot::write_row(std::size_t i) {
  const Node& node = *nodes_[i];
  std::int64_t* row = free_.data() + i * stride_;
  for (std::size_t r = 0; r < stride_; ++r) {
    row[r] = node.allocatable_of(static_cast<ResourceId>(r)) -
             node.requested_of(static_cast<ResourceId>(r));
  }
  flags_[i] = static_cast<std::uint8_t>((node.unschedulable ? kUnschedulable : 0) |
                                        (node.declares_pods ? kDeclaresPods : 0));
}

void NodeSnapshot::relayout() {
  stride_ = resources_.size();
  free_.assign(nodes_.size() * stride_, 0);
  flags_.assign(nodes_.size(), 0);
  for (std::size_t i = 0; i < nodes_.size(); ++i) write_row(i);
}

void NodeSnapshot::remove(const std::string& name) {
  const std::size_t i = index_of(name);
  if (i == nodes_.size()) return;
  const auto row = static_cast<std::ptrdiff_t>(i);
  nodes_.erase(nodes_.begin() + row);
  free_.erase(free_.begin() + row * static_cast<std::ptrdiff_t>(stride_),
              free_.begin() + (row + 1) * static_cast<std::ptrdiff_t>(stride_));
  flags_.erase(flags_.begin() + row);
}

void NodeSnapshot::add_pod(const std::string& node_name, const std::string& key, int priority,
                           const ResourceAmounts& requests) {
  Node* node = find_mutable(node_name);
  if (node == nullptr || !node->pods.emplace(key, priority).second) return;
  ++node->priorities[priority];
  for (const ResourceAmount& a : requests) {
    if (a.resource >= node->requested.size()) node->requested.resize(a.resource + 1, 0);
    node->requested[a.resource] += a.milli;
  }
  write_row(index_of(node_name));
}

void NodeSnapshot::remove_pod(const std::string& node_name, const std::string& key,
                              const ResourceAmounts& requests) {
  Node* node = find_mutable(node_name);
  if (node == nullptr) return;
  auto held = node->pods.find(key);
  if (held == node->pods.end()) return;
  auto count = node->priorities.find(held->second);
  if (count != node->priorities.end() && --count->second == 0) node->priorities.erase(count);
  node->pods.erase(held);
  for (const ResourceAmount& a : requests) {
    if (a.resource >= node->requested.size()) node->requested.resize(a.resource + 1, 0);
    node->requested[a.resource] -= a.milli;
  }
  write_row(index_of(node_name));
}

void NodeSnapshot::set_nominated(const std::vector<Nominated>& nominated) {
  ++nominated_cycle_;
  any_nominated_ = false;
  for (const Nominated& n : nominated) {
    Node* node = find_mutable(n.node);
    if (node == nullptr) continue;
    if (node->nominated_cycle != nominated_cycle_) {
      node->nominated_cycle = nominated_cycle_;
      node->nominated.assign(resources_.size(), 0);
    }
    for (const ResourceAmount& a : *n.requests) {
      if (a.resource >= node->nominated.size()) node->nominated.resize(a.resource + 1, 0);
      node->nominated[a.resource] += a.milli;
    }
    any_nominated_ = true;
  }
}

bool NodeSnapshot::fits(std::size_t i, const ResourceAmounts& pod, Failures* failures,
                        const NodeAffinity* affinity) const {
  static const std::vector<const ResourceAmounts*> none;
  return fits_without(i, pod, none, failures, affinity);
}

bool NodeSnapshot::fits_without(std::size_t i, const ResourceAmounts& pod,
                                const std::vector<const ResourceAmounts*>& freed,
                                Failures* failures, const NodeAffinity* affinity) const {
  const Node& node = *nodes_[i];
  if (node.unschedulable) {
    if (failures != nullptr) ++failures->unschedulable;
    return false;
  }
  if (affinity != nullptr && !affinity->matches(node.object.get(), node.name)) {
    if (failures != nullptr) ++failures->affinity;
    return false;
  }
  const bool nominated = any_nominated_ && node.nominated_cycle == nominated_cycle_;
  bool fit = true;
  for (const ResourceAmount& a : pod) {
    if (a.milli <= 0 || resources_[a.resource].ignored) continue;
    if (a.resource == pods_ && !node.declares_pods) continue;
    std::int64_t used = node.requested_of(a.resource);
    if (nominated && a.resource < node.nominated.size()) used += node.nominated[a.resource];
    for (const ResourceAmounts* gone : freed) {
      for (const ResourceAmount& g : *gone) {
        if (g.resource == a.resource) used -= g.milli;
      }
    }
    if (used + a.milli <= node.allocatable_of(a.resource)) continue;
    if (failures == nullptr) return false;
    fit = false;
    if (a.resource == pods_) {
      ++failures->too_many_pods;
    } else {
      if (a.resource >= failures->insufficient.size())
        failures->insufficient.resize(resources_.size(), 0);
      ++failures->insufficient[a.resource];
    }
  }
  return fit;
}

void NodeSnapshot::Failures::flush(const NodeSnapshot& snapshot, Diagnosis& d) {
  if (unschedulable > 0) {
    d.add("node(s) were unschedulable", unschedulable);
    d.plugins.insert("NodeUnschedulable");
  }
  if (affinity > 0) {
    d.add("node(s) didn't match Pod's node affinity/selector", affinity);
    d.plugins.insert("NodeAffinity");
  }
  bool resources = too_many_pods > 0;
  if (too_many_pods > 0) d.add("Too many pods", too_many_pods);
  for (std::size_t r = 0; r < insufficient.size(); ++r) {
    if (insufficient[r] == 0) continue;
    d.add("Insufficient " + snapshot.resource_name(static_cast<ResourceId>(r)), insufficient[r]);
    resources = true;
  }
  if (resources) d.plugins.insert("NodeResourcesFit");
  unschedulable = affinity = too_many_pods = 0;
  std::fill(insufficient.begin(), insufficient.end(), 0);
}

std::size_t NodeSnapshot::find_fit(const ResourceAmounts& pod, std::size_t start, std::size_t want,
                                   std::vector<std::string>& feasible, Diagnosis& d,
                                   const NodeAffinity* affinity) const {
  const std::size_t all = nodes_.size();
  if (all == 0) return 0;
  if (affinity != nullptr && affinity->names()) {
    // The PreFilter's nodes alone; those it left out (and names no node holds) are the
    // filter's rejections.
    Failures failures;
    std::size_t evaluated = 0;
    for (const std::string& name : *affinity->names()) {
      const std::size_t i = index_of(name);
      if (i == all) continue;
      ++evaluated;
      if (fits(i, pod, &failures, affinity)) {
        feasible.push_back(nodes_[i]->name);
      }
    }
    failures.affinity += all - evaluated;
    failures.flush(*this, d);
    return 0;
  }
  start %= all;
  // The pod's checked requests, resolved once: amount > 0 and not ignored.
  struct Check {
    ResourceId resource;
    std::int64_t milli;
    bool pods;
  };
  std::vector<Check> checks;
  for (const ResourceAmount& a : pod) {
    if (a.milli > 0 && !resources_[a.resource].ignored)
      checks.push_back({a.resource, a.milli, a.resource == pods_});
  }
  Failures failures;
  failures.insufficient.assign(resources_.size(), 0);
  std::size_t processed = 0, found = 0;
  for (std::size_t k = 0; k < all && found < want; ++k, ++processed) {
    std::size_t i = start + k;
    if (i >= all) i -= all;
    const std::uint8_t flags = flags_[i];
    bool fit = true;
    if ((flags & kUnschedulable) != 0) {
      ++failures.unschedulable;
      fit = false;
    } else if (affinity != nullptr &&
               !affinity->matches(nodes_[i]->object.get(), nodes_[i]->name)) {
      ++failures.affinity;
      fit = false;
    } else if (any_nominated_ && nodes_[i]->nominated_cycle == nominated_cycle_) {
      fit = fits(i, pod, &failures);  // pods nominated here count: the general path
    } else {
      const std::int64_t* row = free_.data() + i * stride_;
      for (const Check& c : checks) {
        if (c.pods && (flags & kDeclaresPods) == 0) continue;
        if (c.resource < stride_ && c.milli <= row[c.resource]) continue;
        fit = false;
        if (c.pods) {
          ++failures.too_many_pods;
        } else {
          ++failures.insufficient[c.resource];
        }
      }
    }
    if (fit) {
      feasible.push_back(nodes_[i]->name);
      ++found;
    }
  }
  failures.flush(*this, d);
  return processed;
}

}  // namespace allox::emulator
