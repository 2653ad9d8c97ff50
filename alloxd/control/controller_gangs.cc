// What reconcile does for a gang (docs/design.md, "Gangs"): its start is admitted only with all
// of its members in the cluster, pending, so that one reconcile releases them all (act_on pins
// each to its own placement's node); a released gang that did not bind whole is rolled back,
// and the running members of a gang one of whose members failed are deleted.
#include <algorithm>
#include <map>
#include <string>

#include "alloxd/control/controller.h"
#include "core/log.h"
#include "kube/pods.h"

namespace allox::extender {

const std::string* Controller::gang_to_admit(const Look& look, const JobBook& book,
                                             const PlannedStart& start) const {
  const BookJob* job = book.job(look.key);
  if (job == nullptr || job->record.phase != JobPhase::kQueued) return nullptr;
  for (const GangPlacement& member : start.members) {
    auto pod = look.pods.find(member.pod);
    if (!job->variants.count(member.pod) || pod == look.pods.end() || !pod->second.pending()) {
      return nullptr;  // a member is not (or no longer) there: none is released
    }
    // A member released before (and alloxd restarted since) can only run where its pin says:
    // a start elsewhere would leave it refused by /filter for good (adopt_if_orphaned).
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

bool is_gang(const std::map<std::string, ObservedPod>& pods) {
  return std::any_of(pods.begin(), pods.end(), [](const auto& pod) {
    return pod.second.variant && pod.second.variant->gang > 1;
  });
}

}  // namespace

void Controller::roll_back(Look& look) {
  adopt_if_orphaned(look);
  // Its admission hold: rolled back once lapsed unbound, looked at again the moment it lapses.
  if (is_gang(look.pods)) {
    if (auto lapses = planner_.hold_lapses_at(look.key)) {
      if (look.now <= *lapses) {
        look.look_again_at(*lapses + std::chrono::milliseconds(1));
      } else {
        const std::vector<std::string> lapsed = planner_.lapsed_gangs();
        if (std::find(lapsed.begin(), lapsed.end(), look.key) != lapsed.end()) {
          log_warn("controller: a released gang did not bind whole in time; rolled back",
                   {{"job", look.key}});
          planner_.roll_back_gang(look.key,
                                  "rolled back: released, but not every member was bound within "
                                  "the admission hold");
        }
      }
    }
  }
  // Every rollback the planner handed over: this job's carried out now, the others' kept for
  // their own reconcile.
  for (Planner::Rollback& rollback : planner_.take_rollbacks()) {
    if (rollback.job_id != look.key) queue_.add(rollback.job_id, WorkPriority::kAdmit);
    rollbacks_[rollback.job_id].push_back(std::move(rollback));
  }
  auto mine = rollbacks_.find(look.key);
  if (mine == rollbacks_.end()) return;
  released_.erase(look.key);
  for (const Planner::Rollback& rollback : mine->second) {
    for (const PodIdentity& member : rollback.members) {
      const kube::ObjectRef ref{member.namespace_name, member.name, member.uid};
      const std::string why = "gang " + rollback.job_id + " " + rollback.note;
      const std::string reason = rollback.reason;
      // Only the pod of that UID: one re-created under its name since is another member.
      act(look, "delete " + pod_key(member), member.uid, [this, ref, why, reason]() -> Status {
        auto outcome = kube::delete_pod(client_, ref);
        if (!outcome) return outcome.error();
        (void)events_.record(ref, "Warning", reason, why);
        return OkStatus();
      });
    }
  }
  rollbacks_.erase(mine);
}

// A queued gang some of whose members are released (ungated, pinned) though the planner has no
// admission for it: alloxd restarted between the release and the binds (a release and its
// admission are one reconcile, and a rollback deletes the members). It is admitted again on its
// members' pinned nodes when they still hold its units (Planner::adopt_gang), else rolled back
// with the reason; a gang still settling in the book is looked at again shortly.
void Controller::adopt_if_orphaned(Look& look) {
  if (std::none_of(look.pods.begin(), look.pods.end(),
                   [](const auto& pod) { return released_unbound_member(pod.second); })) {
    return;
  }
  // Decided only on a whole list of the pods: a member not listed yet is not a member gone.
  if (!look.synced) {
    look.look_again_at(look.now + options_.backoff_initial);
    return;
  }
  std::map<std::string, std::string> nodes;
  const OrphanedGang found = orphaned_gang(look, nodes);
  if (found.verdict == OrphanedGang::kSettled) return;
  if (found.verdict == OrphanedGang::kWait) {
    look.look_again_at(look.now + options_.backoff_initial);
    return;
  }
  std::string why = found.why;
  if (found.verdict == OrphanedGang::kAdopt) {
    Status adopted = planner_.adopt_gang(look.key, nodes);
    if (adopted) {
      log_info("controller: a gang released before the restart keeps its pinned nodes",
               {{"job", look.key}});
      return;
    }
    why = adopted.message();
  }
  log_warn("controller: a gang released before the restart cannot start there; rolled back",
           {{"job", look.key}, {"reason", why}});
  planner_.roll_back_gang(look.key, "rolled back: released before alloxd restarted, and " + why);
}

Controller::OrphanedGang Controller::orphaned_gang(
    const Look& look, std::map<std::string, std::string>& nodes) const {
  const std::string& id = look.key;
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
      auto pod = look.pods.find(key);
      released = released || (pod != look.pods.end() && released_unbound_member(pod->second));
    }
    if (!released) return {OrphanedGang::kSettled, ""};
    // The gang's pods as the cache has them: the book may lag the watch by a moment.
    int present = 0;
    for (const auto& [key, pod] : look.pods) {
      if (!pod.deleting) ++present;
    }
    const int n = job->record.gang;
    if (present < n) {
      return {OrphanedGang::kRollBack,
              std::to_string(present) + " of its " + std::to_string(n) + " members are left"};
    }
    if (static_cast<int>(job->variants.size()) < n) return {OrphanedGang::kWait, ""};
    for (const auto& [key, variant] : job->variants) {
      auto pod = look.pods.find(key);
      if (pod == look.pods.end()) return {OrphanedGang::kWait, ""};
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

}  // namespace allox::extender
