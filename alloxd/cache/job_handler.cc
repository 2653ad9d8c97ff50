#include "alloxd/cache/job_handler.h"

#include "core/log.h"

namespace allox::extender {

using nlohmann::json;

namespace {

std::string key_of(const json& job) {
  auto meta = job.find("metadata");
  if (meta == job.end() || !meta->is_object()) return "";
  std::string ns = meta->value("namespace", "");
  return (ns.empty() ? "default" : ns) + "/" + meta->value("name", "");
}

}  // namespace

void JobHandler::on_replace(const std::vector<json>& objects) {
  std::vector<std::string> changed;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, job] : jobs_) changed.push_back(key);
    jobs_.clear();
    errors_.clear();
    for (const json& object : objects) {
      const std::string key = key_of(object);
      if (auto facts = read_job(object)) {
        jobs_[key] = std::move(*facts);
      } else {
        errors_[key] = facts.message();
      }
      changed.push_back(key);
    }
    synced_ = true;
  }
  if (on_change_) {
    for (const std::string& key : changed) on_change_(key);
  }
  if (on_listed_) on_listed_();
}

void JobHandler::on_upsert(const json& object) {
  const std::string key = key_of(object);
  {
    std::lock_guard lock(mu_);
    if (auto facts = read_job(object)) {
      jobs_[key] = std::move(*facts);
      errors_.erase(key);
    } else {
      jobs_.erase(key);
      errors_[key] = facts.message();
      log_warn("cluster feed: Job left out", {{"job", key}, {"error", facts.message()}});
    }
  }
  if (on_change_) on_change_(key);
}

void JobHandler::on_delete(const json& object) {
  const std::string key = key_of(object);
  {
    std::lock_guard lock(mu_);
    jobs_.erase(key);
    errors_.erase(key);
  }
  if (on_change_) on_change_(key);
}

std::optional<JobFacts> JobHandler::find(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return std::nullopt;
  return it->second;
}

std::string JobHandler::error_of(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = errors_.find(key);
  return it == errors_.end() ? "" : it->second;
}

bool JobHandler::synced() const {
  std::lock_guard lock(mu_);
  return synced_;
}

}  // namespace allox::extender
