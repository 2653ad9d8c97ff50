// The PATCH bodies kube-apiserver accepts, applied to a JSON object:
//   application/merge-patch+json            RFC 7386 (null deletes a key, arrays replace)
//   application/json-patch+json             RFC 6902 (add, remove, replace, move, copy, test)
//   application/strategic-merge-patch+json  Kubernetes' strategic merge: like a merge patch,
//       but lists with a merge key merge element by element (containers, env, volumes and
//       spec.schedulingGates by `name`; status.conditions by `type`; ownerReferences by `uid`),
//       an element `{"name":"x","$patch":"delete"}` removes it, `$deleteFromPrimitiveList/<f>`
//       removes values from a list of strings (finalizers), and `$setElementOrder/<f>` and
//       `$retainKeys` are accepted and ignored (they only order or prune what is already there).
// application/apply-patch+yaml (server-side apply) is not modelled: 415, as for an unknown type.
// Errors are 4xx ApiErrors naming what was wrong. Thread-safe: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "kubesim/api_error.h"

namespace allox::emulator {

enum class PatchType { kMerge, kJson, kStrategicMerge };

// From a Content-Type header (parameters such as "; charset=utf-8" are ignored); 415 otherwise.
ApiResult<PatchType> patch_type(const std::string& content_type);

// Applies `body` (the PATCH request's text) to `target`; the result, or 400/422.
ApiResult<nlohmann::json> apply_patch(const nlohmann::json& target, PatchType type,
                                      const std::string& body);

}  // namespace allox::emulator
