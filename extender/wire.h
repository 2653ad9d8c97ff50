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
// by extender/pod.h. Parse errors name the field (`NodeNames[2]: expected a string`).
//
// Cost: linear in the message size. Thread-safe: pure functions.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace allox::extender {

// Request body of /filter and /prioritize (ExtenderArgs). kube-scheduler sends `NodeNames` when
// the extender is nodeCacheCapable and full `Nodes` (a v1.NodeList) otherwise; both are kept as
// sent so they can be echoed.
struct ExtenderArgs {
  nlohmann::json pod = nullptr;                             // a v1.Pod object
  std::optional<std::vector<std::string>> node_names;       // `NodeNames`; unset when null
  std::optional<std::vector<nlohmann::json>> node_objects;  // `Nodes.items`; unset when null

  // The candidate nodes by name, in request order: from `Nodes` when it was sent (entry i is
  // node_objects[i]), else from `NodeNames`.
  std::vector<std::string> candidates() const;
};

// Response of /filter (ExtenderFilterResult).
struct FilterResult {
  // Admitted nodes: `NodeNames` (allox always sets it, a list, never null) and, when the request
  // carried full objects, `Nodes` holding those objects.
  std::optional<std::vector<std::string>> node_names;
  std::optional<std::vector<nlohmann::json>> node_objects;
  std::map<std::string, std::string> failed_nodes;                   // null when empty
  std::map<std::string, std::string> failed_and_unresolvable_nodes;  // null when empty
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
// message names the problem; the server answers it with 400.
Expected<ExtenderArgs> parse_extender_args(std::string_view body);
Expected<FilterResult> parse_filter_result(std::string_view body);
Expected<std::vector<HostPriority>> parse_host_priorities(std::string_view body);
Expected<BindingArgs> parse_binding_args(std::string_view body);
Expected<BindingResult> parse_binding_result(std::string_view body);
Expected<PreemptionArgs> parse_preemption_args(std::string_view body);
Expected<PreemptionResult> parse_preemption_result(std::string_view body);

// Rendering: the JSON text Go's encoding/json writes for these structs (upstream's field order,
// `null` for nil slices, maps and pointers, map keys sorted), written straight into one string
// without building a DOM. Embedded Kubernetes objects are echoed as received.
std::string render(const ExtenderArgs& args);
std::string render(const FilterResult& result);
std::string render(const std::vector<HostPriority>& priorities);
std::string render(const BindingArgs& args);
std::string render(const BindingResult& result);
std::string render(const PreemptionResult& result);

// The same messages as a JSON value (json::parse(render(x))), for tests and callers that want to
// inspect or edit one; not for the request path.
nlohmann::json to_json(const ExtenderArgs& args);
nlohmann::json to_json(const FilterResult& result);
nlohmann::json to_json(const std::vector<HostPriority>& priorities);
nlohmann::json to_json(const BindingArgs& args);
nlohmann::json to_json(const BindingResult& result);
nlohmann::json to_json(const PreemptionResult& result);

// Parses any JSON body with the same guards as the typed parsers (nesting depth, error text).
Expected<nlohmann::json> parse_json_body(std::string_view body);

// The value stored under `key` in object `object`, matching an exact-case key first and a
// case-insensitive one otherwise; nullptr when absent. Precondition: object.is_object().
const nlohmann::json* find_key(const nlohmann::json& object, std::string_view key);

}  // namespace allox::extender
