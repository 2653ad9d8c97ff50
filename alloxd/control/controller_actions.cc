// What a pass does to each pod it visits: the plan's starts admitted, then each visited pod
// released (its gate removed, or a nudge), deleted (an unused or late variant), or told why it
// waits (a `Queued` event). Actions go to the action queue: idempotent, retried there.
#include "alloxd/control/controller.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/time_text.h"
#include "kube/jobs.h"
#include "kube/pods.h"

namespace allox::extender {

// 1. Admit: a job the plan starts now keeps only a variant that runs on the planned device and the
//    cluster still holds (the first by name when there are several). A full pass looks at every
//    start (and confirms every admission: one whose hold lapsed is made again); an incremental
//    one at the starts a new plan added or changed, the started jobs whose pods changed, and
//    those that had no pod to release. A start the plan dropped is forgotten and its job's pods
//    looked at (it waits now).
Controller::Admissions Controller::admit_starts(const Pass& pass) {
  const Plan& plan = *pass.plan;
  Admissions out;
  std::vector<std::string>& rescan = out.rescanned;
  if (last_full_) {
    rescan.reserve(plan.starts.size());
    for (const auto& [id, start] : plan.starts) rescan.push_back(id);
  } else {
    if (pass.plan != last_plan_) {
      for (const auto& [id, start] : plan.starts) {
        auto it = released_.find(id);
        if (it == released_.end() || it->second.start != start) rescan.push_back(id);
      }
    }
    auto if_started = [&](const std::string& id) {
      if (plan.starts.count(id)) rescan.push_back(id);
    };
    for (const std::string& id : recheck_) if_started(id);
    for (const std::string& key : pass.changed) {
      if (auto it = job_of_.find(key); it != job_of_.end()) if_started(it->second);
    }
    for (const std::string& job : pass.gone_jobs) if_started(job);
    std::sort(rescan.begin(), rescan.end());
    rescan.erase(std::unique(rescan.begin(), rescan.end()), rescan.end());
  }
  recheck_.clear();
  if (pass.plan != last_plan_) {
    for (auto it = released_.begin(); it != released_.end();) {
      if (plan.starts.count(it->first)) {
        ++it;
        continue;
      }
      out.dropped.push_back(it->first);
      it = released_.erase(it);
    }
  }
  last_plan_ = pass.plan;
  std::vector<Planner::AdmitRequest> admissions;
  planner_.read([&](const JobBook& book) {
    for (const std::string& id : rescan) {
      const PlannedStart& start = plan.starts.at(id);
      const std::string* chosen = nullptr;
      if (!start.members.empty()) {
        chosen = gang_to_admit(book, id, start);  // all its members, or none
      } else if (const BookJob* job = book.job(id);
                 job != nullptr && job->record.phase == JobPhase::kQueued) {
        for (const auto& [key, variant] : job->variants) {
          auto pod = mirror_.pods.find(key);
          if (variant.runs_on(start.device) && pod != mirror_.pods.end() && pod->second.pending()) {
            chosen = &key;
            break;
          }
        }
      }
      if (chosen == nullptr) {
        released_.erase(id);
        recheck_.insert(id);
        continue;
      }
      Release& release = released_[id];
      if (release.pod != *chosen || release.since == 0) release.since = pass.number;
      release.pod = *chosen;
      release.start = start;
      admissions.push_back({id, *chosen, start});
    }
  });
  const std::vector<Status> admitted = planner_.admit_all(admissions);
  planner_.plan_acted_on(pass.seen);
  for (std::size_t i = 0; i < admitted.size(); ++i) {
    if (!admitted[i]) {
      log_warn("controller: admission failed",
               {{"job", admissions[i].job_id}, {"error", admitted[i].message()}});
      recheck_.insert(admissions[i].job_id);  // tried again next pass
    }
  }
  return out;
}

// Where each visited waiting pod's job stands (after the admissions), in the order of `visit`.
std::vector<Controller::PodFacts> Controller::facts_of(
    const std::vector<const PodEntry*>& visit) const {
  std::vector<PodFacts> facts;
  planner_.read([&](const JobBook& book) {
    facts.reserve(visit.size());
    for (const PodEntry* entry : visit) {
      const auto& [key, pod] = *entry;
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

void Controller::act_on(const Pass& pass, const PodEntry& entry, const PodFacts& job) {
  const auto& [key, pod] = entry;
  quiet_until_.erase(key);
  active_.insert(key);
  if (!pod.job_refusal.empty() && pod.pending()) {
    tell_refused_job(pass, pod);
    make_quiet(key, std::nullopt);  // said once per change of the pod (and requeue_event)
    return;
  }
  if (!pod.variant || !pod.pending()) {
    make_quiet(key, std::nullopt);  // nothing to do until it changes
    return;
  }
  if (!job.known) return;  // not in the book yet
  if (job.gang_member && job.phase != JobPhase::kQueued) {
    make_quiet(key, std::nullopt);  // a running (or ended) gang's member: every member runs
    return;
  }
  if (job.phase == JobPhase::kRunning && job.runs_as == key) {
    // The pod the job runs as is never deleted, even before the watch shows it bound.
    make_quiet(key, std::nullopt);  // until the watch shows it bound
    return;
  }
  if (std::optional<std::string> why = why_delete(key, pod, job)) {
    if (!why->empty()) delete_variant(pass, key, pod, *why);
    return;
  }
  const std::string& id = pod.variant->job_id;
  auto start = pass.plan->starts.find(id);
  auto released = released_.find(id);
  if (start != pass.plan->starts.end() && released != released_.end() &&
      released->second.pod == key) {
    release(pass, key, pod, start->second, released->second);
    return;
  }
  if (start != pass.plan->starts.end() && released != released_.end() &&
      released->second.start == start->second) {
    // A gang's member: released with the others, pinned to its own placement's node.
    if (const GangPlacement* member = start->second.member(key)) {
      PlannedStart own = start->second;
      own.node = member->node;
      own.slot = member->slot;
      release(pass, key, pod, own, released->second);
      return;
    }
  }
  if (auto wait = pass.plan->waiting.find(id); wait != pass.plan->waiting.end()) {
    tell_queued(pass, key, pod, wait->second);
  } else if (auto parked = pass.plan->parked.find(id); parked != pass.plan->parked.end()) {
    tell_parked(pass, key, pod, parked->second);
  }
}

std::optional<std::string> Controller::why_delete(const std::string& key, const ObservedPod& pod,
                                                  const PodFacts& job) const {
  const std::string& id = pod.variant->job_id;
  if (job.phase == JobPhase::kRunning) {
    if (same_job_object(pod, job.runs_as)) return std::string();  // its Job's other pods: kept
    return "job " + id + " runs as variant " + variant_name(job.runs_as);
  }
  if (job.phase == JobPhase::kDone) return "job " + id + " has finished";
  if (job.in_book) return std::nullopt;
  // Not (yet) a variant in the book: deleted only once its job was admitted as another (the
  // feed may show a new pod a moment before the book registers it); until then, left alone.
  const auto admitted = planner_.admitted_as(id);
  if (!admitted || *admitted == key || same_job_object(pod, *admitted)) return std::string();
  return "job " + id + " runs as variant " + variant_name(*admitted);
}

// A variant as the events name it: its Job ("namespace/job") when a Job controls the pod.
std::string Controller::variant_name(const std::string& pod_key) const {
  auto it = mirror_.pods.find(pod_key);
  if (it == mirror_.pods.end() || !it->second.owner_job) return pod_key;
  return it->second.owner_job->key();
}

// Whether `pod` and the pod `other_key` are of the same Job: one variant, never deleted for
// the other.
bool Controller::same_job_object(const ObservedPod& pod, const std::string& other_key) const {
  if (!pod.owner_job) return false;
  auto it = mirror_.pods.find(other_key);
  return it != mirror_.pods.end() && it->second.owner_job &&
         it->second.owner_job->uid == pod.owner_job->uid;
}

void Controller::delete_variant(const Pass& pass, const std::string& key, const ObservedPod& pod,
                                const std::string& why) {
  if (pod.owner_job) {
    // The variant is the Job: deleted whole (its pods follow through the garbage collector),
    // never its pod alone, which the Job controller would make again.
    kube::ObjectRef job{pod.owner_job->namespace_name, pod.owner_job->name, pod.owner_job->uid,
                        "Job", "batch/v1"};
    act(
        "delete job " + job.namespace_name + "/" + job.name, job.uid,
        [this, job, why]() -> Status {
          auto outcome = kube::delete_job(client_, job);
          if (!outcome) return outcome.error();
          if (*outcome == kube::DeleteOutcome::kDeleted) {
            (void)events_.record(job, "Normal", "Deleted", why);
          }
          return OkStatus();
        },
        pass.now);
    make_quiet(key, pass.now + options_.settle);
    return;
  }
  kube::ObjectRef ref = pod.ref;
  const std::string version = pod.resource_version;
  act(
      "delete " + key, version,
      [this, ref, version, why]() -> Status {
        // Only the pod as it was seen: one bound (or changed) since is looked at again.
        auto outcome = kube::delete_pod(client_, ref, version);
        if (!outcome) return outcome.error();
        if (*outcome == kube::DeleteOutcome::kDeleted) {
          (void)events_.record(ref, "Normal", "Deleted", why);
        }
        return OkStatus();
      },
      pass.now);
  make_quiet(key, pass.now + options_.settle);  // until the watch shows it gone (or changed)
}

void Controller::release(const Pass& pass, const std::string& key, const ObservedPod& pod,
                         const PlannedStart& start, const Release& released) {
  const auto now = pass.now;
  kube::ObjectRef ref = pod.ref;
  // Released: it rests until it changes (the watch shows it ungated, bound, parked), its start
  // changes, or (below) a nudge or a lost action is due.
  std::optional<Clock::time_point> rest_until;
  if (!pod.gates.empty() &&
      std::find(pod.gates.begin(), pod.gates.end(), kube::kQueueGate) != pod.gates.end()) {
    std::vector<std::string> gates = pod.gates;
    // Pinned to its planned node in the same patch: kube-scheduler then filters that one node.
    kube::NodePin pin{start.node, pod.affinity_room};
    act(
        "ungate " + key, pod.resource_version,
        [this, ref, gates, pin] {
          return kube::remove_gate(client_, ref, gates, kube::kQueueGate, pin);
        },
        now, ActionPriority::kAdmit);
    nudged_[key] = now;  // released: a nudge is due only if it still waits after renudge
    ungated_.insert(key);
    rest_until = now + options_.settle;  // looked at again if the removal was lost
  } else if (pod.turned_away) {
    // Parked by kube-scheduler (it said so in the pod's status): nudged the moment its plan
    // flips to "starts now" (it may have been released before, then parked when a later plan
    // let it wait), and again every renudge while it waits. An ungated pod it has not turned
    // away waits in its active queue and is tried without one: nudging it would be an API write
    // and a watch event on both sides for nothing (a backlog of thousands).
    auto last = nudged_.find(key);
    const bool flipped_now = released.since == pass.number;
    if (flipped_now || last == nudged_.end() || now - last->second >= options_.renudge) {
      std::string value = std::to_string(static_cast<long long>(pass.wall * 1000));
      if (actions_.submit(
              "nudge " + key, [this, ref, value] { return kube::nudge(client_, ref, value); },
              ActionPriority::kAdmit)) {
        nudged_[key] = now;
      }
    }
    last = nudged_.find(key);
    rest_until = last == nudged_.end() ? now : last->second + options_.renudge;
  }
  // On the gate path the gate's removal and kube-scheduler's own Scheduled event, moments later,
  // say all an Admitted event would: one API write per pod fewer. An ungated pod may wait in
  // kube-scheduler's back-off first, so it is told where it will start.
  // A gang's member is told where the whole gang goes: kube-scheduler's event names one node.
  if (!ungated_.contains(key) || !start.members.empty()) {
    say(pod.ref, "Normal", "Admitted", "starts on " + start_text(start), now);
  }
  make_quiet(key, rest_until);
}

void Controller::tell_refused_job(const Pass& pass, const ObservedPod& pod) {
  const JobOwner& owner = *pod.owner_job;
  kube::ObjectRef job{owner.namespace_name, owner.name, owner.uid, "Job", "batch/v1"};
  say(job, "Warning", "Parked", "allox cannot schedule " + pod.job_refusal, pass.now);
}

void Controller::tell_parked(const Pass& pass, const std::string& key, const ObservedPod& pod,
                             const std::string& reason) {
  const auto now = pass.now;
  say(pod.ref, "Warning", "Parked",
      "allox cannot schedule job " + pod.variant->job_id + ": " + reason, now);
  if (auto at = said_at(key, "Parked"); at && now - *at < options_.requeue_event) {
    make_quiet(key, *at + options_.requeue_event);
  }
}

void Controller::tell_queued(const Pass& pass, const std::string& key, const ObservedPod& pod,
                             const PlannedWait& wait) {
  const auto now = pass.now;
  // Its last Queued event is too recent to be followed by another: no words to build.
  if (auto at = said_at(key, "Queued"); at && now - *at < options_.requeue_event) {
    make_quiet(key, *at + options_.requeue_event);
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
    double in = std::max(0.0, *wait.estimated_start - pass.wall);
    message += ", est. start " + clock_label(*wait.estimated_start) + " (in " +
               std::to_string(static_cast<long long>(std::ceil(in / 60))) + " min)";
  }
  say(pod.ref, "Normal", "Queued", message, now);
  // Said now: quiet until another may follow. Not said (the same words, or the action queue
  // full): looked at again next pass, as a full pass would.
  if (auto at = said_at(key, "Queued"); at && now - *at < options_.requeue_event) {
    make_quiet(key, *at + options_.requeue_event);
  }
}

}  // namespace allox::extender
