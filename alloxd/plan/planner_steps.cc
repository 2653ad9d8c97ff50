// What each kind of BookChange does at each step of Planner::apply (planner.h): check it against
// the book, write its rows in the group's transaction, change the book. The state each moves a
// run along: alloxd/store/job_state.h.
#include "alloxd/plan/planner_steps.h"

#include <algorithm>
#include <string>
#include <variant>

#include "core/log.h"

namespace allox::extender {
namespace {

std::string unknown(const std::string& job_id) {
  return "job " + job_id + " is unknown to allox";
}

std::string not_running(const std::string& job_id, JobPhase phase) {
  return "job " + job_id + " is " + phase_name(phase) + ", not running";
}

}  // namespace

void Planner::Steps::check(Step& step) {
  std::visit([&](const auto& c) { check_change(step, c); }, *step.change);
}

Status Planner::Steps::write(Step& step) {
  return std::visit([&](const auto& c) { return write_change(step, c); }, *step.change);
}

void Planner::Steps::book(Step& step) {
  if (!step.outcome->status) return;  // its write failed: the book stays as it was
  std::visit([&](const auto& c) { book_change(step, c); }, *step.change);
}

const BookJob* Planner::Steps::known_job(Step& step, const std::string& job_id) {
  const BookJob* job = p.book_.job(job_id);
  if (job == nullptr) step.outcome->status = Error{unknown(job_id)};
  return job;
}

bool Planner::Steps::claim(Step& step, const std::string& job_id, bool registering) {
  auto [it, fresh] = view.touched.emplace(job_id, registering);
  if (!fresh && !(registering && it->second)) {
    step.then = Step::Then::kNextGroup;
    return false;
  }
  if (!registering) it->second = false;
  return true;
}

// RegisterVariant: a new run (its row and first variant together), or another (changed) variant.

void Planner::Steps::check_change(Step& step, const book::RegisterVariant& c) {
  const JobVariant& variant = c.variant;
  step.durability = c.durability;
  if (!claim(step, variant.job_id, true)) return;
  if (auto run = view.new_runs.find(variant.job_id); run != view.new_runs.end()) {
    // Its run is new in this group, not in the book yet: the variant joins it.
    step.variant_change = JobBook::Change::kVariant;
    step.run = run->second;
    step.then = Step::Then::kWrite;
    return;
  }
  {
    std::shared_lock lock(p.book_mu_);
    // A sibling of a job admitted as another variant (seen again before its deletion) stays out.
    if (p.admitted_as_another(variant)) return;
    step.variant_change = p.book_.classify(variant);
    if (step.variant_change == JobBook::Change::kNone) return;
    if (step.variant_change == JobBook::Change::kVariant) {
      step.record = p.book_.job(variant.job_id)->record;
    }
  }
  if (step.variant_change == JobBook::Change::kNewRun) {
    step.record.id = variant.job_id;
    step.record.user = variant.user;
    step.record.arrival = view.at;
    view.new_runs[variant.job_id] = &step;
  }
  step.then = Step::Then::kWrite;
}

Status Planner::Steps::write_change(Step& step, const book::RegisterVariant& c) {
  if (step.variant_change == JobBook::Change::kNewRun) {
    // The run's row and its first variant in one unit: no job without its pod.
    auto row = p.store_->record_arrival(step.record, c.variant, step.durability);
    if (!row) return row.error();
    step.record.row = *row;
    return OkStatus();
  }
  if (step.run != nullptr && !step.run->outcome->status) {
    return Error{"job " + c.variant.job_id + ": its run could not be recorded"};
  }
  const std::int64_t row = step.run != nullptr ? step.run->record.row : step.record.row;
  return p.store_->record_variant(row, c.variant, step.durability);
}

void Planner::Steps::book_change(Step& step, const book::RegisterVariant& c) {
  if (step.variant_change == JobBook::Change::kNewRun) {
    p.book_.add_run(step.record, c.variant);
  } else {
    p.book_.add_variant(c.variant);
  }
  step.outcome->version = p.book_.version();
  step.replan = true;
}

// RemoveVariant: the pod leaves its queued job (the job too, when it was its last).

void Planner::Steps::check_change(Step& step, const book::RemoveVariant& c) {
  std::string job_id;
  {
    std::shared_lock lock(p.book_mu_);
    const BookJob* job = p.book_.job_of_pod(c.pod.namespace_name, c.pod.name);
    if (job == nullptr || job->record.phase != JobPhase::kQueued) return;  // a run keeps its pods
    job_id = job->record.id;
    step.row = job->record.row;
  }
  if (!claim(step, job_id)) return;
  step.job_id = job_id;
  step.then = Step::Then::kWrite;
}

Status Planner::Steps::write_change(Step& step, const book::RemoveVariant& c) {
  return p.store_->forget_variant(c.pod, step.row, Durability::kWritten);
}

void Planner::Steps::book_change(Step& step, const book::RemoveVariant& c) {
  p.book_.remove_variant(c.pod.namespace_name, c.pod.name);
  if (p.book_.job(step.job_id) == nullptr) p.admitted_.erase(step.job_id);
  step.replan = true;
}

// Admit: the job's siblings leave; the plans hold its start from now on.

void Planner::Steps::check_change(Step& step, const book::Admit& c) {
  if (!claim(step, c.job_id)) return;
  {
    std::shared_lock lock(p.book_mu_);
    const BookJob* job = known_job(step, c.job_id);
    if (job == nullptr) return;
    if (job->record.phase != JobPhase::kQueued) return;
    if (!job->variants.count(c.pod_key)) {
      step.outcome->status = Error{"pod " + c.pod_key + " is not a variant of job " + c.job_id};
      return;
    }
    if (p.admitted_as_before(c.job_id, c.pod_key, c.start)) return;  // nothing to plan again
    step.row = job->record.row;
    // A gang's other pods are its members, not siblings: all of them run.
    for (const auto& [key, variant] : job->variants) {
      if (key != c.pod_key && !job->is_gang()) step.pods.push_back(variant.pod);
    }
  }
  step.then = step.pods.empty() ? Step::Then::kBook : Step::Then::kWrite;
}

Status Planner::Steps::write_change(Step& step, const book::Admit&) {
  for (const PodIdentity& sibling : step.pods) {
    if (auto s = p.store_->forget_variant(sibling, step.row, Durability::kWritten); !s) return s;
  }
  return OkStatus();
}

void Planner::Steps::book_change(Step& step, const book::Admit& c) {
  for (const PodIdentity& sibling : step.pods) {
    p.book_.remove_variant(sibling.namespace_name, sibling.name);
  }
  Admission& admission = p.admitted_[c.job_id];
  // A hold moved to another machine of the same node (hold_admitted) is the same commitment:
  // its time runs from the first admission.
  const bool moved = admission.pod_key == c.pod_key && admission.start.node == c.start.node &&
                     admission.start.device == c.start.device;
  admission = {c.pod_key, c.start, moved ? admission.at : p.steady_now()};
  p.held_jobs_.insert(c.job_id);
  view.admitted = true;  // the book's version moves once for the chunk (commit_group)
  // An admission exactly as the latest plan starts the job is that plan carried out: the plan
  // the next change brings holds it (hold_admitted), and replanning for it alone would find the
  // same starts. Anything else wakes the planner.
  const std::shared_ptr<const Plan> latest = p.plans_.latest();
  auto planned = latest->starts.find(c.job_id);
  step.replan = planned == latest->starts.end() || !(planned->second == c.start);
}

// Bind intents: the book learns of a bind when it starts; it holds an intent only as restored
// from the store, until start-up settles it (reconcile_binds).

void Planner::Steps::check_change(Step& step, const book::RecordBindIntent& c) {
  // /bind read the job queued, but an admin's removal (or a start the watch reported) may have
  // come since: such a job is not bound, and the API server never hears of the bind.
  if (!claim(step, c.intent.job_id)) return;
  {
    std::shared_lock lock(p.book_mu_);
    const BookJob* job = known_job(step, c.intent.job_id);
    if (job == nullptr) return;
    if (job->record.phase != JobPhase::kQueued) {
      step.outcome->status = Error{"job " + c.intent.job_id + " is " +
                                   phase_name(job->record.phase) + ", not queued: not bound"};
      return;
    }
  }
  step.durability = Durability::kSynced;
  step.then = Step::Then::kWrite;
}

Status Planner::Steps::write_change(Step&, const book::RecordBindIntent& c) {
  return p.store_->record_bind_intent(c.intent);
}

void Planner::Steps::book_change(Step&, const book::RecordBindIntent&) {}

void Planner::Steps::check_change(Step& step, const book::DropBindIntent&) {
  step.durability = Durability::kSynced;
  step.then = Step::Then::kWrite;
}

Status Planner::Steps::write_change(Step&, const book::DropBindIntent& c) {
  return p.store_->drop_bind_intent(c.job_row);
}

void Planner::Steps::book_change(Step&, const book::DropBindIntent& c) {
  p.book_.clear_intent(c.job_id);
}

// Start: the book first (only it can choose the machines), then the store. A bind's intent is
// on disk already, so a failed write is settled from spec.nodeName after a restart.

void Planner::Steps::check_change(Step& step, const book::Start& c) {
  const JobVariant& variant = c.variant;
  if (!claim(step, variant.job_id)) return;
  std::unique_lock lock(p.book_mu_);
  // Idempotent: the watch may report the binding (ClusterFeed) before /bind records it, and a
  // short job may even have finished by then: this very run is not a second start.
  if (const BookJob* job = p.book_.job(variant.job_id);
      job != nullptr &&
      (job->record.phase == JobPhase::kRunning || job->record.phase == JobPhase::kDone) &&
      job->record.node == c.node && job->record.pod_namespace == variant.pod.namespace_name &&
      job->record.pod_name == variant.pod.name) {
    step.outcome->started = Started{job->record, {}};
    return;
  }
  int slot = c.preferred_slot;
  const auto admission = p.admitted_.find(variant.job_id);
  if (slot < 0 && admission != p.admitted_.end() && admission->second.start.node == c.node &&
      variant.runs_on(admission->second.start.device)) {
    slot = admission->second.start.slot;  // the machine held for it (the watch names none)
  }
  auto record = p.book_.start(variant.job_id, variant, c.node, slot, view.at);
  if (!record) {
    step.outcome->status = record.error();
    return;
  }
  p.held_jobs_.erase(variant.job_id);
  step.replan = !p.held_as_started(variant.job_id, *record);
  Started started{*record, {}};
  if (auto waited = p.completion_to_bind_.bound(c.node, record->device, view.at)) {
    p.metrics_.record_completion_to_bind(*waited);
  }
  for (const auto& [key, v] : p.book_.job(variant.job_id)->variants) {
    // Only in the bound pod's namespace: a job never spans tenants (alloxd/model/pod.h).
    if (key != pod_key(variant.pod) && v.pod.namespace_name == variant.pod.namespace_name) {
      started.unused_variants.push_back(v.pod);
    }
  }
  step.record = *record;
  step.outcome->started = std::move(started);
  step.durability = c.durability;
  step.then = Step::Then::kWrite;
}

Status Planner::Steps::write_change(Step& step, const book::Start&) {
  return p.store_->record_start(step.record, step.durability);
}

void Planner::Steps::book_change(Step& step, const book::Start&) {
  p.metrics_.record_time_to_bind(std::max(0.0, view.at - step.record.arrival));
}

// Complete: the run is done and its machines free.

void Planner::Steps::check_change(Step& step, const book::Complete& c) {
  if (auto first = view.completing.find(c.job_id); first != view.completing.end()) {
    step.same_as = first->second;  // completed once, answered as the first
    return;
  }
  if (!claim(step, c.job_id)) return;
  {
    std::shared_lock lock(p.book_mu_);
    const BookJob* job = known_job(step, c.job_id);
    if (job == nullptr) return;
    if (job->record.phase != JobPhase::kRunning) {
      step.outcome->status = Error{not_running(c.job_id, job->record.phase)};
      return;
    }
    step.node = job->record.node;
    step.device = job->record.device;
    step.row = job->record.row;
    step.at = std::max(view.at, job->record.start);  // as JobBook::finish records it
  }
  view.completing[c.job_id] = &step;
  step.durability = c.durability;
  step.then = Step::Then::kWrite;
}

Status Planner::Steps::write_change(Step& step, const book::Complete&) {
  return p.store_->record_finish(step.row, step.at, step.durability);
}

void Planner::Steps::book_change(Step& step, const book::Complete& c) {
  if (auto r = p.book_.finish(c.job_id, view.at); !r) {
    step.outcome->status = r.error();
    return;
  }
  p.completion_to_bind_.freed(step.node, step.device, view.at, p.book_.queued_count() > 0);
  p.admitted_.erase(c.job_id);
  p.freed_version_.store(p.book_.version(), std::memory_order_release);
  step.replan = true;
}

// Requeue: the run is queued again, its pod (and a gang's other members) no longer its variants.

void Planner::Steps::check_change(Step& step, const book::Requeue& c) {
  if (!claim(step, c.job_id)) return;
  {
    std::shared_lock lock(p.book_mu_);
    const BookJob* job = known_job(step, c.job_id);
    if (job == nullptr) return;
    if (job->record.phase != JobPhase::kRunning) {
      step.outcome->status = Error{not_running(c.job_id, job->record.phase)};
      return;
    }
    step.row = job->record.row;
    step.ran = {job->record.pod_name, job->record.pod_namespace, job->record.pod_uid};
    // A gang's other members ran too: none of them is a variant of the run again.
    for (const auto& [key, node] : job->member_nodes) {
      auto member = job->variants.find(key);
      if (member != job->variants.end() && member->second.pod.name != step.ran.name) {
        step.pods.push_back(member->second.pod);
      }
    }
  }
  step.durability = c.durability;
  step.then = Step::Then::kWrite;
}

Status Planner::Steps::write_change(Step& step, const book::Requeue&) {
  // While the run is still running in the store, so that no variant's removal forgets it.
  for (const PodIdentity& pod : step.pods) {
    if (auto s = p.store_->forget_variant(pod, step.row, step.durability); !s) return s;
  }
  return p.store_->record_requeue(step.row, step.ran, view.at, step.durability);
}

void Planner::Steps::book_change(Step& step, const book::Requeue& c) {
  if (auto r = p.book_.requeue(c.job_id); !r) {
    step.outcome->status = r.error();
    return;
  }
  p.admitted_.erase(c.job_id);
  p.gang_bound_.erase(c.job_id);
  p.freed_version_.store(p.book_.version(), std::memory_order_release);
  step.replan = true;
}

// RemoveJob: an admin's removal of a queued job.

void Planner::Steps::check_change(Step& step, const book::RemoveJob& c) {
  if (!claim(step, c.job_id)) return;
  {
    std::shared_lock lock(p.book_mu_);
    const BookJob* job = known_job(step, c.job_id);
    if (job == nullptr) return;
    // The book says why not (running, done, a bind in doubt) before anything is written.
    if (job->record.phase != JobPhase::kQueued) {
      step.outcome->status = Error{"job " + c.job_id + " is " + phase_name(job->record.phase) +
                                   "; only a queued job can be removed"};
      return;
    }
    if (job->intent) {
      step.outcome->status = Error{"job " + c.job_id + " has a bind to " + job->intent->node +
                                   " in doubt; try again once it is reconciled"};
      return;
    }
    step.row = job->record.row;
    step.at = std::max(view.at, job->record.arrival);  // as JobBook::remove records it
  }
  step.durability = Durability::kSynced;
  step.then = Step::Then::kWrite;
}

Status Planner::Steps::write_change(Step& step, const book::RemoveJob&) {
  return p.store_->record_removal(step.row, step.at);
}

void Planner::Steps::book_change(Step& step, const book::RemoveJob& c) {
  if (auto r = p.book_.remove(c.job_id, view.at); !r) {
    step.outcome->status = r.error();
    return;
  }
  step.replan = true;
}

// AddProfile: a sample of the job's speed on a device.

void Planner::Steps::check_change(Step& step, const book::AddProfile& c) {
  const ProfileReport& report = c.report;
  if (report.device.empty()) {
    step.outcome->status = Error{"device: missing"};
    return;
  }
  if (report.iterations <= 0) {
    step.outcome->status = Error{"iterations: must be > 0"};
    return;
  }
  if (!(report.seconds >= kMinJobSeconds && report.seconds <= kMaxJobSeconds)) {
    step.outcome->status = Error{"seconds: must be within 0.001 to 2592000 (30 days)"};
    return;
  }
  if (!claim(step, report.job_id)) return;
  {
    std::shared_lock lock(p.book_mu_);
    const BookJob* job = known_job(step, report.job_id);
    if (job == nullptr) return;
    if (job->iterations && report.iterations > *job->iterations &&
        report.kind == ProfileSample::Kind::kProgress) {
      step.outcome->status =
          Error{"iterations: more than the job's " + std::to_string(*job->iterations)};
      return;
    }
    step.sample = {report.job_id,  report.device, report.kind,    report.iterations,
                   report.seconds, view.at,       job->record.row};
  }
  step.durability = Durability::kSynced;
  step.then = Step::Then::kWrite;
}

Status Planner::Steps::write_change(Step& step, const book::AddProfile&) {
  return p.store_->record_profile(step.sample);
}

void Planner::Steps::book_change(Step& step, const book::AddProfile&) {
  p.book_.add_sample(step.sample);
  step.replan = true;
}

}  // namespace allox::extender
