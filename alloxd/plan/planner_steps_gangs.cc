// What the gangs' BookChanges do at each step of Planner::apply (planner.h, planner_steps.h): a
// gang's start, every member at once, and a rollback of a gang that did not bind whole.
#include <string>

#include "alloxd/plan/planner_steps.h"
#include "core/log.h"

namespace allox::extender {

// StartGang: as Start, every member at once.

void Planner::Steps::check_change(Step& step, const book::StartGang& c) {
  if (!claim(step, c.job_id)) return;
  std::unique_lock lock(p.book_mu_);
  const BookJob* job = p.book_.job(c.job_id);
  if (job != nullptr && job->record.phase == JobPhase::kRunning &&
      job->member_nodes == c.member_nodes) {
    step.outcome->gang = job->record;  // already recorded (the watch's members, or a repeat)
    return;
  }
  auto started = p.book_.start_gang(c.job_id, c.member_nodes, c.device, view.at);
  if (!started) {
    step.outcome->status = started.error();
    return;
  }
  step.record = *started;
  step.outcome->gang = *started;
  step.durability = c.durability;
  step.replan = true;
  step.then = Step::Then::kWrite;
}

Status Planner::Steps::write_change(Step& step, const book::StartGang& c) {
  return p.store_->record_gang_start(step.record, c.member_nodes, step.durability);
}

void Planner::Steps::book_change(Step&, const book::StartGang& c) {
  // What the watch saw bound so far belongs to this run: a later run of the job (its pods made
  // again under the same names) counts its own members' bindings from none.
  p.admitted_.erase(c.job_id);
  p.gang_bound_.erase(c.job_id);
}

// RollBackGang: the gang's members leave (the book and the store) and it waits again.

void Planner::Steps::check_change(Step& step, const book::RollBackGang& c) {
  if (!claim(step, c.job_id)) return;
  {
    std::shared_lock lock(p.book_mu_);
    const BookJob* job = p.book_.job(c.job_id);
    if (job == nullptr || job->record.phase != JobPhase::kQueued) return;
    step.row = job->record.row;
    for (const auto& [key, member] : job->variants) step.pods.push_back(member.pod);
  }
  step.then = Step::Then::kWrite;
}

Status Planner::Steps::write_change(Step& step, const book::RollBackGang& c) {
  // A member that cannot be forgotten is only reported: the rollback goes on (the book lets go
  // of it, and a restart reads the gang back waiting for its members).
  for (const PodIdentity& pod : step.pods) {
    if (auto s = p.store_->forget_member(pod, step.row, Durability::kWritten); !s) {
      log_warn("could not forget a rolled-back gang member",
               {{"job", c.job_id}, {"pod", pod_key(pod)}, {"error", s.message()}});
    }
  }
  return OkStatus();
}

void Planner::Steps::book_change(Step& step, const book::RollBackGang& c) {
  p.admitted_.erase(c.job_id);
  p.gang_bound_.erase(c.job_id);
  p.book_.note_gang(c.job_id, c.note);  // first: the note keeps the job once its members leave
  for (const PodIdentity& pod : step.pods) {
    if (!pod.uid.empty()) p.rolled_back_.insert(pod.uid);
    p.book_.remove_variant(pod.namespace_name, pod.name);
  }
  p.rollbacks_.push_back({c.job_id, c.note, step.pods});  // under write_mu_
  step.replan = true;
}

}  // namespace allox::extender
