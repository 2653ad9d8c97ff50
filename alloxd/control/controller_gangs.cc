// What a pass does for gangs (docs/design.md, "Gangs"): a gang's start is admitted only with all
// of its members in the cluster, pending, so that the pass releases them all (act_on pins each
// to its own placement's node); a released gang that did not bind whole is rolled back, and the
// running members of a gang one of whose members failed are deleted.
#include <algorithm>
#include <map>
#include <string>

#include "alloxd/control/controller.h"
#include "core/log.h"
#include "kube/pods.h"

namespace allox::extender {

const std::string* Controller::gang_to_admit(const JobBook& book, const std::string& id,
                                             const PlannedStart& start) const {
  const BookJob* job = book.job(id);
  if (job == nullptr || job->record.phase != JobPhase::kQueued) return nullptr;
  for (const GangPlacement& member : start.members) {
    auto pod = mirror_.pods.find(member.pod);
    if (!job->variants.count(member.pod) || pod == mirror_.pods.end() || !pod->second.pending()) {
      return nullptr;  // a member is not (or no longer) there: none is released
    }
    // A member released before (and alloxd restarted since) can only run where its pin says:
    // a start elsewhere would leave it refused by /filter for good (adopt_released_gangs).
    const std::string& pin = pod->second.pinned_node;
    if (!pin.empty() && pin != member.node) return nullptr;
  }
  return &start.members.front().pod;
}

namespace {

// A member of a gang released by a pin and the gate's removal, not bound yet.
bool released_unbound_member(const ObservedPod& pod) {
  return pod.variant && pod.variant->gang > 1 && pod.pending() && !pod.deleting &&
         !pod.pinned_node.empty() &&
         std::find(pod.gates.begin(), pod.gates.end(), kube::kQueueGate) == pod.gates.end();
}

}  // namespace

void Controller::adopt_released_gangs(const Pass& pass) {
  // Only a restart leaves a queued gang released with no admission: the release and the
  // admission happen in one pass, and a rollback deletes the members. The first pass after
  // start-up is a full one, so every such gang is found then.
  auto note = [this](const ObservedPod& pod) {
    if (released_unbound_member(pod)) orphaned_gangs_.insert(pod.variant->job_id);
  };
  if (last_full_) {
    for (const auto& [key, pod] : mirror_.pods) note(pod);
  } else {
    for (const std::string& key : pass.changed) {
      if (auto it = mirror_.pods.find(key); it != mirror_.pods.end()) note(it->second);
    }
  }
  // Decided only on a whole list of the pods: a member not listed yet is not a member gone.
  if (!feed_.synced()) return;
  for (auto it = orphaned_gangs_.begin(); it != orphaned_gangs_.end();) {
    const std::string id = *it;
    std::map<std::string, std::string> nodes;
    const OrphanedGang found = orphaned_gang(id, nodes);
    if (found.verdict == OrphanedGang::kWait) {
      ++it;
      continue;
    }
    it = orphaned_gangs_.erase(it);
    if (found.verdict == OrphanedGang::kSettled) continue;
    std::string why = found.why;
    if (found.verdict == OrphanedGang::kAdopt) {
      Status adopted = planner_.adopt_gang(id, nodes);
      if (adopted) {
        log_info("controller: a gang released before the restart keeps its pinned nodes",
                 {{"job", id}});
        continue;
      }
      why = adopted.message();
    }
    log_warn("controller: a gang released before the restart cannot start there; rolled back",
             {{"job", id}, {"reason", why}});
    planner_.roll_back_gang(id, "rolled back: released before alloxd restarted, and " + why);
  }
}

Controller::OrphanedGang Controller::orphaned_gang(
    const std::string& id, std::map<std::string, std::string>& nodes) const {
  if (planner_.admitted_as(id)) return {OrphanedGang::kSettled, ""};
  return planner_.read([&](const JobBook& book) -> OrphanedGang {
    const BookJob* job = book.job(id);
    if (job == nullptr || !job->is_gang() || job->record.phase != JobPhase::kQueued ||
        job->variants.empty()) {
      return {OrphanedGang::kSettled, ""};
    }
    // A pod of a rolled-back gang, still seen until its deletion is, never rejoins the book:
    // only a released member the book has makes the gang one to adopt or roll back.
    bool released = false;
    for (const auto& [key, variant] : job->variants) {
      auto pod = mirror_.pods.find(key);
      released = released || (pod != mirror_.pods.end() && released_unbound_member(pod->second));
    }
    if (!released) return {OrphanedGang::kSettled, ""};
    // The gang's pods as the mirror has them: the book may lag the watch by a moment.
    int present = 0;
    if (auto pods = pods_of_.find(id); pods != pods_of_.end()) {
      for (const std::string& key : pods->second) {
        auto pod = mirror_.pods.find(key);
        if (pod != mirror_.pods.end() && !pod->second.deleting) ++present;
      }
    }
    const int n = job->record.gang;
    if (present < n) {
      return {OrphanedGang::kRollBack,
              std::to_string(present) + " of its " + std::to_string(n) + " members are left"};
    }
    if (static_cast<int>(job->variants.size()) < n) return {OrphanedGang::kWait, ""};
    for (const auto& [key, variant] : job->variants) {
      auto pod = mirror_.pods.find(key);
      if (pod == mirror_.pods.end()) return {OrphanedGang::kWait, ""};
      const ObservedPod& seen = pod->second;
      if (!seen.node_name.empty()) {
        nodes[key] = seen.node_name;  // bound before the restart: its node is taken
      } else if (released_unbound_member(seen)) {
        nodes[key] = seen.pinned_node;
      } else {
        return {OrphanedGang::kRollBack, "member " + key + " was not released with the others"};
      }
    }
    return {OrphanedGang::kAdopt, ""};
  });
}

void Controller::roll_back_gangs(const Pass& pass) {
  adopt_released_gangs(pass);
  for (const std::string& id : planner_.lapsed_gangs()) {
    log_warn("controller: a released gang did not bind whole in time; rolled back", {{"job", id}});
    planner_.roll_back_gang(id,
                            "rolled back: released, but not every member was bound within "
                            "the admission hold");
  }
  for (Planner::Rollback& rollback : planner_.take_rollbacks()) {
    released_.erase(rollback.job_id);
    for (const PodIdentity& member : rollback.members) {
      const kube::ObjectRef ref{member.namespace_name, member.name, member.uid};
      const std::string why = "gang " + rollback.job_id + " " + rollback.note;
      const std::string reason = rollback.reason;
      // Only the pod of that UID: one re-created under its name since is another member.
      act(
          "delete " + pod_key(member), member.uid,
          [this, ref, why, reason]() -> Status {
            auto outcome = kube::delete_pod(client_, ref);
            if (!outcome) return outcome.error();
            (void)events_.record(ref, "Warning", reason, why);
            return OkStatus();
          },
          pass.now, ActionPriority::kAdmit);
    }
  }
}

}  // namespace allox::extender
