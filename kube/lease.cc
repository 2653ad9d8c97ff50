#include "kube/lease.h"

#include <nlohmann/json.hpp>

#include "core/log.h"
#include "core/time_text.h"

namespace allox::kube {
namespace {

using nlohmann::json;

}  // namespace

LeaderLease::LeaderLease(KubeClient& client, LeaseOptions options,
                         std::function<void(bool)> on_change)
    : client_(client), options_(std::move(options)), on_change_(std::move(on_change)) {}

LeaderLease::~LeaderLease() {
  stop();
}

std::string LeaderLease::path() const {
  return "/apis/coordination.k8s.io/v1/namespaces/" + escape(options_.namespace_name) + "/leases";
}

void LeaderLease::set_leading(bool leading) {
  if (leading_.exchange(leading) == leading) return;
  log_info(
      leading ? "became the leader" : "stopped leading",
      {{"lease", options_.namespace_name + "/" + options_.name}, {"identity", options_.identity}});
  if (on_change_) on_change_(leading);
}

void LeaderLease::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] {
    while (true) {
      step(Clock::now());
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, options_.retry, [&] { return stopping_; })) return;
    }
  });
}

void LeaderLease::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  release();
}

bool LeaderLease::step(Clock::time_point now) {
  std::lock_guard lock(step_mu_);
  const auto wall = std::chrono::system_clock::now();
  const std::string item = path() + "/" + escape(options_.name);
  auto fail = [&] {
    // Could not renew: keep leading only while the last renewal is fresh.
    if (leading_.load() && now - last_renewed_ >= options_.duration) set_leading(false);
    return leading_.load();
  };
  auto got = client_.call("GET", item);
  if (!got) return fail();
  if (got->status == 404) {
    json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", options_.name}, {"namespace", options_.namespace_name}}},
                  {"spec",
                   {{"holderIdentity", options_.identity},
                    {"leaseDurationSeconds", options_.duration.count()},
                    {"acquireTime", rfc3339_micro(wall)},
                    {"renewTime", rfc3339_micro(wall)},
                    {"leaseTransitions", 0}}}};
    auto created = client_.call("POST", path(), lease.dump());
    if (!created || created->status != 201) return fail();
    held_ = json::parse(created->body, nullptr, false);
    last_renewed_ = now;
    set_leading(true);
    return true;
  }
  if (got->status != 200) return fail();
  json lease = json::parse(got->body, nullptr, false);
  if (!lease.is_object() || !lease.contains("metadata") || !lease["metadata"].is_object()) {
    return fail();
  }
  json spec = lease.value("spec", json::object());
  if (!spec.is_object()) spec = json::object();
  std::string holder = spec.value("holderIdentity", json("")).is_string()
                           ? spec.value("holderIdentity", std::string())
                           : std::string();
  if (holder != options_.identity && !holder.empty()) {
    std::string record = holder + "|" + spec.value("renewTime", json("")).dump() + "|" +
                         lease["metadata"].value("resourceVersion", json("")).dump();
    if (record != observed_record_) {
      observed_record_ = record;
      observed_at_ = now;
    }
    std::chrono::seconds their_duration{options_.duration};
    if (spec.contains("leaseDurationSeconds") && spec["leaseDurationSeconds"].is_number_integer()) {
      their_duration = std::chrono::seconds(spec["leaseDurationSeconds"].get<int>());
    }
    if (now - observed_at_ < their_duration) {
      set_leading(false);
      return false;
    }
  }
  // Ours to renew, free, or expired: write our record with the version we read.
  if (holder != options_.identity) {
    int transitions =
        spec.contains("leaseTransitions") && spec["leaseTransitions"].is_number_integer()
            ? spec["leaseTransitions"].get<int>()
            : 0;
    spec["leaseTransitions"] = transitions + 1;
    spec["acquireTime"] = rfc3339_micro(wall);
  }
  spec["holderIdentity"] = options_.identity;
  spec["leaseDurationSeconds"] = options_.duration.count();
  spec["renewTime"] = rfc3339_micro(wall);
  lease["spec"] = spec;
  auto put = client_.call("PUT", item, lease.dump());
  if (!put) return fail();
  if (put->status == 409) {  // someone else wrote first
    set_leading(false);
    return false;
  }
  if (put->status != 200) return fail();
  held_ = json::parse(put->body, nullptr, false);
  last_renewed_ = now;
  set_leading(true);
  return true;
}

void LeaderLease::release() {
  std::lock_guard lock(step_mu_);
  if (!leading_.load()) return;
  // One PUT over the record we last wrote: if anyone wrote since, its resourceVersion makes
  // this a harmless 409.
  if (held_.is_object() && held_.contains("spec") && held_["spec"].is_object()) {
    held_["spec"]["holderIdentity"] = "";
    held_["spec"]["leaseDurationSeconds"] = 1;
    (void)client_.call("PUT", path() + "/" + escape(options_.name), held_.dump());
  }
  held_ = nullptr;
  set_leading(false);
}

}  // namespace allox::kube
