// batch/v1 Jobs as kube-apiserver v1.28 stores them: the defaults and validation of a create,
// the checks of an update, and the garbage-collection policy of a delete. The store
// (api_objects.h) calls these; the job controller (job_controller.h) acts on what they keep.
//
// Create (pkg/apis/batch defaults and validation, pkg/registry/batch/job strategy):
//   - spec.parallelism defaults to 1; spec.completions to 1 when both are unset (a Job with only
//     parallelism set is a work queue: completions stays unset); spec.backoffLimit to 6;
//     spec.completionMode to NonIndexed; spec.suspend to false;
//   - spec.selector is generated ({matchLabels: {batch.kubernetes.io/controller-uid: <uid>}})
//     and the template's labels gain controller-uid, batch.kubernetes.io/controller-uid,
//     job-name and batch.kubernetes.io/job-name (complete_new_job, once the uid is known);
//   - 422 Invalid, with details.causes naming the field, for: no spec.template.spec.containers;
//     spec.template.spec.restartPolicy not OnFailure or Never; a negative parallelism,
//     completions or backoffLimit; a completionMode other than NonIndexed / Indexed; Indexed
//     without completions.
// Update: spec.template, spec.selector and spec.completionMode are immutable (422 "field is
// immutable"); spec.completions too, except that an Indexed Job may change it together with
// parallelism to the same value (elastic Indexed Jobs, beta in 1.27); status changes only
// through the status subresource.
// Delete: batch/v1's default propagation is Orphan (kept for backwards compatibility:
// `kubectl delete job` sends Background explicitly), answered with kube-apiserver's warning.
//
// Thread-safe: pure functions over values.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "kubesim/api_error.h"

namespace allox::emulator {

// Checks a Job to create and fills the defaults that need no uid. Errors are 422 with a cause.
ApiResult<nlohmann::json> prepare_new_job(nlohmann::json job);
// Adds what depends on the Job's name and uid (selector, template labels) and an empty status.
void complete_new_job(nlohmann::json& job);
// Checks an update of a Job (not the status subresource) against the stored one.
std::optional<ApiError> job_update_error(const nlohmann::json& old, const nlohmann::json& updated);

enum class Propagation { kOrphan, kBackground, kForeground };
// The propagation a DELETE asks for: DeleteOptions.propagationPolicy (or the older
// orphanDependents), else the resource's default (Orphan for batch/v1 Jobs, Background for the
// rest). An unknown policy is 422, as kube-apiserver validates DeleteOptions.
ApiResult<Propagation> propagation_of(const nlohmann::json& delete_options, bool is_job);
// The warning kube-apiserver sends when a batch/v1 Job is deleted with the default policy.
inline constexpr const char* kOrphanedPodsWarning =
    "299 - \"child pods are preserved by default when jobs are deleted; set "
    "propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress "
    "this warning\"";

// Whether `object` has a controller ownerReference to the owner with this uid.
bool controlled_by(const nlohmann::json& object, const std::string& owner_uid);
// The uid of the object's controller ownerReference of `kind` ("" when none).
std::string controller_uid(const nlohmann::json& object, const std::string& kind);
std::string controller_name(const nlohmann::json& object, const std::string& kind);

}  // namespace allox::emulator
