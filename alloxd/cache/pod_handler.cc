#include "alloxd/cache/pod_handler.h"

#include <algorithm>
#include <map>

#include "core/log.h"
#include "kube/pods.h"

namespace allox::extender {
namespace {

using namespace feed;
using nlohmann::json;

// The feed runs on the informer's thread: a change it cannot record has no caller to go back
// to, so it is logged (the next list or event tries again).
template <class T>
void log_unless_ok(const Expected<T>& outcome, std::string_view event, const JobVariant& variant) {
  if (outcome) return;
  log_warn(event, {{"job", variant.job_id},
                   {"pod", key_of(variant.pod.namespace_name, variant.pod.name)},
                   {"error", outcome.message()}});
}

}  // namespace

void ClusterFeed::PodHandler::on_replace(const std::vector<json>& objects) {
  std::lock_guard serial(serial_);
  Handling handling(handling_);
  std::map<std::string, ObservedPod> seen;
  std::vector<PodPlacement> placements;
  held_.clear();
  for (const json& object : objects) {
    auto pod = ours(object);
    if (!pod) continue;
    hold(*pod, object);
    placements.push_back(
        {{pod->ref.name, pod->ref.namespace_name, pod->ref.uid}, true, pod->node_name, pod->phase});
    if (!pod->deleting) seen[key_of(pod->ref.namespace_name, pod->ref.name)] = *pod;
  }
  flush_pending();  // what the last watch saw comes before this list
  // Binds in doubt (intents a crash left behind) are settled from this full list first: a
  // pod with spec.nodeName was bound, one without (or absent) was not.
  planner_.reconcile_binds(placements, /*complete=*/true);
  std::map<std::string, ObservedPod> gone;  // in key order, as the list's own
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, pod] : pods_) {
      if (!seen.count(key)) gone.emplace(key, pod);
    }
  }
  for (const auto& [key, pod] : gone) forget(pod);
  for (const auto& [key, pod] : seen) apply(pod);
  flush_pending();
  synced_.store(true);
  if (on_change_) on_change_();
}

void ClusterFeed::PodHandler::on_upsert(const json& object) {
  std::lock_guard serial(serial_);
  Handling handling(handling_);
  upsert(object);
  notify_unless_pending();
}

void ClusterFeed::PodHandler::upsert(const json& object) {
  auto pod = ours(object);
  if (pod) hold(*pod, object);
  if (pod && !pod->deleting) {
    apply(*pod);
  } else if (auto identity = pod_identity(object)) {
    // Being deleted, or no longer ours: gone, if we knew it.
    forget_if_known(identity->namespace_name, identity->name);
  }
}

void ClusterFeed::PodHandler::on_delete(const json& object) {
  std::lock_guard serial(serial_);
  Handling handling(handling_);
  auto identity = pod_identity(object);
  if (!identity) return;
  if (auto owner = job_owner(object)) {
    auto held = held_.find(owner->key());
    if (held != held_.end() && held->second.erase(pod_key(*identity)) > 0 && held->second.empty()) {
      held_.erase(held);
    }
  }
  forget_if_known(identity->namespace_name, identity->name);
  notify_unless_pending();
}

void ClusterFeed::PodHandler::on_caught_up() {
  std::lock_guard serial(serial_);
  Handling handling(handling_);
  if (flush_pending() && on_change_) on_change_();
}

void ClusterFeed::PodHandler::job_seen(const std::string& job_key) {
  std::lock_guard serial(serial_);
  auto held = held_.find(job_key);
  if (held == held_.end()) return;
  Handling handling(handling_);
  std::vector<json> pods;
  for (auto& [key, object] : held->second) pods.push_back(object);
  for (const json& object : pods) upsert(object);
  if (flush_pending() || on_change_) {
    if (on_change_) on_change_();
  }
}

void ClusterFeed::PodHandler::hold(const ObservedPod& pod, const json& object) {
  if (!pod.owner_job) return;
  const std::string job_key = pod.owner_job->key();
  const std::string key = key_of(pod.ref.namespace_name, pod.ref.name);
  if (pod.awaiting_job && !pod.deleting) {
    held_[job_key][key] = object;
    return;
  }
  auto held = held_.find(job_key);
  if (held != held_.end() && held->second.erase(key) > 0 && held->second.empty()) held_.erase(held);
}

void ClusterFeed::PodHandler::resolve_job(ObservedPod& pod) const {
  if (!pod.owner_job || !pod.variant) return;
  const std::optional<JobFacts> job = jobs_.find(pod.owner_job->key());
  if (!job || job->ref.uid != pod.owner_job->uid) {
    std::string error = jobs_.error_of(pod.owner_job->key());
    pod.variant.reset();
    if (!error.empty()) {
      pod.read_error = error;  // a Job whose allox.io/job is no job id: never booked
    } else {
      pod.awaiting_job = true;
      pod.read_error = "its Job " + pod.owner_job->key() + " is not seen yet";
    }
    return;
  }
  auto gang = gang_of(*job);
  if (!gang) {
    pod.variant.reset();
    pod.job_refusal = gang.message();
    return;
  }
  pod.variant->job_id = job->job_id;
  pod.variant->gang = *gang;
}

bool ClusterFeed::PodHandler::job_retries(const ObservedPod& pod, bool vanished) const {
  if (!pod.owner_job) return false;
  const std::optional<JobFacts> job = jobs_.find(pod.owner_job->key());
  if (!job || job->ref.uid != pod.owner_job->uid || job->finished()) return false;
  int failures = vanished ? 1 : 0;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, seen] : pods_) {
      if (seen.phase == "Failed" && seen.owner_job && seen.owner_job->uid == pod.owner_job->uid) {
        ++failures;
      }
    }
  }
  // The Job controller fails the Job once its failures exceed backoffLimit; the Failed pods
  // stay in the API server, so the watch counts them (this one among them).
  return failures <= job->backoff_limit;
}

void ClusterFeed::PodHandler::requeue(const JobVariant& variant) {
  flush_pending();  // the ends and registrations before it come first
  log_unless_ok(planner_.requeue(variant.job_id, Durability::kWritten),
                "could not queue a failed Job pod's job again", variant);
}

void ClusterFeed::PodHandler::notify_unless_pending() {
  if (on_change_ && !pending_work_.load()) on_change_();
}

void ClusterFeed::PodHandler::forget_if_known(const std::string& namespace_name,
                                              const std::string& name) {
  std::optional<ObservedPod> known;
  {
    std::lock_guard lock(mu_);
    auto it = pods_.find(key_of(namespace_name, name));
    if (it != pods_.end()) known = it->second;
  }
  if (known) forget(*known);
}

std::map<std::string, ObservedPod> ClusterFeed::PodHandler::pods() const {
  std::lock_guard lock(mu_);
  return {pods_.begin(), pods_.end()};
}

std::vector<std::string> ClusterFeed::PodHandler::sync_pods(PodMirror& mirror,
                                                            std::vector<std::string>* changed) {
  std::lock_guard lock(mu_);
  std::vector<std::string> gone;
  if (mirror.generation == 0 || mirror.generation != generation_) {
    for (const auto& [key, pod] : mirror.pods) {
      if (!pods_.count(key)) gone.push_back(key);
    }
    std::sort(gone.begin(), gone.end());
    mirror.pods = pods_;
    if (changed != nullptr) {
      const std::size_t from = changed->size();
      for (const auto& [key, pod] : pods_) changed->push_back(key);
      std::sort(changed->begin() + static_cast<std::ptrdiff_t>(from), changed->end());
    }
  } else {
    for (const std::string& key : dirty_) {
      if (auto it = pods_.find(key); it != pods_.end()) {
        mirror.pods.insert_or_assign(key, it->second);
        if (changed != nullptr) changed->push_back(key);
      } else if (mirror.pods.erase(key) > 0) {
        gone.push_back(key);
      }
    }
  }
  dirty_.clear();
  mirror.generation = ++generation_;
  return gone;
}

std::optional<std::string> ClusterFeed::PodHandler::watched_job(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = pods_.find(key);
  if (it == pods_.end()) return std::nullopt;
  return it->second.variant ? it->second.variant->job_id : std::string();
}

std::optional<ObservedPod> ClusterFeed::PodHandler::ours(const json& object) const {
  if (!config_.scheduler_name.empty() &&
      string_at(object, "spec", "schedulerName") != config_.scheduler_name) {
    return std::nullopt;  // another scheduler's pod (the field selector should have kept it out)
  }
  auto pod = observe_pod(object, config_.devices, config_.tenancy);
  if (!pod) return std::nullopt;
  resolve_job(*pod);
  return std::move(*pod);
}

ClusterFeed::PodHandler::Standing ClusterFeed::PodHandler::standing(const ObservedPod& pod) const {
  if (!pod.variant) return Standing::kUnknown;
  return planner_.read([&](const JobBook& book) {
    const BookJob* job = book.job(pod.variant->job_id);
    if (job == nullptr) return Standing::kUnknown;
    switch (job->record.phase) {
      case JobPhase::kQueued:
        return Standing::kWaiting;
      case JobPhase::kRunning:
        return job->record.pod_namespace == pod.ref.namespace_name &&
                       job->record.pod_name == pod.ref.name
                   ? Standing::kRunsAsThisPod
                   : Standing::kRunsAsAnother;
      case JobPhase::kDone:
      case JobPhase::kRemoved:  // an admin removed it: its pods are refused, never run
        return Standing::kDone;
    }
    return Standing::kUnknown;
  });
}

void ClusterFeed::PodHandler::apply(const ObservedPod& pod) {
  std::string key = key_of(pod.ref.namespace_name, pod.ref.name);
  {
    std::lock_guard lock(mu_);
    pods_[key] = pod;
    mark_dirty(key);
  }
  if (!pod.variant) return;
  const JobVariant& variant = *pod.variant;
  // A pod whose registration is pending is read from the book only once the book has it.
  if (pending_keys_.count(key) > 0) flush_pending();
  if (variant.gang > 1 && apply_gang_member(pod)) return;
  Standing now = standing(pod);
  if (pod.phase == "Succeeded" || pod.phase == "Failed") {
    if (now == Standing::kRunsAsThisPod && pod.phase == "Failed" && job_retries(pod, false)) {
      requeue(variant);  // its Job runs it again as another pod: the same job
      return;
    }
    // The book does not show a pending completion yet: the set keeps it to one.
    if (now == Standing::kRunsAsThisPod && pending_completion_jobs_.insert(variant.job_id).second) {
      pending_completions_.push_back(variant);
      pending_work_.store(true);
    }
    return;
  }
  if (!pod.node_name.empty()) {
    // Bound (by our /bind, or before a restart): the job runs there.
    if (now == Standing::kUnknown || now == Standing::kWaiting) {
      flush_pending();  // the start may take a machine a pending completion frees
      auto registered = planner_.register_variant(variant, Durability::kWritten);
      log_unless_ok(registered, "could not record a bound pod", variant);
      if (registered) {
        log_unless_ok(planner_.record_start(variant, pod.node_name, -1, Durability::kWritten),
                      "could not record a start", variant);
      }
    }
    return;
  }
  // Waiting for a decision: a variant of its job. A late variant of a job that already runs
  // or ran stays out of the book; the controller deletes it.
  if (now == Standing::kUnknown || now == Standing::kWaiting) {
    pending_.push_back(variant);
    pending_keys_.insert(std::move(key));
    pending_work_.store(true);
  }
}

bool ClusterFeed::PodHandler::flush_pending() {
  if (pending_.empty() && pending_completions_.empty()) return false;
  std::vector<JobVariant> batch;
  batch.swap(pending_);
  pending_keys_.clear();
  std::vector<JobVariant> ended;
  ended.swap(pending_completions_);
  pending_completion_jobs_.clear();
  if (!batch.empty()) {
    const std::vector<Status> outcomes = planner_.register_variants(batch, Durability::kWritten);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      log_unless_ok(outcomes[i], "could not record a pod", batch[i]);
    }
  }
  if (!ended.empty()) {
    std::vector<std::string> ids;
    ids.reserve(ended.size());
    for (const JobVariant& variant : ended) ids.push_back(variant.job_id);
    const std::vector<Status> outcomes = planner_.complete_all(ids, Durability::kWritten);
    for (std::size_t i = 0; i < ended.size(); ++i) {
      log_unless_ok(outcomes[i], "could not record a completion", ended[i]);
    }
  }
  pending_work_.store(false);
  return true;
}

void ClusterFeed::PodHandler::forget(const ObservedPod& pod) {
  {
    std::lock_guard lock(mu_);
    std::string key = key_of(pod.ref.namespace_name, pod.ref.name);
    pods_.erase(key);
    mark_dirty(std::move(key));
  }
  if (!pod.variant) return;
  // A deleted pod's registration may be pending: the book must have it to forget it.
  const std::string key = key_of(pod.ref.namespace_name, pod.ref.name);
  if (pending_keys_.count(key) > 0) flush_pending();
  if (pod.variant->gang > 1 && gang_member_gone(pod)) return;
  Standing now = standing(pod);
  if (now == Standing::kRunsAsThisPod && pod.phase != "Succeeded" && pod.phase != "Failed" &&
      job_retries(pod, true)) {
    requeue(*pod.variant);  // deleted while it ran: its Job runs it again as another pod
  } else if (now == Standing::kRunsAsThisPod) {
    if (pending_completion_jobs_.insert(pod.variant->job_id).second) {
      pending_completions_.push_back(*pod.variant);
      pending_work_.store(true);
    }
  } else if (now == Standing::kWaiting) {
    flush_pending();  // its other variants' registrations and the ends before it come first
    log_unless_ok(planner_.remove_variant(pod.variant->pod), "could not forget a deleted pod",
                  *pod.variant);
  }
}

void ClusterFeed::PodHandler::mark_dirty(std::string key) {
  if (dirty_.size() > 2 * pods_.size() + 1024) {
    dirty_.clear();
    ++generation_;  // no mirror is current: each one's next sync is a full copy
  }
  dirty_.insert(std::move(key));
}

}  // namespace allox::extender
