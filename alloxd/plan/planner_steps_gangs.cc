// What the gangs' BookChanges do at each step of Planner::apply (planner.h, planner_steps.h): a
// gang's start, every member at once, a rollback of a gang that did not bind whole, a member's
// end, and a released gang adopted on its pinned nodes after a restart.
#include <algorithm>
#include <map>
#include <mutex>
#include <shared_mutex>
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

// EndMember: the book's count of the gang's ended members; the completion or requeue that follows
// the last is the caller's next change (gang_member_ended).

void Planner::Steps::check_change(Step& step, const book::EndMember& c) {
  if (!claim(step, c.job_id)) return;
  step.then = Step::Then::kBook;
}

Status Planner::Steps::write_change(Step&, const book::EndMember&) {
  return OkStatus();
}

void Planner::Steps::book_change(Step& step, const book::EndMember& c) {
  if (c.failed && c.retry) p.gang_retries_.insert(c.job_id);
  const bool ended = p.book_.end_member(c.job_id, c.pod_key);
  const BookJob* job = p.book_.job(c.job_id);
  if (c.failed && !ended && job != nullptr) {
    Rollback rest{c.job_id,
                  "failed: member " + c.pod_key +
                      " failed, so the gang ends and its other members are deleted",
                  {},
                  "GangFailed"};
    for (const auto& [key, node] : job->member_nodes) {
      auto pod = job->variants.find(key);
      if (!job->members_ended.count(key) && pod != job->variants.end()) {
        rest.members.push_back(pod->second.pod);
      }
    }
    if (!rest.members.empty()) p.rollbacks_.push_back(std::move(rest));
  }
  step.outcome->gang_ended = ended;
  if (ended) step.outcome->gang_again = p.gang_retries_.erase(c.job_id) > 0;
}

// AdoptGang: admitted again on its members' pinned nodes when each still has their units free
// of running jobs (one device type of the gang's for all); else an error naming what a node
// lacks. A gang admitted already, or no longer queued, is left as it is.

void Planner::Steps::check_change(Step& step, const book::AdoptGang& c) {
  if (!claim(step, c.job_id)) return;
  std::shared_lock lock(p.book_mu_);
  const BookJob* job = p.book_.job(c.job_id);
  if (job == nullptr || !job->is_gang() || job->record.phase != JobPhase::kQueued ||
      p.admitted_.count(c.job_id)) {
    return;
  }
  if (static_cast<int>(c.member_nodes.size()) != job->record.gang) {
    step.outcome->status =
        Error{"gang " + c.job_id + " has " + std::to_string(c.member_nodes.size()) +
              " pinned members, not " + std::to_string(job->record.gang)};
    return;
  }
  int units = 1;
  for (const auto& [key, node] : c.member_nodes) {
    auto variant = job->variants.find(key);
    if (variant == job->variants.end()) {
      step.outcome->status = Error{"pod " + key + " is not a member of gang " + c.job_id};
      return;
    }
    units = std::max(units, variant->second.units);
  }
  std::map<std::string, int> wanted;  // node -> units its members need
  for (const auto& [key, node] : c.member_nodes) wanted[node] += units;
  std::string why;
  for (const DeviceType& type : job->variants.begin()->second.device_types()) {
    std::string short_of;
    for (const auto& [node, need] : wanted) {
      const NodeCapacity room = p.book_.capacity(node, type);
      if (room.free < need && short_of.empty()) {
        short_of = node + " has " + std::to_string(room.free) + " of " + std::to_string(need) +
                   " " + type + " free";
      }
    }
    if (!short_of.empty()) {
      why += (why.empty() ? "" : "; ") + short_of;
      continue;
    }
    step.start = PlannedStart{};
    step.start.device = type;
    step.start.units = units;
    // No slot yet: each plan holds `units` idle ones of the member's node (hold_members).
    for (const auto& [key, node] : c.member_nodes) step.start.members.push_back({key, node, -1});
    step.start.node = step.start.members.front().node;
    step.replan = true;
    step.then = Step::Then::kBook;
    return;
  }
  step.outcome->status = Error{"its pinned nodes no longer hold it: " + why};
}

Status Planner::Steps::write_change(Step&, const book::AdoptGang&) {
  return OkStatus();
}

void Planner::Steps::book_change(Step& step, const book::AdoptGang& c) {
  p.admitted_[c.job_id] = {c.member_nodes.begin()->first, step.start, p.steady_now()};
  view.admitted = true;  // the book's version moves once for the chunk (commit_group)
}

}  // namespace allox::extender
