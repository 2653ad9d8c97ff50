// The emulator's node cache as kube-scheduler's scheduling cycle reads it (the cache Snapshot
// of framework.NodeInfo): nodes in a vector in name order, each with its allocatable and the
// requests of the pods assumed or bound there as integers indexed by a resource id, so the
// in-tree filters over 5,000 nodes compare integers and allocate nothing per node.
//
// Amounts are milli-units: a quantity q is llround(q * 1000) (cpu "500m" -> 500, one GPU ->
// 1000, memory bytes x 1000), so a fit is an exact integer comparison, as kube-scheduler's
// framework.Resource (MilliCPU, bytes, scalar counts) makes it.
//
// The filters, in the default profile's order, a node stopping at the first that fails:
//   NodeUnschedulable  a cordoned node, unless the pod tolerates node.kubernetes.io/unschedulable;
//   TaintToleration    the node's first NoSchedule/NoExecute taint the pod does not tolerate;
//   NodeAffinity       spec.nodeSelector and required node affinity (kube/node_fit.h), when the
//                      pod has either;
//   NodeResourcesFit   for each resource the pod requests (amount > 0, not ignored by an
//                      extender's ignoredByScheduler), requested on the node + the requests of
//                      pods nominated there that the caller counts + the pod's request <=
//                      allocatable; "pods" is checked only on a node that declares it.
// The pod's side of the first three is a kube::PodPlacement (none given: a pod that states
// nothing). The reasons are kube-scheduler's: "node(s) were unschedulable", "node(s) had
// untolerated taint {key: value}", "node(s) didn't match Pod's node affinity/selector", "Too
// many pods", "Insufficient <resource>". The first three are UnschedulableAndUnresolvable:
// preemption does not try those nodes.
// Not thread-safe: owned by the emulator's scheduling thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kube/node_fit.h"
#include "kubesim/api_objects.h"
#include "kubesim/diagnosis.h"

namespace allox::emulator {

using ResourceId = std::uint32_t;

// One resource a pod requests, in milli-units.
struct ResourceAmount {
  ResourceId resource = 0;
  std::int64_t milli = 0;
};
using ResourceAmounts = std::vector<ResourceAmount>;  // one entry per resource

std::int64_t to_milli(double quantity);

class NodeSnapshot {
 public:
  // `ignored`: resources NodeResourcesFit does not check (extenders' ignoredByScheduler).
  explicit NodeSnapshot(const std::set<std::string>& ignored = {});

  // The id of a resource name (a new one for a name not seen before).
  ResourceId resource(std::string_view name);
  const std::string& resource_name(ResourceId id) const { return resources_[id].name; }
  // Quantities by name (parsed, in units) as milli-unit amounts; zero amounts kept.
  ResourceAmounts amounts(const std::map<std::string, double>& quantities);

  struct Node {
    std::string name;
    ObjectPtr object;
    bool unschedulable = false;
    std::vector<kube::Taint> taints;        // spec.taints, every effect
    bool declares_pods = false;             // allocatable names "pods"
    std::vector<std::int64_t> allocatable;  // by resource id; 0 when not declared
    std::vector<std::int64_t> requested;    // by resource id: pods assumed or bound here
    std::map<std::string, int> pods;        // namespace/name -> spec.priority
    std::map<int, int> priorities;          // spec.priority -> pods here with it
    std::int64_t allocatable_of(ResourceId r) const {
      return r < allocatable.size() ? allocatable[r] : 0;
    }
    std::int64_t requested_of(ResourceId r) const {
      return r < requested.size() ? requested[r] : 0;
    }
    bool declares(ResourceId r) const { return r < declared.size() && declared[r]; }

   private:
    friend class NodeSnapshot;
    std::vector<bool> declared;
    std::map<std::string, double> quantities;  // allocatable as the node object has it
    std::uint64_t nominated_cycle = 0;         // `nominated` holds this cycle's amounts when equal
    std::vector<std::int64_t> nominated;
  };

  // Adds or updates a node; true when what the filters read changed (allocatable,
  // spec.unschedulable, spec.taints) or the node is new. `object` (may be null) is what
  // NodeAffinity reads the labels from and the extenders are sent.
  bool upsert(const std::string& name, ObjectPtr object,
              const std::map<std::string, double>& allocatable, bool unschedulable,
              std::vector<kube::Taint> taints = {});
  void remove(const std::string& name);
  std::size_t size() const { return nodes_.size(); }
  const Node& operator[](std::size_t i) const { return *nodes_[i]; }
  const Node* find(std::string_view name) const;
  std::size_t index_of(std::string_view name) const;  // size() when absent

  // A pod assumed or bound on `node` (a no-op when the node is unknown or already holds it) and
  // its removal (a no-op unless it holds it).
  void add_pod(const std::string& node, const std::string& key, int priority,
               const ResourceAmounts& requests);
  void remove_pod(const std::string& node, const std::string& key, const ResourceAmounts& requests);

  // The pods nominated to nodes for the coming filter pass (the caller picks those that count
  // for the pod being scheduled: not bound, not itself, priority >= its own). Replaces the
  // previous call's.
  struct Nominated {
    std::string_view node;
    const ResourceAmounts* requests;
  };
  void set_nominated(const std::vector<Nominated>& nominated);

  // The in-tree filters on node i. On failure, each reason is counted in `failures` and the
  // plugins that failed are added to `plugins`.
  struct Failures {
    std::size_t unschedulable = 0, affinity = 0, too_many_pods = 0;
    std::vector<std::size_t> insufficient;  // by resource id
    struct Untolerated {
      kube::Taint taint;  // its key and value make the reason
      std::size_t nodes = 0;
    };
    std::vector<Untolerated> untolerated;  // few distinct taints: a scan
    void count_untolerated(const kube::Taint& taint);
    // Adds the counts to `d` with kube-scheduler's reason texts, then clears them.
    void flush(const NodeSnapshot& snapshot, Diagnosis& d);
  };
  bool fits(std::size_t i, const ResourceAmounts& pod, Failures* failures = nullptr,
            const kube::PodPlacement* placement = nullptr) const;
  // The same with `freed` taken off the node's requests (preemption's dry run: the pod's fit
  // once those pods are gone).
  bool fits_without(std::size_t i, const ResourceAmounts& pod,
                    const std::vector<const ResourceAmounts*>& freed, Failures* failures = nullptr,
                    const kube::PodPlacement* placement = nullptr) const;
  // Whether NodeUnschedulable, TaintToleration or NodeAffinity refuses node i: the rejections
  // no preemption can change.
  bool unresolvable(std::size_t i, const kube::PodPlacement& placement) const;

  // The filters over the nodes from `start` in rotation, stopping once `want` fit: their names
  // are appended to `feasible`, the others' reasons counted in `d`. Returns the nodes processed
  // (kube-scheduler advances its next start index by that). When the pod's NodeAffinity
  // PreFilter names nodes, only those are evaluated, all of them (in name order; the rotation
  // is not moved: 0 is returned), and every other node counts under NodeAffinity's reason.
  std::size_t find_fit(const ResourceAmounts& pod, std::size_t start, std::size_t want,
                       std::vector<std::string>& feasible, Diagnosis& d,
                       const kube::PodPlacement* placement = nullptr) const;

 private:
  struct Resource {
    std::string name;
    bool ignored = false;
  };
  Node* find_mutable(std::string_view name);
  std::vector<Resource> resources_;
  std::unordered_map<std::string, ResourceId> resource_ids_;
  ResourceId pods_ = 0;
  std::vector<std::unique_ptr<Node>> nodes_;  // in name order
  // What find_fit reads, flat in node order so a pass over 5,000 nodes walks one array: row i
  // holds node i's allocatable - requested for resource ids below stride_ (a cache of the
  // Node's own vectors, rewritten with them), and its flags.
  static constexpr std::uint8_t kUnschedulable = 1, kDeclaresPods = 2, kTainted = 4;
  // The in-tree filters before NodeResourcesFit; false (counted) when one refuses node i.
  bool placement_passes(std::size_t i, const kube::PodPlacement& placement,
                        Failures* failures) const;
  void write_row(std::size_t i);
  void relayout();
  std::size_t stride_ = 0;
  std::vector<std::int64_t> free_;
  std::vector<std::uint8_t> flags_;
  std::uint64_t nominated_cycle_ = 0;
  bool any_nominated_ = false;
};

}  // namespace allox::emulator
