// The Job side of the cluster feed: batch/v1 Jobs as the watch shows them (model/job.h reads
// each), so the pod side can tell which allox job a Job's pod belongs to, what shape its Job
// has, and whether the Job will replace a pod that failed.
//
// Every change calls `on_change(job key)` ("namespace/name") after the cache has it: the pod
// side looks again at the pods it held back for that Job (a pod can be seen before its Job:
// they come on two watches).
//
// Thread-safe: the handler calls come from the Job informer's thread; find() from any.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "alloxd/model/job.h"
#include "kube/informer.h"

namespace allox::extender {

class JobHandler final : public kube::InformerHandler {
 public:
  explicit JobHandler(std::function<void(const std::string& job_key)> on_change = nullptr)
      : on_change_(std::move(on_change)) {}
  void set_on_change(std::function<void(const std::string& job_key)> on_change) {
    on_change_ = std::move(on_change);
  }
  // Called after every list (on_replace), Jobs or none: the pods may be watched from then on.
  void set_on_listed(std::function<void()> on_listed) { on_listed_ = std::move(on_listed); }

  void on_replace(const std::vector<nlohmann::json>& objects) override;
  void on_upsert(const nlohmann::json& object) override;
  void on_delete(const nlohmann::json& object) override;

  // The Job by "namespace/name" as last seen; std::nullopt when unknown (not seen yet, gone, or
  // unreadable: a Job whose allox.io/job names no valid job id is kept out, with its error).
  std::optional<JobFacts> find(const std::string& key) const;
  // Why the Job could not be read ("" when it could or is unknown).
  std::string error_of(const std::string& key) const;
  bool synced() const;

 private:
  std::function<void(const std::string&)> on_change_;
  std::function<void()> on_listed_;
  mutable std::mutex mu_;
  std::map<std::string, JobFacts> jobs_;
  std::map<std::string, std::string> errors_;
  bool synced_ = false;
};

}  // namespace allox::extender
