// reconcile(job key): the job's start admitted, then each of its pods released (its gate
// removed, or a nudge), deleted (an unused or late variant), or told why it waits (a `Queued`
// event). Returns the actions; the caller runs them.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "alloxd/control/controller.h"
#include "core/log.h"
#include "core/time_text.h"
#include "kube/jobs.h"
#include "kube/pods.h"

namespace allox::extender {
namespace {

// A pod by "namespace/name"; another kind (a Job) as "Kind:namespace/name".
std::string key_of(const kube::ObjectRef& object) {
  const std::string key = object.namespace_name + "/" + object.name;
  return object.kind == "Pod" ? key : object.kind + ":" + key;
}

}  // namespace

Reconciliation Controller::reconcile(const std::string& key) {
  std::lock_guard lock(mu_);
  if (leading_ && !leading_()) return {};
  ++reconciled_;
  Look look;
  look.key = key;
  look.now = now();
  look.wall = planner_.now();
  look.plan = acting_plan();
  {
    std::shared_lock cache(cache_mu_);
    if (auto it = pods_of_.find(key); it != pods_of_.end()) {
      for (const std::string& pod : it->second) {
        if (auto seen = mirror_.pods.find(pod); seen != mirror_.pods.end()) look.pods.insert(*seen);
      }
    }
  }
  look.synced = feed_.synced();
  roll_back(look);
  admit(look);
  const std::vector<PodFacts> facts = facts_of(look);
  std::size_t at = 0;
  for (const auto& [pod_key, pod] : look.pods) act_on(look, pod_key, pod, facts[at++]);
  if (look.pods.empty()) told_until_.erase(key);
  if (look.due) look.out.requeue_after = std::max(Clock::duration::zero(), *look.due - look.now);
  return std::move(look.out);
}

// A job the plan starts now keeps only a variant that runs on the planned device and the cache
// still shows pending (the first by name when there are several); a gang all of its members or
// none. Admitting again as before changes nothing (one whose hold lapsed is made again). A start
// the plan dropped is forgotten: the job waits now.
void Controller::admit(Look& look) {
  auto start = look.plan->starts.find(look.key);
  if (start == look.plan->starts.end()) {
    released_.erase(look.key);
    return;
  }
  std::string chosen;
  planner_.read([&](const JobBook& book) {
    chosen = choose(look, book, start->second);
    look.pin_refused = start->second.members.empty() && !chosen.empty()
                           ? pin_refused(book, look.key, chosen, start->second.node)
                           : std::string();
  });
  if (chosen.empty()) {
    released_.erase(look.key);  // looked at again when its pods change, or at the resync
    return;
  }
  auto [release, fresh] = released_.try_emplace(look.key);
  look.released_now = fresh || release->second.pod != chosen;
  release->second = {chosen, start->second};
  // Mostly admitted already, by act_on_plan's admissions made together: a read then.
  if (planner_.admission_stands(look.key, chosen, start->second)) return;
  const Status admitted = planner_.admit_all({{look.key, chosen, start->second}}).front();
  if (!admitted) {
    log_warn("controller: admission failed", {{"job", look.key}, {"error", admitted.message()}});
    released_.erase(release);
    look.look_again_at(look.now + options_.settle);
  }
}

std::string Controller::choose(const Look& look, const JobBook& book,
                               const PlannedStart& start) const {
  if (!start.members.empty()) {
    const std::string* first = gang_to_admit(look, book, start);
    return first == nullptr ? std::string() : *first;
  }
  const BookJob* job = book.job(look.key);
  if (job == nullptr || job->record.phase != JobPhase::kQueued) return {};
  // A variant that may go to the planned node first: the plan chose the node for one that may.
  const kube::NodeFacts* node = book.node_facts(start.node);
  std::string fallback;
  for (const auto& [key, variant] : job->variants) {
    auto pod = look.pods.find(key);
    if (variant.runs_on(start.device) && pod != look.pods.end() && pod->second.pending()) {
      if (node == nullptr || variant.may_go_to(*node)) return key;
      if (fallback.empty()) fallback = key;
    }
  }
  return fallback;
}

// Why `pod` of the job may not be pinned to `node` (kube-scheduler's words), "" when it may: the
// node's cordon or taints, or the pod's selector or affinity, changed since the plan chose it.
std::string Controller::pin_refused(const JobBook& book, const std::string& job_id,
                                    const std::string& pod, const std::string& node) const {
  const kube::NodeFacts* facts = book.node_facts(node);
  const BookJob* job = book.job(job_id);
  if (facts == nullptr || job == nullptr) return "";
  auto variant = job->variants.find(pod);
  if (variant == job->variants.end()) return "";
  return variant->second.refusal(*facts).value_or("");
}

// Where each of the job's waiting pods' job stands (after the admission), in the order of
// look.pods.
std::vector<Controller::PodFacts> Controller::facts_of(const Look& look) const {
  std::vector<PodFacts> facts;
  planner_.read([&](const JobBook& book) {
    facts.reserve(look.pods.size());
    for (const auto& [key, pod] : look.pods) {
      PodFacts& f = facts.emplace_back();
      if (!pod.variant || !pod.pending()) continue;
      const BookJob* job = book.job(pod.variant->job_id);
      if (job == nullptr) continue;
      f.known = true;
      f.phase = job->record.phase;
      if (f.phase == JobPhase::kRunning) {
        f.runs_as = job->record.pod_namespace + "/" + job->record.pod_name;
      }
      f.in_book = f.phase != JobPhase::kDone && job->variants.count(key) > 0;
      f.gang_member = job->is_gang() && job->variants.count(key) > 0;
    }
  });
  return facts;
}

void Controller::act_on(Look& look, const std::string& key, const ObservedPod& pod,
                        const PodFacts& job) {
  if (!pod.job_refusal.empty() && pod.pending()) {
    tell_refused_job(look, pod);  // said once per change of the pod (and requeue_event)
    return;
  }
  if (!pod.variant || !pod.pending()) return;  // nothing to do until it changes
  if (!job.known) return;                      // not in the book yet: its registration enqueues
  if (job.gang_member && job.phase != JobPhase::kQueued) return;  // a running gang: all run
  // The pod the job runs as is never deleted, even before the watch shows it bound.
  if (job.phase == JobPhase::kRunning && job.runs_as == key) return;
  if (std::optional<std::string> why = why_delete(look, key, pod, job)) {
    if (!why->empty()) delete_variant(look, key, pod, *why);
    return;
  }
  tell_stale_pin(look, pod);
  const std::string& id = pod.variant->job_id;
  auto start = look.plan->starts.find(id);
  auto released = released_.find(id);
  if (start != look.plan->starts.end() && released != released_.end()) {
    if (released->second.pod == key) {
      release(look, key, pod, start->second);
      return;
    }
    // A gang's member: released with the others, pinned to its own placement's node.
    if (const GangPlacement* member = start->second.member(key);
        member != nullptr && released->second.start == start->second) {
      PlannedStart own = start->second;
      own.node = member->node;
      own.slot = member->slot;
      release(look, key, pod, own);
      return;
    }
  }
  if (auto wait = look.plan->waiting.find(id); wait != look.plan->waiting.end()) {
    tell_queued(look, key, pod, wait->second);
  } else if (auto parked = look.plan->parked.find(id); parked != look.plan->parked.end()) {
    tell_parked(look, key, pod, parked->second);
  }
}

std::optional<std::string> Controller::why_delete(const Look& look, const std::string& key,
                                                  const ObservedPod& pod,
                                                  const PodFacts& job) const {
  // A variant as the events name it: its Job ("namespace/job") when a Job controls the pod.
  auto variant_name = [&](const std::string& pod_key) {
    auto it = look.pods.find(pod_key);
    if (it == look.pods.end() || !it->second.owner_job) return pod_key;
    return it->second.owner_job->key();
  };
  // Whether `pod` and the pod `other` are of the same Job: one variant, never deleted for
  // the other.
  auto same_job_object = [&](const std::string& other) {
    if (!pod.owner_job) return false;
    auto it = look.pods.find(other);
    return it != look.pods.end() && it->second.owner_job &&
           it->second.owner_job->uid == pod.owner_job->uid;
  };
  const std::string& id = pod.variant->job_id;
  if (job.phase == JobPhase::kRunning) {
    if (same_job_object(job.runs_as)) return std::string();  // its Job's other pods: kept
    return "job " + id + " runs as variant " + variant_name(job.runs_as);
  }
  if (job.phase == JobPhase::kDone) return "job " + id + " has finished";
  if (job.in_book) return std::nullopt;
  // Not (yet) a variant in the book: deleted only once its job was admitted as another (the
  // feed may show a new pod a moment before the book registers it); until then, left alone.
  const auto admitted = planner_.admitted_as(id);
  if (!admitted || *admitted == key || same_job_object(*admitted)) return std::string();
  return "job " + id + " runs as variant " + variant_name(*admitted);
}

void Controller::delete_variant(Look& look, const std::string& key, const ObservedPod& pod,
                                const std::string& why) {
  look.look_again_at(look.now + options_.settle);  // if the watch shows nothing of it by then
  if (pod.owner_job) {
    // The variant is the Job: deleted whole (its pods follow through the garbage collector),
    // never its pod alone, which the Job controller would make again.
    kube::ObjectRef job{pod.owner_job->namespace_name, pod.owner_job->name, pod.owner_job->uid,
                        "Job", "batch/v1"};
    act(look, "delete job " + job.namespace_name + "/" + job.name, job.uid,
        [this, job, why]() -> Status {
          auto outcome = kube::delete_job(client_, job);
          if (!outcome) return outcome.error();
          if (*outcome == kube::DeleteOutcome::kDeleted) {
            (void)events_.record(job, "Normal", "Deleted", why);
          }
          return OkStatus();
        });
    return;
  }
  kube::ObjectRef ref = pod.ref;
  const std::string version = pod.resource_version;
  act(look, "delete " + key, version, [this, ref, version, why]() -> Status {
    // Only the pod as it was seen: one bound (or changed) since is looked at again.
    auto outcome = kube::delete_pod(client_, ref, version);
    if (!outcome) return outcome.error();
    if (*outcome == kube::DeleteOutcome::kDeleted) {
      (void)events_.record(ref, "Normal", "Deleted", why);
    }
    return OkStatus();
  });
}

void Controller::release(Look& look, const std::string& key, const ObservedPod& pod,
                         const PlannedStart& start) {
  const auto now = look.now;
  kube::ObjectRef ref = pod.ref;
  // Released: it rests until it changes (the watch shows it ungated, bound, parked), its start
  // changes, or (below) a nudge or a lost action is due.
  if (std::find(pod.gates.begin(), pod.gates.end(), kube::kQueueGate) != pod.gates.end()) {
    std::vector<std::string> gates = pod.gates;
    // Pinned to its planned node in the same patch: kube-scheduler then filters that one node.
    // Not where the pod may not go (the node changed since the plan): a pin cannot be undone,
    // so the pod goes through kube-scheduler's full filter, and /filter takes another node of
    // the planned device.
    kube::NodePin pin{look.pin_refused.empty() ? start.node : std::string(), pod.affinity_room};
    if (!look.pin_refused.empty()) {
      log_info("controller: released without the pin",
               {{"pod", key}, {"node", start.node}, {"why", look.pin_refused}});
    }
    act(
        look, "ungate " + key, pod.resource_version,
        [this, ref, gates, pin] {
          return kube::remove_gate(client_, ref, gates, kube::kQueueGate, pin);
        },
        WorkPriority::kAdmit);
    nudged_[key] = now;  // released: a nudge is due only if it still waits after renudge
    ungated_.insert(key);
    look.look_again_at(now + options_.settle);  // if the removal was lost
  } else if (pod.turned_away) {
    // Parked by kube-scheduler (it said so in the pod's status): nudged the moment its plan
    // flips to "starts now" (it may have been released before, then parked when a later plan
    // let it wait), and again every renudge while it waits. An ungated pod it has not turned
    // away waits in its active queue and is tried without one: nudging it would be an API write
    // and a watch event on both sides for nothing (a backlog of thousands).
    auto last = nudged_.find(key);
    if (look.released_now || last == nudged_.end() || now - last->second >= options_.renudge) {
      std::string value = std::to_string(static_cast<long long>(look.wall * 1000));
      look.out.actions.push_back({"nudge " + key,
                                  [this, ref, value] { return kube::nudge(client_, ref, value); },
                                  WorkPriority::kAdmit});
      nudged_[key] = now;
    }
    look.look_again_at(nudged_[key] + options_.renudge);
  }
  // On the gate path the gate's removal and kube-scheduler's own Scheduled event, moments later,
  // say all an Admitted event would: one API write per pod fewer. An ungated pod may wait in
  // kube-scheduler's back-off first, so it is told where it will start.
  // A gang's member is told where the whole gang goes: kube-scheduler's event names one node.
  // Said with the start, not after it: the job's next reconcile may already see it bound.
  if (!ungated_.contains(key) || !start.members.empty()) {
    say(look, pod.ref, "Normal", "Admitted", "starts on " + start_text(start),
        WorkPriority::kAdmit);
  }
}

// A released pod pinned to a node that has since left the cluster, closed or turned it away
// (a taint, a label) waits for that node for ever: kube-scheduler cannot move a pinned pod, and
// nothing can be added to or taken from an ungated pod's affinity. Its owner is told what to do.
void Controller::tell_stale_pin(Look& look, const ObservedPod& pod) {
  if (pod.pinned_node.empty() || !pod.turned_away ||
      std::find(pod.gates.begin(), pod.gates.end(), kube::kQueueGate) != pod.gates.end()) {
    return;
  }
  const std::string why = planner_.read([&](const JobBook& book) -> std::string {
    auto node = book.nodes().find(pod.pinned_node);
    if (node == book.nodes().end()) return "is no longer in the cluster";
    if (!node->second.closed.empty()) return "is " + node->second.closed;
    const kube::NodeFacts* facts = book.node_facts(pod.pinned_node);
    if (facts == nullptr) return "";
    std::optional<std::string> refusal = pod.variant->refusal(*facts);
    return refusal ? "now refuses it: " + *refusal : "";
  });
  if (why.empty()) return;
  say(look, pod.ref, "Warning", "PinnedNodeUnavailable",
      "released onto node " + pod.pinned_node + ", which " + why +
          "; a pinned pod cannot move: delete the pod (its Job makes another) to have job " +
          pod.variant->job_id + " planned again");
}

void Controller::tell_refused_job(Look& look, const ObservedPod& pod) {
  const JobOwner& owner = *pod.owner_job;
  kube::ObjectRef job{owner.namespace_name, owner.name, owner.uid, "Job", "batch/v1"};
  say(look, job, "Warning", "Parked", "allox cannot schedule " + pod.job_refusal);
}

void Controller::tell_parked(Look& look, const std::string& key, const ObservedPod& pod,
                             const std::string& reason) {
  say(look, pod.ref, "Warning", "Parked",
      "allox cannot schedule job " + pod.variant->job_id + ": " + reason);
  if (auto at = said_at(key, "Parked"); at && look.now - *at < options_.requeue_event) {
    look.look_again_at(*at + options_.requeue_event);
  }
}

void Controller::tell_queued(Look& look, const std::string& key, const ObservedPod& pod,
                             const PlannedWait& wait) {
  const auto now = look.now;
  // Its last Queued event is too recent to be followed by another: no words to build. Looked at
  // again when another may follow, reading the plan of then.
  if (auto at = said_at(key, "Queued"); at && now - *at < options_.requeue_event) {
    look.look_again_at(*at + options_.requeue_event);
    told_until_[look.key] = *at + options_.requeue_event;
    return;
  }
  // "for gpu", or for a pod of any GPU model "for gpu, h100 or a100".
  const std::vector<DeviceType> types = pod.variant->device_types();
  std::string message = "position " + std::to_string(wait.position) + " of " +
                        std::to_string(wait.queue_length) +
                        (wait.note.empty() ? "" : " (" + wait.note + ")") + " for ";
  for (std::size_t i = 0; i < types.size(); ++i) {
    message += (i == 0 ? "" : i + 1 == types.size() ? " or " : ", ") + types[i];
  }
  if (wait.estimated_start) {
    double in = std::max(0.0, *wait.estimated_start - look.wall);
    message += ", est. start " + clock_label(*wait.estimated_start) + " (in " +
               std::to_string(static_cast<long long>(std::ceil(in / 60))) + " min)";
  }
  say(look, pod.ref, "Normal", "Queued", message);
  if (look.said_now.count(key_of(pod.ref) + " Queued")) {
    // Said now: quiet until another may follow. The same words: quiet until they change.
    look.look_again_at(now + options_.requeue_event);
    told_until_[look.key] = now + options_.requeue_event;
  }
}

void Controller::act(Look& look, const std::string& key, const std::string& seen,
                     std::function<Status()> action, WorkPriority priority) {
  auto done = succeeded_.find(key);
  if (done != succeeded_.end() && done->second.seen == seen &&
      look.now - done->second.at < options_.expectation) {
    return;  // done for this very version: the watch has not shown its effect yet
  }
  look.out.actions.push_back({key,
                              [this, key, seen, action = std::move(action)]() -> Status {
                                Status status = action();
                                if (status) {
                                  std::lock_guard lock(mu_);
                                  succeeded_[key] = {now(), seen};
                                }
                                return status;
                              },
                              priority});
}

void Controller::say(Look& look, const kube::ObjectRef& object, const std::string& type,
                     const std::string& reason, const std::string& message, WorkPriority priority) {
  const std::string key = key_of(object);
  if (!look.said_now.insert(key + " " + reason).second) return;  // two pods of one Job
  if (auto it = said_.find(key); it != said_.end()) {
    auto said = it->second.find(reason);
    if (said != it->second.end() && (said->second.first == message ||
                                     look.now - said->second.second < options_.requeue_event)) {
      look.said_now.erase(key + " " + reason);
      return;
    }
  }
  look.out.actions.push_back({"event " + key + " " + reason,
                              [this, object, key, type, reason, message]() -> Status {
                                auto outcome = events_.record(object, type, reason, message);
                                if (!outcome) return outcome.error();
                                std::lock_guard lock(mu_);
                                said_[key][reason] = {message, now()};
                                return OkStatus();
                              },
                              priority});
}

std::optional<Controller::Clock::time_point> Controller::said_at(const std::string& key,
                                                                 const std::string& reason) const {
  auto pod = said_.find(key);
  if (pod == said_.end()) return std::nullopt;
  auto it = pod->second.find(reason);
  if (it == pod->second.end()) return std::nullopt;
  return it->second.second;
}

}  // namespace allox::extender
