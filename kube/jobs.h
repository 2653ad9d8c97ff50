// What allox does to batch/v1 Jobs through the API server, one call each, idempotent:
//
//   delete_job  DELETE in the Job's own namespace with `propagationPolicy: Background` (the Job
//               goes, then the garbage collector deletes its pods: batch/v1's default would be
//               Orphan, leaving them behind) and a uid precondition (never a re-created Job of
//               the same name). It says what happened: deleted, already gone (404), or refused
//               by the precondition (409); only a deletion deserves an event.
//
// Thread-safe: free functions over a thread-safe client.
#pragma once

#include "core/result.h"
#include "kube/client.h"
#include "kube/events.h"  // ObjectRef
#include "kube/pods.h"    // DeleteOutcome

namespace allox::kube {

// The collection path of batch/v1 Jobs (the Job informer's list and watch).
inline constexpr const char* kJobsPath = "/apis/batch/v1/jobs";

Expected<DeleteOutcome> delete_job(KubeClient& client, const ObjectRef& job);

}  // namespace allox::kube
