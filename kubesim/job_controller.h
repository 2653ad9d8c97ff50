// kube-controller-manager's Job controller (pkg/controller/job, v1.28) and the part of its
// garbage collector that deletes a Job's pods, over an ApiObjects store on a SimClock.
//
// For each batch/v1 Job (job_objects.h holds its defaults and validation):
//   - creates its pods from spec.template, through the store's pod create (so the mutating
//     admission webhook sees them, as any pod create): labels job-name,
//     batch.kubernetes.io/job-name, controller-uid, batch.kubernetes.io/controller-uid; an
//     ownerReference to the Job with controller and blockOwnerDeletion; NonIndexed pods are
//     `generateName: <job>-`; an Indexed Job's pod for index i is `generateName: <job>-<i>-`
//     with the annotation and label batch.kubernetes.io/job-completion-index = i, hostname
//     <job>-<i> and JOB_COMPLETION_INDEX in its containers' environment;
//   - keeps min(parallelism, completions left) pods active (an Indexed Job: the lowest indexes
//     neither succeeded nor active); a work-queue Job (no completions) keeps `parallelism` until
//     a pod succeeds, then creates no more and completes once none is active;
//   - counts a pod Failed, or gone before it ended (deleted by someone else), as a failure and
//     replaces it (an Indexed Job: the same index) after kube's pod failure back-off, 10 s × 2^(n−1)
//     capped at 6 min of simulated time; more failures than spec.backoffLimit fail the Job
//     (condition Failed, reason BackoffLimitExceeded) and delete its active pods;
//   - completes the Job (condition Complete, completionTime) once `completions` pods (indexes)
//     succeeded, deleting any still active;
//   - spec.suspend: deletes the active pods (not counted as failures), condition Suspended
//     (JobSuspended); resuming sets it False (JobResumed) and creates pods again;
//   - writes status (startTime, active, ready, succeeded, failed, completedIndexes,
//     conditions) through the status subresource, only when it changed, with the Job's
//     resourceVersion (a conflict is synced again).
// Garbage collection: once a Job is gone (a delete with propagationPolicy Background), the pods
// whose controller ownerReference names it are deleted, each with a uid precondition.
// Orphan and Foreground are the store's (api_objects.h remove).
//
// Not modelled: the job-tracking finalizer on pods (failures are counted from what this
// controller saw: a pod created and deleted between two syncs is still counted, since the
// controller remembers what it created), podFailurePolicy, backoffLimitPerIndex,
// activeDeadlineSeconds, ttlSecondsAfterFinished, SuccessfulCreate events.
//
// Thread-safe: start() runs one thread; the store's subscription only queues Job keys.
#pragma once

#include <memory>

#include "kubesim/api_objects.h"
#include "kubesim/sim_clock.h"

namespace allox::emulator {

class JobController {
 public:
  JobController(ApiObjects& objects, const SimClock& clock);
  ~JobController();
  JobController(const JobController&) = delete;
  JobController& operator=(const JobController&) = delete;

  void start();
  void stop();
  // True when no Job waits to be synced now (for a discrete-event driver: sim_clock.h).
  bool idle() const;
  // The simulated instant a back-off ends and a Job is synced again, or +inf.
  double next_wake() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace allox::emulator
