// kube-scheduler's events (Scheduled, FailedScheduling), written as client-go's events
// broadcaster writes them: the scheduling cycle hands each event over and goes on; one thread
// creates them on the API server. A full queue drops the event (client-go queues 1,000 and
// drops when full), so a slow API server never holds up scheduling, and scheduling never waits
// on the store's lock for a record nobody's decision reads.
//
// Thread-safe: record, idle and dropped from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "kubesim/api_objects.h"

namespace allox::emulator {

// One events.k8s.io/v1 Event about a pod, from the default scheduler.
struct PodEvent {
  std::string pod_namespace, pod_name, pod_uid;
  std::string type;    // Normal | Warning
  std::string reason;  // Scheduled | FailedScheduling
  std::string note;
  double at = 0;  // eventTime, unix seconds of the emulator's clock
};

class EventBroadcaster {
 public:
  static constexpr std::size_t kQueueLimit = 1000;  // client-go's maxQueuedEvents

  // Starts the writer thread (a cluster thread: cluster_threads.h). `objects` must outlive it.
  // on_idle, if set, runs on that thread each time it has written all it was given (idle()
  // turned true), so a waiter on idle() need not poll.
  explicit EventBroadcaster(ApiObjects& objects, std::function<void()> on_idle = {},
                            std::size_t queue_limit = kQueueLimit);
  // Writes what is queued, then ends the thread.
  ~EventBroadcaster();
  EventBroadcaster(const EventBroadcaster&) = delete;
  EventBroadcaster& operator=(const EventBroadcaster&) = delete;

  void record(PodEvent event);
  // Nothing queued and nothing being written: every recorded event not dropped is in the store.
  bool idle() const;
  std::uint64_t dropped() const;

 private:
  void run();

  ApiObjects& objects_;
  const std::function<void()> on_idle_;
  const std::size_t queue_limit_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<PodEvent> queue_;
  bool writing_ = false;
  bool stopping_ = false;
  std::uint64_t dropped_ = 0;
  std::thread thread_;
};

}  // namespace allox::emulator
