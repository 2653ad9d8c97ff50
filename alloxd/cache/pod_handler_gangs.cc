// The feed's gang members (pod_handler.h): a gang starts when all of its members are bound and
// ends when all of them have ended (docs/design.md, "Gangs"), so each member's binding and end
// is told to the planner as it is seen, never as the job's start or completion.
#include "alloxd/cache/pod_handler.h"

#include "core/log.h"

namespace allox::extender {
namespace {

// Where the member's gang stands: unknown, queued, or running with this pod a member.
enum class GangStanding { kUnknown, kQueued, kRunsWithThisPod, kOther };

GangStanding gang_standing(const Planner& planner, const JobVariant& member) {
  return planner.read([&](const JobBook& book) {
    const BookJob* job = book.job(member.job_id);
    if (job == nullptr) return GangStanding::kUnknown;
    if (job->record.phase == JobPhase::kQueued) return GangStanding::kQueued;
    if (job->record.phase == JobPhase::kRunning && job->member_nodes.count(pod_key(member.pod))) {
      return GangStanding::kRunsWithThisPod;
    }
    return GangStanding::kOther;
  });
}

void warn(std::string_view what, const JobVariant& member, const std::string& error) {
  log_warn(what, {{"job", member.job_id}, {"pod", pod_key(member.pod)}, {"error", error}});
}

}  // namespace

bool ClusterFeed::PodHandler::apply_gang_member(const ObservedPod& pod) {
  const JobVariant& member = *pod.variant;
  const GangStanding now = gang_standing(planner_, member);
  if (pod.phase == "Succeeded" || pod.phase == "Failed") {
    if (now == GangStanding::kRunsWithThisPod) {
      flush_pending();
      const bool failed = pod.phase == "Failed";
      // A Failed member of a Job that runs it again: the gang runs again, the same job.
      if (auto s = planner_.gang_member_ended(member, failed, failed && job_retries(pod, false));
          !s) {
        warn("could not record a gang member's end", member, s.message());
      }
    }
    return true;
  }
  if (pod.node_name.empty()) return false;  // pending: registered as any pod
  if (now == GangStanding::kUnknown || now == GangStanding::kQueued) {
    // Bound by /bind's gather (which records the start itself), or before a restart.
    flush_pending();
    if (auto registered = planner_.register_variant(member, Durability::kWritten); !registered) {
      warn("could not record a bound gang member", member, registered.message());
      return true;
    }
    if (auto error = planner_.gang_member_bound(member, pod.node_name)) {
      warn("could not record a gang's start", member, *error);
    }
  }
  return true;
}

bool ClusterFeed::PodHandler::gang_member_gone(const ObservedPod& pod) {
  const JobVariant& member = *pod.variant;
  if (gang_standing(planner_, member) != GangStanding::kRunsWithThisPod) return false;
  flush_pending();
  if (auto s = planner_.gang_member_ended(member); !s) {
    warn("could not record a deleted gang member's end", member, s.message());
  }
  return true;
}

}  // namespace allox::extender
