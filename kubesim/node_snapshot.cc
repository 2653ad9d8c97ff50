#include "kubesim/node_snapshot.h"

#include <algorithm>
#include <cmath>

namespace allox::emulator {

std::int64_t to_milli(double quantity) {
  return static_cast<std::int64_t>(std::llround(quantity * 1000));
}

namespace {

// The pod side when the caller gives none: a pod with no selector, affinity or toleration.
const kube::PodPlacement& none() {
  static const kube::PodPlacement nothing;
  return nothing;
}

}  // namespace

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
                          const std::map<std::string, double>& allocatable, bool unschedulable,
                          std::vector<kube::Taint> taints) {
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
  const bool changed = added || unschedulable != node.unschedulable ||
                       allocatable != node.quantities || taints != node.taints;
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
  node.taints = std::move(taints);
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
  const bool tainted = std::any_of(node.taints.begin(), node.taints.end(), kube::blocks_scheduling);
  flags_[i] = static_cast<std::uint8_t>((node.unschedulable ? kUnschedulable : 0) |
                                        (node.declares_pods ? kDeclaresPods : 0) |
                                        (tainted ? kTainted : 0));
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
                        const kube::PodPlacement* placement) const {
  static const std::vector<const ResourceAmounts*> freed;
  return fits_without(i, pod, freed, failures, placement);
}

bool NodeSnapshot::placement_passes(std::size_t i, const kube::PodPlacement& placement,
                                    Failures* failures) const {
  const Node& node = *nodes_[i];
  const std::uint8_t flags = flags_[i];
  if ((flags & kUnschedulable) != 0 && !placement.tolerates_unschedulable()) {
    if (failures != nullptr) ++failures->unschedulable;
    return false;
  }
  if ((flags & kTainted) != 0) {
    if (const kube::Taint* taint = placement.untolerated(node.taints)) {
      if (failures != nullptr) failures->count_untolerated(*taint);
      return false;
    }
  }
  if (placement.affinity().any() && !placement.affinity().matches(node.object.get(), node.name)) {
    if (failures != nullptr) ++failures->affinity;
    return false;
  }
  return true;
}

bool NodeSnapshot::unresolvable(std::size_t i, const kube::PodPlacement& placement) const {
  return !placement_passes(i, placement, nullptr);
}

bool NodeSnapshot::fits_without(std::size_t i, const ResourceAmounts& pod,
                                const std::vector<const ResourceAmounts*>& freed,
                                Failures* failures, const kube::PodPlacement* placement) const {
  const Node& node = *nodes_[i];
  if (!placement_passes(i, placement != nullptr ? *placement : none(), failures)) return false;
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

void NodeSnapshot::Failures::count_untolerated(const kube::Taint& taint) {
  for (Untolerated& u : untolerated) {
    if (u.taint.key == taint.key && u.taint.value == taint.value) {
      ++u.nodes;
      return;
    }
  }
  untolerated.push_back({taint, 1});
}

void NodeSnapshot::Failures::flush(const NodeSnapshot& snapshot, Diagnosis& d) {
  if (unschedulable > 0) {
    d.add(kube::kUnschedulableReason, unschedulable);
    d.plugins.insert("NodeUnschedulable");
  }
  for (const Untolerated& u : untolerated) {
    d.add(kube::untolerated_taint_reason(u.taint), u.nodes);
    d.plugins.insert("TaintToleration");
  }
  untolerated.clear();
  if (affinity > 0) {
    d.add(kube::kNodeAffinityReason, affinity);
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
                                   const kube::PodPlacement* placement) const {
  const std::size_t all = nodes_.size();
  if (all == 0) return 0;
  const kube::PodPlacement& p = placement != nullptr ? *placement : none();
  const kube::NodeAffinity* affinity = p.affinity().any() ? &p.affinity() : nullptr;
  if (affinity != nullptr && affinity->names()) {
    // The PreFilter's nodes alone; those it left out (and names no node holds) are the
    // filter's rejections.
    Failures failures;
    std::size_t evaluated = 0;
    for (const std::string& name : *affinity->names()) {
      const std::size_t i = index_of(name);
      if (i == all) continue;
      ++evaluated;
      if (fits(i, pod, &failures, &p)) {
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
    if ((flags & kUnschedulable) != 0 && !p.tolerates_unschedulable()) {
      ++failures.unschedulable;
      fit = false;
    } else if (const kube::Taint* taint =
                   (flags & kTainted) != 0 ? p.untolerated(nodes_[i]->taints) : nullptr) {
      failures.count_untolerated(*taint);
      fit = false;
    } else if (affinity != nullptr &&
               !affinity->matches(nodes_[i]->object.get(), nodes_[i]->name)) {
      ++failures.affinity;
      fit = false;
    } else if (any_nominated_ && nodes_[i]->nominated_cycle == nominated_cycle_) {
      fit = fits(i, pod, &failures, &p);  // pods nominated here count: the general path
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
