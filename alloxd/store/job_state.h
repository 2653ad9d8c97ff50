// The states one run of a job goes through, and the change that moves it along each edge.
//
// JobPhase is what the store keeps (queued, running, done, removed). The book refines a queued
// run: parked (BookJob::parked: the policy cannot take it), admitted (the planner holds a
// machine for it: Planner's admissions) and bind intent (BookJob::intent: a bind alloxd asked
// the API server for and has not seen answered). Every edge below but a lapsed hold (the
// planner's, not the book's) is a BookChange
// (alloxd/plan/book_change.h) given to Planner::apply, the book's one write path, which writes
// it to the store and then the book; docs/design.md, "Job state machine", gives each edge's
// durability.
//
//                           book::Park (a failed round: the policy cannot take it alone)
//     pod seen ──────▶ QUEUED ─────────────────────────────────────────────▶ PARKED
//  book::RegisterVariant │ ▲ ◀────────── book::RegisterVariant (a variant changed) ──┘
//  → JobBook::add_run    │ │
//                        │ │ Planner::hold_admitted: the hold lapses unbound (admission_hold)
//                        │ │
//  book::Admit ────────▶ ▼ │
//                      ADMITTED
//                        │
//  book::RecordBind-     │         book::DropBindIntent (the API server refused, or
//  Intent (synced)       ▼         reconcile_binds finds the pod unbound) ──▶ QUEUED
//                    BIND INTENT
//                        │
//  book::Start           │ (the binding was accepted, the watch sees spec.nodeName, or
//  → JobBook::start      ▼ Planner::reconcile_binds finds the pod bound)
//                     RUNNING
//                        │
//  book::Complete        │ (the pod Succeeded, Failed or was deleted; or POST /v1/jobs/{id}/done)
//  → JobBook::finish     ▼
//                       DONE
//
//  QUEUED ── book::RemoveJob → JobBook::remove (DELETE /v1/jobs/{id}) ──▶ REMOVED
//  QUEUED ── book::RemoveVariant → JobBook::remove_variant (its last variant deleted) ──▶
//            forgotten, in the book and the store
//  DONE, REMOVED ── a pod of the job re-created with a new UID: book::RegisterVariant →
//                   JobBook::add_run ──▶ a new run, QUEUED
//  RUNNING ── book::Requeue → JobBook::requeue (its batch/v1 Job's pod failed and the Job will
//             run it again as another pod; a gang: once every member has ended after one
//             Failed) ──▶ QUEUED, the same run
//  DONE ── JobBook::forget_finished (retention.finished_seconds) ──▶ out of memory; the store
//          keeps it until Store::prune_history (retention.history_seconds)
//  any ── book::AddProfile: a sample of its speed; no state moves
//
// /bind may also take a queued run that was never admitted straight to BIND INTENT, when its
// check passes (a machine free on the offered node). A run whose bind is in doubt at start-up
// (an intent restored from the store) stays out of the plan until Planner::reconcile_binds
// settles it.
//
// A gang (N pods, BookJob::is_gang) moves through the same phases with other changes: QUEUED ──
// book::Admit (all N released) ──▶ ADMITTED ── its N binds gathered, then book::StartGang →
// JobBook::start_gang (or the watch sees all N bound: Planner::gang_member_bound) ──▶ RUNNING ──
// Planner::gang_member_ended for each, the last one → book::Complete ──▶ DONE. A gang bound only
// in part, or admitted past admission_hold unbound, goes back: book::RollBackGang ──▶ QUEUED, its
// members out of the book, with BookJob::gang_note (no bind intent: the watch settles a gang's
// binds).
#pragma once

namespace allox::extender {

// kRemoved: an admin removed the queued job (DELETE /v1/jobs/{id}); its pods are refused.
enum class JobPhase { kQueued, kRunning, kDone, kRemoved };
const char* phase_name(JobPhase phase);

}  // namespace allox::extender
