// kube-scheduler's extender wire protocol (k8s.io/kube-scheduler/extender/v1), both directions.
//
// The upstream structs carry no json tags, so Go serialises them with their field names (`Pod`,
// `NodeNames`, `FailedNodes` ...) and nil slices, maps and pointers as `null`. Parsing accepts
// keys case-insensitively (older senders used lower case); an exact-case key wins over a folded
// one. Rendering writes upstream's field order and `null` for absent values, so a rendered value
// compares equal, field by field, with what Go would send.
//
// Kubernetes objects inside the messages (the Pod, the Nodes list, victim pods) are kept as the
// JSON objects they arrived as, so a response can echo them (the non-nodeCacheCapable `Nodes`
// shape) and a client can send them; the scheduler itself only sees the typed fields extracted
// by alloxd/pod.h. Parse errors name the field (`NodeNames[2]: expected a string`).
//
// Cost: linear in the message size. Thread-safe: pure functions.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace allox::extender {

// A forward iterator over a container read by index (operator[] returning Value by value): the
// two buffer-backed containers below hand out views, not references, so neither has a
// std::vector to borrow an iterator from.
template <typename Container, typename Value>
class IndexIterator {
 public:
  using value_type = Value;
  using difference_type = std::ptrdiff_t;
  IndexIterator() = default;
  IndexIterator(const Container* container, std::size_t i) : container_(container), i_(i) {}
  Value operator*() const { return (*container_)[i_]; }
  IndexIterator& operator++() {
    ++i_;
    return *this;
  }
  IndexIterator operator++(int) {
    IndexIterator before = *this;
    ++i_;
    return before;
  }
  bool operator==(const IndexIterator& other) const { return i_ == other.i_; }

 private:
  const Container* container_ = nullptr;
  std::size_t i_ = 0;
};

// Node names in order, kept in one buffer: a list of 5,000 names is two allocations, not 5,000.
// `NodeNames` in both directions; the value type of a Go []string.
class NodeNameList {
 public:
  NodeNameList() = default;
  NodeNameList(std::initializer_list<std::string_view> names);

  void push_back(std::string_view name);
  void reserve(std::size_t names, std::size_t bytes);
  std::size_t size() const { return ends_.size(); }
  bool empty() const { return ends_.empty(); }
  std::string_view operator[](std::size_t i) const {
    std::size_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(text_).substr(begin, ends_[i] - begin);
  }
  std::string_view front() const { return (*this)[0]; }
  bool contains(std::string_view name) const;
  std::vector<std::string> strings() const;  // a copy, for tests and printing
  bool operator==(const NodeNameList& other) const = default;

  using const_iterator = IndexIterator<NodeNameList, std::string_view>;
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }

 private:
  std::string text_;               // the names back to back
  std::vector<std::size_t> ends_;  // where each name ends in text_
};

// A Go map[string]string from node name to the reason it was filtered out (`FailedNodes`,
// `FailedAndUnresolvableNodes`). One answer names many nodes for a handful of reasons, so a
// reason is stored once and nodes refer to it; names share one buffer. Rendered, like Go's map,
// with keys in byte order and each key once (a node added twice keeps its last reason).
class NodeReasons {
 public:
  using Reason = std::uint32_t;
  NodeReasons() = default;
  NodeReasons(std::initializer_list<std::pair<std::string_view, std::string_view>> entries);

  // A new reason for add(); reuse the value for every node it applies to.
  Reason reason(std::string text);
  void add(std::string_view node, Reason why);
  // Reuses the last reason when it reads the same (parsing, tests), else adds one.
  void add(std::string_view node, std::string_view why);

  std::size_t size() const { return entries_.size(); }  // nodes added, repeats included
  bool empty() const { return entries_.empty(); }
  bool contains(std::string_view node) const;
  std::size_t count(std::string_view node) const { return contains(node) ? 1 : 0; }
  // The reason of `node` (its last one); throws std::out_of_range when absent, as map::at.
  std::string_view at(std::string_view node) const;

  struct Entry {
    std::string_view node;
    std::string_view reason;
    Reason reason_id = 0;  // entries with one id share the reason
  };
  Entry operator[](std::size_t i) const {
    return {name(i), reasons_[entries_[i].reason], entries_[i].reason};
  }
  std::size_t reason_count() const { return reasons_.size(); }
  // The map as Go writes it: keys in byte order, each once, with its last reason.
  std::vector<Entry> sorted() const;
  // Equal as maps: the same nodes with the same reasons.
  bool operator==(const NodeReasons& other) const;

  // Every add() in order, repeats included.
  using const_iterator = IndexIterator<NodeReasons, Entry>;
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }

 private:
  struct Stored {
    std::size_t name_end;
    Reason reason;
  };
  std::string_view name(std::size_t i) const {
    std::size_t begin = i == 0 ? 0 : entries_[i - 1].name_end;
    return std::string_view(names_).substr(begin, entries_[i].name_end - begin);
  }
  std::string names_;
  std::vector<Stored> entries_;
  std::vector<std::string> reasons_;
};

// How much of the `Pod` parse_extender_args keeps: all of it (to echo or inspect it), or only
// the fields allox reads from a pod (metadata name, namespace, uid, labels and annotations;
// spec schedulerName and the containers' resources: alloxd/model/pod.h), which is what the verbs
// need and spares the request path a tree of managedFields, volumes and status.
enum class PodFields { kWhole, kRead };

// Request body of /filter and /prioritize (ExtenderArgs). kube-scheduler sends `NodeNames` when
// the extender is nodeCacheCapable and full `Nodes` (a v1.NodeList) otherwise; both are kept as
// sent so they can be echoed.
struct ExtenderArgs {
  nlohmann::json pod = nullptr;                             // a v1.Pod object
  std::optional<NodeNameList> node_names;                   // `NodeNames`; unset when null
  std::optional<std::vector<nlohmann::json>> node_objects;  // `Nodes.items`; unset when null
  NodeNameList node_object_names;                           // metadata.name of each of those

  // The candidate nodes by name, in request order: from `Nodes` when it was sent (entry i is
  // node_objects[i]), else from `NodeNames`.
  const NodeNameList& candidates() const;
};

// Response of /filter (ExtenderFilterResult).
struct FilterResult {
  // Admitted nodes: `NodeNames` (allox always sets it, a list, never null) and, when the request
  // carried full objects, `Nodes` holding those objects.
  std::optional<NodeNameList> node_names;
  std::optional<std::vector<nlohmann::json>> node_objects;
  NodeReasons failed_nodes;                   // null when empty
  NodeReasons failed_and_unresolvable_nodes;  // null when empty
  std::string error;
};

// One entry of /prioritize's response (HostPriority); scores are 0..kMaxExtenderPriority.
struct HostPriority {
  std::string host;
  std::int64_t score = 0;
};
inline constexpr std::int64_t kMaxExtenderPriority = 10;

// Request body of /bind (ExtenderBindingArgs) and its response (ExtenderBindingResult).
struct BindingArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
};
struct BindingResult {
  std::string error;
};

// Preemption: candidate victims per node, by pod UID (MetaVictims).
struct MetaVictims {
  std::vector<std::string> pod_uids;
  std::int64_t num_pdb_violations = 0;
};
// Request body of /preempt (ExtenderPreemptionArgs). Full `NodeNameToVictims` entries are
// reduced to their pods' UIDs; both maps are merged into victims.
struct PreemptionArgs {
  nlohmann::json pod = nullptr;
  std::map<std::string, MetaVictims> victims;
};
// Response of /preempt (ExtenderPreemptionResult).
struct PreemptionResult {
  std::map<std::string, MetaVictims> victims;  // null when empty
};

// Parsing: a malformed body (bad JSON, wrong types, missing required fields) is an Error whose
// message names the problem; the server answers it with 400. ExtenderArgs are read in one pass
// (nlohmann's SAX reader): names go straight into their list and only the Pod and `Nodes` are
// built as JSON values.
Expected<ExtenderArgs> parse_extender_args(std::string_view body,
                                           PodFields pod_fields = PodFields::kWhole);
Expected<FilterResult> parse_filter_result(std::string_view body);
Expected<std::vector<HostPriority>> parse_host_priorities(std::string_view body);
Expected<BindingArgs> parse_binding_args(std::string_view body);
Expected<BindingResult> parse_binding_result(std::string_view body);
Expected<PreemptionArgs> parse_preemption_args(std::string_view body);
Expected<PreemptionResult> parse_preemption_result(std::string_view body);

// Rendering, the one definition of each message's JSON: the text Go's encoding/json writes for
// these structs (upstream's field order, `null` for nil slices, maps and pointers, map keys
// sorted), written straight into one string without building a DOM. Embedded Kubernetes
// objects are echoed as received. To inspect a rendered message, parse it as
// nlohmann::ordered_json (a plain nlohmann::json sorts keys and loses upstream's order).
std::string render(const ExtenderArgs& args);
std::string render(const FilterResult& result);
std::string render(const std::vector<HostPriority>& priorities);
std::string render(const BindingArgs& args);
std::string render(const BindingResult& result);
std::string render(const PreemptionResult& result);
// Appends `text` as a JSON string the way render() writes every string (valid UTF-8 in; quotes,
// backslashes and control characters escaped as Go does: \n \r \t short, others \u00XX).
void append_json_string(std::string& out, std::string_view text);

// Parses any JSON body with the same guards as the typed parsers (nesting depth, error text).
Expected<nlohmann::json> parse_json_body(std::string_view body);

// The value stored under `key` in object `object`, matching an exact-case key first and a
// case-insensitive one otherwise; nullptr when absent. Precondition: object.is_object().
const nlohmann::json* find_key(const nlohmann::json& object, std::string_view key);

}  // namespace allox::extender
