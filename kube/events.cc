#include "kube/events.h"

#include <nlohmann/json.hpp>

#include "core/time_text.h"

namespace allox::kube {
namespace {

using nlohmann::json;

// A series' object within its namespace: a pod by its name, anything else by kind and name (a
// Job and its pod may share a name).
std::string series_name(const ObjectRef& object) {
  return object.kind == "Pod" ? object.name : object.kind + "/" + object.name;
}

}  // namespace

EventRecorder::EventRecorder(KubeClient& client, EventOptions options,
                             std::function<Clock::time_point()> clock)
    : client_(client),
      options_(std::move(options)),
      clock_(std::move(clock)),
      tokens_(options_.burst),
      refilled_at_(clock_()) {}

bool EventRecorder::take_token(const std::string& namespace_name, Clock::time_point now) {
  const double elapsed = std::chrono::duration<double>(now - refilled_at_).count();
  if (elapsed > 0) {
    tokens_ = std::min(options_.burst, tokens_ + elapsed * options_.qps);
    refilled_at_ = now;
  }
  // Namespaces quiet for active_window leave (once a second: a flood of record() calls does
  // not sweep the map each time); the share is of those left.
  if (now - shares_swept_at_ >= std::chrono::seconds(1)) {
    shares_swept_at_ = now;
    for (auto it = shares_.begin(); it != shares_.end();) {
      it = now - it->second.asked_at > options_.active_window ? shares_.erase(it) : std::next(it);
    }
  }
  auto [it, added] = shares_.try_emplace(namespace_name);
  const double active = static_cast<double>(shares_.size());
  const double share_qps = options_.qps / active;
  const double share_burst = std::max(1.0, options_.burst / active);
  Share& share = it->second;
  if (added) {
    share.tokens = share_burst;
  } else if (const double waited = std::chrono::duration<double>(now - share.refilled_at).count();
             waited > 0) {
    share.tokens = std::min(share_burst, share.tokens + waited * share_qps);
  }
  share.refilled_at = now;
  share.asked_at = now;
  const bool own = share.tokens >= 1;
  const bool spare = tokens_ - 1 >= options_.burst / 2;
  if (tokens_ < 1 || (!own && !spare)) {
    ++dropped_;
    return false;
  }
  tokens_ -= 1;
  if (own) share.tokens -= 1;
  return true;
}

Expected<EventRecorder::Outcome> EventRecorder::record(const ObjectRef& pod,
                                                       const std::string& type,
                                                       const std::string& reason,
                                                       const std::string& message) {
  const auto now = clock_();
  const auto wall = std::chrono::system_clock::now();
  const std::string collection = "/api/v1/namespaces/" + escape(pod.namespace_name) + "/events";
  Series series;
  bool exists;
  {
    std::lock_guard lock(mu_);
    auto it = series_.find({pod.namespace_name, series_name(pod), reason});
    exists = it != series_.end();
    if (exists) {
      if (it->second.message == message && now - it->second.last_write < options_.repeat_after) {
        return Outcome::kUnchanged;
      }
      series = it->second;
    }
    if (!take_token(pod.namespace_name, now)) return Outcome::kDropped;
    if (!exists) {
      // Unique per replica and pod: the pod name and a hex sequence, like client-go's.
      char suffix[48];
      std::snprintf(
          suffix, sizeof suffix, ".%llx%llx",
          static_cast<unsigned long long>(
              std::chrono::duration_cast<std::chrono::microseconds>(wall.time_since_epoch())
                  .count()),
          static_cast<unsigned long long>(++sequence_));
      series.event_name = pod.name + suffix;
    }
  }
  Outcome outcome;
  if (exists) {
    json patch = {
        {"count", series.count + 1}, {"message", message}, {"lastTimestamp", rfc3339(wall)}};
    auto reply = client_.call("PATCH", collection + "/" + escape(series.event_name), patch.dump(),
                              "application/merge-patch+json");
    if (!reply) return reply.error();
    if (reply->status == 404) {
      exists = false;  // expired (events live an hour): start the series again
    } else if (reply->status != 200) {
      return Error{"patching event " + series.event_name + ": API server answered " +
                   std::to_string(reply->status)};
    }
    outcome = Outcome::kUpdated;
    series.count += 1;
  }
  if (!exists) {
    json event = {{"apiVersion", "v1"},
                  {"kind", "Event"},
                  {"metadata", {{"name", series.event_name}, {"namespace", pod.namespace_name}}},
                  {"involvedObject",
                   {{"apiVersion", pod.api_version},
                    {"kind", pod.kind},
                    {"namespace", pod.namespace_name},
                    {"name", pod.name},
                    {"uid", pod.uid}}},
                  {"reason", reason},
                  {"message", message},
                  {"type", type},
                  {"count", 1},
                  {"firstTimestamp", rfc3339(wall)},
                  {"lastTimestamp", rfc3339(wall)},
                  {"source", {{"component", options_.component}}},
                  {"reportingComponent", options_.component},
                  {"reportingInstance", options_.component}};
    auto reply = client_.call("POST", collection, event.dump());
    if (!reply) return reply.error();
    if (reply->status != 201 && reply->status != 200) {
      return Error{"creating event on " + pod.namespace_name + "/" + pod.name +
                   ": API server answered " + std::to_string(reply->status)};
    }
    outcome = Outcome::kCreated;
    series.count = 1;
  }
  series.message = message;
  series.last_write = now;
  std::lock_guard lock(mu_);
  series_[{pod.namespace_name, series_name(pod), reason}] = series;
  return outcome;
}

void EventRecorder::forget(const ObjectRef& pod) {
  std::lock_guard lock(mu_);
  const std::string name = series_name(pod);
  for (auto it = series_.lower_bound({pod.namespace_name, name, ""});
       it != series_.end() && std::get<0>(it->first) == pod.namespace_name &&
       std::get<1>(it->first) == name;) {
    it = series_.erase(it);
  }
}

std::uint64_t EventRecorder::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

}  // namespace allox::kube
