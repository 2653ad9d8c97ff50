// Bind intents: written (synced) before the API server is asked to bind, cleared by the start,
// the run's end or the refusal. Concurrent binds share one commit through the planner's group
// (Planner::apply), whose batch this write then joins.
#include <string>

#include "alloxd/store/statement.h"
#include "alloxd/store/store.h"

namespace allox::extender {

Status Store::record_bind_intent(const BindIntent& intent) {
  std::lock_guard lock(mu_);
  return transaction([&]() -> Status {
    Statement s(*statements_,
                "INSERT OR REPLACE INTO bind_intents (job_row, job_id, pod_namespace, pod_name, "
                "pod_uid, node, device, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    s.bind_all(intent.job_row, intent.job_id, intent.pod.namespace_name, intent.pod.name,
               intent.pod.uid, intent.node, intent.device, intent.at);
    return s.run("record bind intent of " + intent.job_id);
  });
}

}  // namespace allox::extender
