#include "alloxd/verbs/verbs.h"

#include <algorithm>
#include <set>

namespace allox::extender {

ExtenderVerbs::ExtenderVerbs(Planner& planner, ClusterApi* api, Metrics& metrics,
                             VerbOptions options)
    : planner_(planner), api_(api), metrics_(metrics), options_(std::move(options)) {}

bool ExtenderVerbs::ours(const nlohmann::json& pod) const {
  const std::string& name = planner_.config().scheduler_name;
  if (name.empty()) return true;
  const nlohmann::json* spec = pod.is_object() ? find_key(pod, "spec") : nullptr;
  const nlohmann::json* scheduler =
      spec != nullptr && spec->is_object() ? find_key(*spec, "schedulerName") : nullptr;
  return scheduler != nullptr && scheduler->is_string() && *scheduler == name;
}

std::vector<HostPriority> ExtenderVerbs::prioritize(const ExtenderArgs& args) {
  std::vector<HostPriority> priorities;
  const NodeNameList& candidates = args.candidates();
  priorities.reserve(candidates.size());
  for (std::string_view node : candidates) priorities.push_back({std::string(node), 0});
  if (!ours(args.pod)) return priorities;
  auto variant = read_job_variant(args.pod, planner_.config().devices, planner_.config().tenancy);
  if (!variant) return priorities;
  std::shared_ptr<const Plan> plan = planner_.latest_plan();
  auto it = plan->starts.find(variant->job_id);
  if (it == plan->starts.end() || !variant->runs_on(it->second.device)) return priorities;
  for (HostPriority& p : priorities) {
    if (p.host == it->second.node) p.score = kMaxExtenderPriority;
  }
  return priorities;
}

PreemptionResult ExtenderVerbs::preempt(const PreemptionArgs& args) {
  // allox jobs are non-preemptive once started: refuse any node whose victims include one.
  std::set<std::string> protected_uids = planner_.read([](const JobBook& book) {
    std::set<std::string> uids;
    for (const auto& [id, job] : book.jobs()) {
      if (job.record.phase == JobPhase::kRunning && !job.record.pod_uid.empty()) {
        uids.insert(job.record.pod_uid);
      }
    }
    return uids;
  });
  PreemptionResult result;
  for (const auto& [node, victims] : args.victims) {
    bool touches_allox_job =
        std::any_of(victims.pod_uids.begin(), victims.pod_uids.end(),
                    [&](const std::string& uid) { return protected_uids.count(uid) > 0; });
    if (!touches_allox_job) result.victims[node] = victims;
  }
  return result;
}

}  // namespace allox::extender
