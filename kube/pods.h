// What allox does to pods through the API server, each one call, each idempotent:
//
//   remove_gate   JSON Patch: `test` that spec.schedulingGates[i] is the gate, then `remove` it
//                 (a stale index fails with 422 instead of removing another gate; then the pod
//                 is read once and patched at its current index; 404 and an already removed
//                 gate count as done)
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

// The JSON Patch removing `gate` from `gates` (as last seen); an error when it is not there.
Expected<nlohmann::json> remove_gate_patch(const std::vector<std::string>& gates,
                                           std::string_view gate);
// The JSON Patch adding `gate` to a pod whose gates are `gates` (empty patch when present).
nlohmann::json add_gate_patch(const nlohmann::json& pod, std::string_view gate);

Status remove_gate(KubeClient& client, const ObjectRef& pod, const std::vector<std::string>& gates,
                   std::string_view gate);
Status nudge(KubeClient& client, const ObjectRef& pod, const std::string& value);
enum class DeleteOutcome { kDeleted, kGone, kRefused };
Expected<DeleteOutcome> delete_pod(KubeClient& client, const ObjectRef& pod,
                                   const std::string& resource_version = "");

}  // namespace allox::kube
