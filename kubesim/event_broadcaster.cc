#include "kubesim/event_broadcaster.h"

#include <utility>

#include "kubesim/cluster_threads.h"

namespace allox::emulator {

namespace {

nlohmann::json event_object(const PodEvent& e) {
  return {{"metadata", {{"generateName", e.pod_name + "."}, {"namespace", e.pod_namespace}}},
          {"eventTime", rfc3339(e.at)},
          {"reportingController", "default-scheduler"},
          {"reportingInstance", "default-scheduler-allox-emulator"},
          {"action", "Scheduling"},
          {"reason", e.reason},
          {"regarding",
           {{"kind", "Pod"},
            {"namespace", e.pod_namespace},
            {"name", e.pod_name},
            {"uid", e.pod_uid},
            {"apiVersion", "v1"}}},
          {"note", e.note},
          {"type", e.type}};
}

}  // namespace

EventBroadcaster::EventBroadcaster(ApiObjects& objects, std::function<void()> on_idle,
                                   std::size_t queue_limit)
    : objects_(objects),
      on_idle_(std::move(on_idle)),
      queue_limit_(queue_limit),
      thread_([this] { run(); }) {}

EventBroadcaster::~EventBroadcaster() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void EventBroadcaster::record(PodEvent event) {
  {
    std::lock_guard lock(mu_);
    if (queue_.size() >= queue_limit_) {
      ++dropped_;
      return;
    }
    queue_.push_back(std::move(event));
  }
  cv_.notify_one();
}

bool EventBroadcaster::idle() const {
  std::lock_guard lock(mu_);
  return queue_.empty() && !writing_;
}

std::uint64_t EventBroadcaster::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

void EventBroadcaster::run() {
  become_cluster_thread("emu-events");
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued is written
    std::deque<PodEvent> batch;
    batch.swap(queue_);
    writing_ = true;
    lock.unlock();
    // An event the store refuses is lost, as one the API server refuses is to client-go.
    for (const PodEvent& event : batch) {
      (void)objects_.create(events_v1_resource(), event.pod_namespace, event_object(event));
    }
    lock.lock();
    writing_ = false;
    if (on_idle_ && queue_.empty()) {
      lock.unlock();
      on_idle_();
      lock.lock();
    }
  }
}

}  // namespace allox::emulator
