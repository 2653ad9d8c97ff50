// Which nodes a pod may go to by what the Pod and Node objects say, without resources:
// kube-scheduler v1.28's NodeUnschedulable, TaintToleration and NodeAffinity filters, with
// their reasons in its words. Shared by alloxd (so it never plans a pod onto a node
// kube-scheduler will refuse) and kubesim's kube-scheduler emulator (so the two agree).
//
//   node_facts(node)        a v1.Node's name, labels, spec.taints and spec.unschedulable
//   tolerates(t, taint)     core/v1 Toleration.ToleratesTaint
//   NodeAffinity(pod)       the NodeAffinity plugin's PreFilter and Filter for one pod
//   PodPlacement(pod)       the pod's side of all three filters; refuses(node) is the first
//                           filter that rejects the node, in kube-scheduler's order
//
// The filters run in the default profile's order (pkg/scheduler/apis/config/v1
// getDefaultPlugins: NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts,
// NodeResourcesFit, ...), and kube-scheduler stops at a node's first failing filter, so a
// node that is both tainted and unlabelled is refused for its taint. All three rejections are
// UnschedulableAndUnresolvable: preemption cannot change them.
//
// Objects are read as the API server would have stored them, but any JSON is accepted and
// nothing here throws: a value of the wrong type reads as absent and an entry of a list that is
// not well-formed is skipped (a label, a nodeSelector entry, a taint, a toleration), except in
// required node affinity, where a requirement of the wrong shape voids its term (which then
// matches no node) rather than widening it. Thread-safe: values, immutable once built; const
// members may be called from any thread.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace allox::kube {

// A node's spec.taints entry (timeAdded is not read).
struct Taint {
  std::string key, value, effect;
  bool operator==(const Taint&) const = default;
};

// A pod's spec.tolerations entry (tolerationSeconds is not read).
struct Toleration {
  std::string key, op, value, effect;  // op "Equal" (also when empty) or "Exists"
};

// What a v1.Node says about who may go there, without resources.
struct NodeFacts {
  std::string name;                           // metadata.name
  std::map<std::string, std::string> labels;  // metadata.labels (non-string values skipped)
  // spec.taints in order, every effect; an entry that is not an object, or whose key or effect
  // is not a string, or whose value is neither a string nor absent, is skipped.
  std::vector<Taint> taints;
  bool unschedulable = false;  // spec.unschedulable (cordoned); true only for JSON true
  bool operator==(const NodeFacts&) const = default;
};

NodeFacts node_facts(const nlohmann::json& node);  // never throws, on any JSON value

// core/v1 Toleration.ToleratesTaint as of v1.28: the toleration's effect, when set, must equal
// the taint's; its key, when set, must equal the taint's (an empty key matches every key);
// operator Exists then matches any value, Equal or empty requires equal values, and any other
// operator matches nothing. (API validation only lets an empty key come with Exists; a pod
// that slipped past it, with an empty key and Equal, tolerates every taint of that value.)
bool tolerates(const Toleration& toleration, const Taint& taint);

// The taint filters read: effect NoSchedule or NoExecute (PreferNoSchedule only scores).
bool blocks_scheduling(const Taint& taint);

// kube-scheduler's reasons, as its filters word them.
inline constexpr std::string_view kUnschedulableReason = "node(s) were unschedulable";
inline constexpr std::string_view kNodeAffinityReason =
    "node(s) didn't match Pod's node affinity/selector";
std::string untolerated_taint_reason(const Taint& taint);  // "node(s) had untolerated taint {k: v}"

// kube-scheduler v1.28's NodeAffinity plugin for one pod.
// Filter: every spec.nodeSelector label equal, and, when the pod has required node affinity,
// one of its nodeSelectorTerms matching (ORed; a term's requirements ANDed; a term with no
// requirement, or with one that does not parse, matches no node; required affinity with no
// terms matches no node). matchExpressions on labels: In, NotIn (or the label absent), Exists,
// DoesNotExist, Gt and Lt (the label and the one value both base-10 int64, compared; a label
// that is no integer fails). A requirement parses as labels.NewRequirement parses it: a valid
// label key, at least one value for In/NotIn, none for Exists/DoesNotExist, exactly one integer
// for Gt/Lt, each In/NotIn value a valid label value. matchFields: In or NotIn with exactly one
// value on the field set {metadata.name: node name}.
// PreFilter (names()): when every term has `metadata.name In` requirements, only the nodes
// they name (each term's intersection, the union over terms) are evaluated; kube-scheduler
// counts the others under this plugin's reason.
class NodeAffinity {
 public:
  NodeAffinity() = default;                          // no selector, no required terms: every node
  explicit NodeAffinity(const nlohmann::json& pod);  // never throws
  // False when the plugin has nothing to check (its PreFilter's Skip): every node matches.
  bool any() const { return !selector_.empty() || required_; }
  // `node`: the v1.Node object (null, or labels that are not an object, read as no labels).
  bool matches(const nlohmann::json* node, std::string_view name) const;
  bool matches(const std::map<std::string, std::string>& labels, std::string_view name) const;
  // The PreFilter's node names (sorted, unique); std::nullopt when every node is a candidate.
  const std::optional<std::vector<std::string>>& names() const { return names_; }

 private:
  struct Requirement {
    std::string key, op;
    std::vector<std::string> values;
    long long number = 0;  // Gt/Lt: the value
  };
  struct Term {
    bool valid = true;
    std::vector<Requirement> expressions, fields;
  };
  template <typename Label>
  bool match(const Label& label, std::string_view name) const;

  std::vector<std::pair<std::string, std::string>> selector_;
  bool required_ = false;
  std::vector<Term> terms_;
  std::optional<std::vector<std::string>> names_;
};

// The pod's side: its NodeAffinity and its spec.tolerations (entries that are not objects, or
// with a member of the wrong type, skipped).
class PodPlacement {
 public:
  PodPlacement() = default;                          // a pod that states nothing
  explicit PodPlacement(const nlohmann::json& pod);  // never throws
  // True when the pod has a nodeSelector, required node affinity or any toleration.
  bool constrained() const { return affinity_.any() || !tolerations_.empty(); }
  // kube-scheduler v1.28's reason for refusing `node` in those three filters, in its words,
  // checked in its order: NodeUnschedulable ("node(s) were unschedulable"), TaintToleration
  // ("node(s) had untolerated taint {key: value}", the first such taint in spec.taints order),
  // NodeAffinity ("node(s) didn't match Pod's node affinity/selector"); std::nullopt when all
  // three pass.
  std::optional<std::string> refuses(const NodeFacts& node) const;
  // The filters one by one (refuses() is these in order), for callers that count reasons
  // without building strings:
  //   NodeUnschedulable passes a cordoned node when the pod tolerates the taint
  //   {node.kubernetes.io/unschedulable, NoSchedule};
  bool tolerates_unschedulable() const { return tolerates_unschedulable_; }
  //   TaintToleration: the first NoSchedule or NoExecute taint no toleration tolerates, or null.
  const Taint* untolerated(const std::vector<Taint>& taints) const;
  const NodeAffinity& affinity() const { return affinity_; }
  const std::vector<Toleration>& tolerations() const { return tolerations_; }

 private:
  NodeAffinity affinity_;
  std::vector<Toleration> tolerations_;
  bool tolerates_unschedulable_ = false;
};

}  // namespace allox::kube
