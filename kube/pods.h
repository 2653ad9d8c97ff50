// What allox does to pods through the API server, each one call, each idempotent:
//
//   remove_gate   JSON Patch: `test` that spec.schedulingGates[i] is the gate, then `remove` it
//                 (a stale index fails with 422 instead of removing another gate; then the pod
//                 is read once and patched at its current index; 404 and an already removed
//                 gate count as done). Given a node, the same patch pins the pod there (below)
//   pin           in the patch that removes the gate, required node affinity
//                 `matchFields: [{key: metadata.name, operator: In, values: [node]}]`, as the
//                 DaemonSet controller pins its pods (the node's name, not its hostname label,
//                 which need not equal it). Kubernetes 1.27+ lets a pod that is still gated
//                 narrow its scheduling directives (PodSchedulingReadiness, on by default in
//                 1.28), so the patch is accepted, and kube-scheduler's NodeAffinity then looks
//                 at that one node: its extender is asked about one node, not the cluster.
//                 Only a pod with no required node affinity of its own is pinned; see AffinityRoom.
//                 The `add` follows a `test` that its member is still absent (value null), so
//                 affinity the owner wrote after alloxd looked is never overwritten
//   nudge         merge patch of the annotation allox.io/nudge: any pod update moves a pod that
//                 kube-scheduler parked as unschedulable back to its active queue at once
//   delete_pod    DELETE in the pod's own namespace with a uid precondition (never a
//                 re-created pod of the same name) and, when given, a resourceVersion one (never
//                 a pod that changed since it was looked at, e.g. got bound). It says what
//                 happened: deleted, already gone (404), or refused by a precondition (409: the
//                 next look at the changed pod decides again); only a deletion deserves an event
//   gate_patch    the JSON Patch the admission webhook answers to add the gate
//
// Thread-safe: free functions over a thread-safe client.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "kube/client.h"
#include "kube/events.h"  // ObjectRef

namespace allox::kube {

inline constexpr std::string_view kQueueGate = "allox.io/queue";
inline constexpr std::string_view kNudgeAnnotation = "allox.io/nudge";

// The names in a pod's spec.schedulingGates (empty when it has none or it is malformed).
std::vector<std::string> scheduling_gates(const nlohmann::json& pod);

// How much of spec.affinity a pod has, as far as the pin is concerned: where the pin's `add`
// goes. kRequired: the pod has required node affinity of its own and is not pinned. Its terms
// may only be narrowed on a gated pod (each term keeps its requirements and gains some, the
// list keeps its length), which is easy to get wrong and would change what the owner wrote;
// such a pod goes through kube-scheduler's full filter instead, as an unpinned pod does.
enum class AffinityRoom { kNoAffinity, kNoNodeAffinity, kNoRequired, kRequired };
AffinityRoom affinity_room(const nlohmann::json& pod);

// The node a released pod is pinned to (empty: none), and the room its affinity had when seen.
struct NodePin {
  std::string node;
  AffinityRoom room = AffinityRoom::kNoAffinity;
};

// The node the pin above names: a required node affinity of exactly one term, whose only
// requirement is `matchFields` metadata.name In [one node]; empty for anything else (no pin,
// or affinity the owner wrote). A pod released pinned shows where it was placed.
std::string pinned_node(const nlohmann::json& pod);

// The JSON Patch removing `gate` from `gates` (as last seen), with pin.node's affinity added
// when pin.node is set and the room allows; an error when the gate is not there.
Expected<nlohmann::json> remove_gate_patch(const std::vector<std::string>& gates,
                                           std::string_view gate, const NodePin& pin = {});
// The JSON Patch adding `gate` to a pod whose gates are `gates` (empty patch when present).
nlohmann::json add_gate_patch(const nlohmann::json& pod, std::string_view gate);

// One PATCH; after a 422 the pod as it is now decides the index and the pin's room again.
Status remove_gate(KubeClient& client, const ObjectRef& pod, const std::vector<std::string>& gates,
                   std::string_view gate, const NodePin& pin = {});
Status nudge(KubeClient& client, const ObjectRef& pod, const std::string& value);
enum class DeleteOutcome { kDeleted, kGone, kRefused };
Expected<DeleteOutcome> delete_pod(KubeClient& client, const ObjectRef& pod,
                                   const std::string& resource_version = "");

}  // namespace allox::kube
