// The planner's writers of a run's life after the plan, thin callers of apply() (planner_steps.cc
// says what each change does): bind intents, starts, completions, profile samples; and the binds
// settled from the cluster at start-up.
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "alloxd/plan/planner.h"
#include "core/log.h"

namespace allox::extender {

Status Planner::record_bind_intent(const BindIntent& intent) {
  const BookChange change = book::RecordBindIntent{intent};
  return apply({&change, 1}).front();
}

Status Planner::drop_bind_intent(std::int64_t job_row, const std::string& job_id) {
  const BookChange change = book::DropBindIntent{job_row, job_id};
  return apply({&change, 1}).front();
}

Expected<Planner::Started> Planner::record_start(const JobVariant& variant, const std::string& node,
                                                 int preferred_slot, Durability durability) {
  // Concurrent binds (kube-scheduler's run side by side) share one group commit (apply): with
  // 16 binds in flight, one commit each would queue 16 holds of the writers' lock ahead of the
  // watch's changes, and the watch would fall seconds behind the cluster.
  const BookChange change = book::Start{variant, node, preferred_slot, durability};
  Applied applied = std::move(apply_changes({&change, 1}).front());
  if (!applied.status) return applied.status.error();
  return std::move(*applied.started);
}

bool Planner::held_as_started(const std::string& job_id, const JobRecord& record) const {
  // The plans since its admission have held exactly these machines for the job (hold_admitted),
  // so the plan the next change brings is the one this start would bring: a bind stream wakes
  // no plan of its own. A start anywhere else, or after its hold lapsed, frees or takes
  // machines no plan counted on.
  auto admission = admitted_.find(job_id);
  const BookJob* job = book_.job(job_id);
  if (admission == admitted_.end() || job == nullptr) return false;
  const PlannedStart& held = admission->second.start;
  return held.members.empty() &&
         admission->second.pod_key == record.pod_namespace + "/" + record.pod_name &&
         held.node == record.node && held.device == record.device && held.slot == job->slot &&
         std::chrono::duration<double>(steady_now() - admission->second.at).count() <=
             options_.admission_hold;
}

Status Planner::requeue(const std::string& job_id, Durability durability) {
  const BookChange change = book::Requeue{job_id, durability};
  return apply({&change, 1}).front();
}

Status Planner::complete(const std::string& job_id, Durability durability) {
  const BookChange change = book::Complete{job_id, durability};
  return apply({&change, 1}).front();
}

std::vector<Status> Planner::complete_all(const std::vector<std::string>& job_ids,
                                          Durability durability) {
  std::vector<BookChange> changes;
  changes.reserve(job_ids.size());
  for (const std::string& id : job_ids) changes.emplace_back(book::Complete{id, durability});
  return apply(changes);
}

void Planner::reconcile_binds(const std::vector<PodPlacement>& pods, bool complete) {
  std::map<std::string, const PodPlacement*> by_pod;
  for (const PodPlacement& pod : pods) by_pod[pod_key(pod.pod)] = &pod;
  // What each intent comes to is read here; the changes go through apply, as every writer's do.
  std::vector<BookChange> starts;
  std::vector<std::int64_t> start_rows;  // each start's intent row
  std::vector<BookChange> drops;
  {
    std::shared_lock lock(book_mu_);
    for (const auto& [id, job] : book_.jobs()) {
      if (!job.intent) continue;
      const BindIntent& intent = *job.intent;
      auto it = by_pod.find(pod_key(intent.pod));
      if (it == by_pod.end() && !complete) continue;
      const PodPlacement* seen = it == by_pod.end() ? nullptr : it->second;
      const bool bound =
          seen != nullptr && seen->exists && !seen->node_name.empty() &&
          (intent.pod.uid.empty() || seen->pod.uid.empty() || seen->pod.uid == intent.pod.uid);
      auto variant = job.variants.find(pod_key(intent.pod));
      if (bound && variant != job.variants.end()) {
        // Written, not synced: the start clears the intent's row, and should a power cut roll
        // that back, the next start-up settles the intent again.
        starts.emplace_back(
            book::Start{variant->second, seen->node_name, -1, Durability::kWritten});
        start_rows.push_back(intent.job_row);
      } else {
        drops.emplace_back(book::DropBindIntent{intent.job_row, intent.job_id});
      }
    }
  }
  const std::vector<Status> started = apply(starts);
  for (std::size_t i = 0; i < starts.size(); ++i) {
    if (started[i]) continue;
    // The node left the inventory or is full in allox's view: the pod runs there anyway, but
    // allox cannot account for it; the job stays queued rather than double-booked.
    const auto& start = std::get<book::Start>(starts[i]);
    log_warn(
        "bind in doubt not settled as a start: the job stays queued",
        {{"job", start.variant.job_id}, {"node", start.node}, {"reason", started[i].message()}});
    drops.emplace_back(book::DropBindIntent{start_rows[i], start.variant.job_id});
  }
  (void)apply(drops);
  intents_seen_ = true;
  wake();
}

Status Planner::add_profile(const ProfileReport& report) {
  const BookChange change = book::AddProfile{report};
  return apply({&change, 1}).front();
}

}  // namespace allox::extender
