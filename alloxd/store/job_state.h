// The states one run of a job goes through, and the call that moves it along each edge.
//
// JobPhase is what the store keeps (queued, running, done, removed). The book refines a queued
// run: parked (BookJob::parked: the policy cannot take it), admitted (the planner holds a
// machine for it: Planner's admissions) and bind intent (BookJob::intent: a bind alloxd asked
// the API server for and has not seen answered). docs/design.md, "Job state machine", gives
// each edge's durability.
//
//                           JobBook::park (a failed round: the policy cannot take it alone)
//     pod seen ──────▶ QUEUED ─────────────────────────────────────────────▶ PARKED
//  Planner::register_    │ ▲ ◀────────── JobBook::add_variant (a variant changed) ──┘
//  variant(s) →          │ │
//  JobBook::add_run      │ │ Planner::hold_admitted: the hold lapses unbound (admission_hold)
//                        │ │
//  Planner::admit_all ─▶ ▼ │
//                      ADMITTED
//                        │
//  Planner::record_      │         Planner::drop_bind_intent (the API server refused), or
//  bind_intent (synced)  ▼         Planner::reconcile_binds (the pod is unbound) ──▶ QUEUED
//                    BIND INTENT
//                        │
//  Planner::record_start │ (the binding was accepted, or the watch sees spec.nodeName), or
//  → JobBook::start      ▼ Planner::reconcile_binds finds the pod bound
//                     RUNNING
//                        │
//  Planner::complete,    │ (the pod Succeeded, Failed or was deleted; or POST /v1/jobs/{id}/done)
//  complete_all →        ▼
//  JobBook::finish      DONE
//
//  QUEUED ── Planner::remove → JobBook::remove (DELETE /v1/jobs/{id}) ──▶ REMOVED
//  QUEUED ── Planner::remove_variant → JobBook::remove_variant (its last variant deleted) ──▶
//            forgotten, in the book and the store
//  DONE, REMOVED ── a pod of the job re-created with a new UID: JobBook::add_run ──▶ a new run,
//                   QUEUED
//  RUNNING ── Planner::requeue → JobBook::requeue (its batch/v1 Job's pod failed and the Job will
//             run it again as another pod; a gang: once every member has ended after one
//             Failed) ──▶ QUEUED, the same run
//  DONE ── JobBook::forget_finished (retention.finished_seconds) ──▶ out of memory; the store
//          keeps it until Store::prune_history (retention.history_seconds)
//
// /bind may also take a queued run that was never admitted straight to BIND INTENT, when its
// check passes (a machine free on the offered node). A run whose bind is in doubt at start-up
// (an intent restored from the store) stays out of the plan until Planner::reconcile_binds
// settles it.
//
// A gang (N pods, BookJob::is_gang) moves through the same phases with other calls: QUEUED ──
// Planner::admit_all (all N released) ──▶ ADMITTED ── its N binds gathered, then
// Planner::record_gang_start → JobBook::start_gang (or the watch sees all N bound:
// Planner::gang_member_bound) ──▶ RUNNING ── Planner::gang_member_ended for each, the last one
// → Planner::complete ──▶ DONE. A gang bound only in part, or admitted past admission_hold
// unbound, goes back: Planner::roll_back_gang ──▶ QUEUED, its members out of the book, with
// BookJob::gang_note (no bind intent: the watch settles a gang's binds).
#pragma once

namespace allox::extender {

// kRemoved: an admin removed the queued job (DELETE /v1/jobs/{id}); its pods are refused.
enum class JobPhase { kQueued, kRunning, kDone, kRemoved };
const char* phase_name(JobPhase phase);

}  // namespace allox::extender
