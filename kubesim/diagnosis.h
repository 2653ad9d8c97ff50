// Why a pod fits no node, as kube-scheduler v1.28 collects it in one scheduling cycle
// (framework.Diagnosis) and prints it (FitError.Error()): "0/5000 nodes are available:
// 1 Insufficient cpu, 4999 queued: position 7 of 9000."
//
// The real Diagnosis maps each node to its reasons; the only thing read from that map is a
// histogram (how many nodes gave each reason) and which nodes preemption cannot help. So a
// reason here is stored once with a count, and a node costs a counter increment: at 5,000 nodes
// a cycle allocates nothing per node (the map of node -> vector<string> it replaces allocated
// twice per node). Counting is additive as the real map is, including its quirks: a node
// rejected in-tree and again by an extender's FailedNodes counts under both reasons; an
// extender's answer is a Go map, so a node it names twice counts once (its last reason), and a
// node in both FailedAndUnresolvableNodes and FailedNodes counts once, as unresolvable.
// Not thread-safe: one per scheduling cycle.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "extender_api/wire.h"

namespace allox::emulator {

class Diagnosis {
 public:
  // The slot of `reason` (added with no node when new); few reasons per cycle, so a scan.
  std::size_t reason(std::string_view text);
  // `nodes` more nodes gave the reason in `slot`.
  void count(std::size_t slot, std::size_t nodes = 1) { counts_[slot].nodes += nodes; }
  void add(std::string_view text, std::size_t nodes = 1) { count(reason(text), nodes); }

  // One extender's /filter answer merged as findNodesThatPassExtenders does: every node of
  // FailedAndUnresolvableNodes (preemption will not try it), then every node of FailedNodes
  // that the first map does not name.
  void add_extender_failures(const extender::NodeReasons& failed,
                             const extender::NodeReasons& unresolvable);

  // A node no preemption can help (UnschedulableAndUnresolvable).
  void add_unresolvable(std::string_view node) { unresolvable_.emplace(node); }
  bool unresolvable(const std::string& node) const {
    return !unresolvable_.empty() && unresolvable_.count(node) > 0;
  }

  // The in-tree plugins that rejected a node (the queue moves the pod on their events only).
  std::set<std::string> plugins;

  // Nodes counted under `text` (0 when absent), for tests.
  std::size_t nodes_with(std::string_view text) const;
  bool empty() const;

  // FitError.Error() over `all_nodes` nodes: "0/N nodes are available: " then "count reason"
  // strings sorted as strings (Go's sort.Strings: "10 x" before "2 y"), joined by ", ", then
  // "." (each part is Go's SeparatorFormat " %v."); `post_filter` (the preemption's message,
  // when it has one) the same way: " preemption: 0/3 nodes are available: 3 No ... pod..".
  std::string message(std::size_t all_nodes, std::string_view post_filter = {}) const;

 private:
  struct Count {
    std::string reason;
    std::size_t nodes = 0;
  };
  std::vector<Count> counts_;
  std::unordered_set<std::string> unresolvable_;
};

}  // namespace allox::emulator
