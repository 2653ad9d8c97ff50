// What a pass does for gangs (docs/design.md, "Gangs"): a gang's start is admitted only with all
// of its members in the cluster, pending, so that the pass releases them all (act_on pins each
// to its own placement's node); a released gang that did not bind whole is rolled back, and the
// running members of a gang one of whose members failed are deleted.
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
  }
  return &start.members.front().pod;
}

void Controller::roll_back_gangs(const Pass& pass) {
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
