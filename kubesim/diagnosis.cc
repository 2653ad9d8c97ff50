#include "kubesim/diagnosis.h"

#include <algorithm>

namespace allox::emulator {

namespace {

constexpr std::size_t kUnknown = static_cast<std::size_t>(-1);

// Calls f(entry) once per node of a Go map decoded into `reasons`: the last entry of a node
// wins. An answer rendered by Go's encoder (or alloxd's) has its keys in byte order, each once:
// then one pass, nothing sorted or copied.
template <typename F>
void for_each_node_once(const extender::NodeReasons& reasons, F&& f) {
  bool in_order = true;
  for (std::size_t i = 1; i < reasons.size() && in_order; ++i) {
    in_order = reasons[i - 1].node < reasons[i].node;
  }
  if (in_order) {
    for (std::size_t i = 0; i < reasons.size(); ++i) f(reasons[i]);
    return;
  }
  for (const extender::NodeReasons::Entry& entry : reasons.sorted()) f(entry);
}

}  // namespace

std::size_t Diagnosis::reason(std::string_view text) {
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    if (counts_[i].reason == text) return i;
  }
  counts_.push_back({std::string(text), 0});
  return counts_.size() - 1;
}

void Diagnosis::add_extender_failures(const extender::NodeReasons& failed,
                                      const extender::NodeReasons& unresolvable) {
  // The answer's reasons are already interned (NodeReasons::Entry::reason_id): each distinct
  // one is looked up here once, and a node is an index into that table.
  auto counter = [&](const extender::NodeReasons& reasons) {
    return [this, slots = std::vector<std::size_t>(reasons.reason_count(), kUnknown)](
               const extender::NodeReasons::Entry& entry) mutable {
      std::size_t& slot = slots[entry.reason_id];
      if (slot == kUnknown) slot = reason(entry.reason);
      count(slot);
    };
  };
  auto count_unresolvable = counter(unresolvable);
  for_each_node_once(unresolvable, [&](const extender::NodeReasons::Entry& entry) {
    count_unresolvable(entry);
    add_unresolvable(entry.node);
  });
  if (failed.empty()) return;
  // "failedAndUnresolvableMap takes precedence over failedMap": this answer's map only.
  std::vector<std::string_view> skip;
  if (!unresolvable.empty()) {
    skip.reserve(unresolvable.size());
    for (std::size_t i = 0; i < unresolvable.size(); ++i) skip.push_back(unresolvable[i].node);
    std::sort(skip.begin(), skip.end());
  }
  auto count_failed = counter(failed);
  for_each_node_once(failed, [&](const extender::NodeReasons::Entry& entry) {
    if (!skip.empty() && std::binary_search(skip.begin(), skip.end(), entry.node)) return;
    count_failed(entry);
  });
}

std::size_t Diagnosis::nodes_with(std::string_view text) const {
  for (const Count& c : counts_) {
    if (c.reason == text) return c.nodes;
  }
  return 0;
}

bool Diagnosis::empty() const {
  return std::all_of(counts_.begin(), counts_.end(), [](const Count& c) { return c.nodes == 0; });
}

std::string Diagnosis::message(std::size_t all_nodes, std::string_view post_filter) const {
  std::vector<std::string> histogram;
  histogram.reserve(counts_.size());
  for (const Count& c : counts_) {
    if (c.nodes > 0) histogram.push_back(std::to_string(c.nodes) + " " + c.reason);
  }
  std::sort(histogram.begin(), histogram.end());
  std::string out = "0/" + std::to_string(all_nodes) + " nodes are available:";
  for (std::size_t i = 0; i < histogram.size(); ++i) {
    out += i == 0 ? " " : ", ";
    out += histogram[i];
  }
  if (!histogram.empty()) out += ".";
  if (!post_filter.empty()) {
    out += " ";
    out += post_filter;
    out += ".";
  }
  return out;
}

}  // namespace allox::emulator
