#include "kube/jobs.h"

#include <nlohmann/json.hpp>

namespace allox::kube {

Expected<DeleteOutcome> delete_job(KubeClient& client, const ObjectRef& job) {
  nlohmann::json options = {
      {"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"propagationPolicy", "Background"}};
  if (!job.uid.empty()) options["preconditions"]["uid"] = job.uid;
  const std::string path = "/apis/batch/v1/namespaces/" + escape(job.namespace_name) + "/jobs/" +
                           escape(job.name);
  auto reply = client.call("DELETE", path, options.dump());
  if (!reply) return reply.error();
  if (reply->status == 200 || reply->status == 202) return DeleteOutcome::kDeleted;
  if (reply->status == 404) return DeleteOutcome::kGone;
  if (reply->status == 409) return DeleteOutcome::kRefused;
  return Error{"deleting Job " + job.namespace_name + "/" + job.name + ": API server answered " +
               std::to_string(reply->status)};
}

}  // namespace allox::kube
