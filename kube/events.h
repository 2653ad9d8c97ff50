// Kubernetes Events on pods ("why is my pod pending?") and the Jobs that own them, deduplicated and rate-bounded so a long
// queue cannot flood the API server.
//
//   - One Event object per (pod, reason): the first record() POSTs it; later ones PATCH the
//     same object (count + 1, lastTimestamp, and the message when it changed), the way
//     client-go's correlator folds a series into one object. `kubectl describe pod` shows the
//     latest message and how often it was said.
//   - The same (pod, reason, message) again within `repeat_after` writes nothing.
//   - A token bucket (qps, burst) bounds all writes; a record() over the budget is dropped and
//     counted: callers are level-triggered (the controller says it again on its next pass).
//   - The budget is shared fairly among namespaces: each namespace that asked within the last
//     `active_window` has a bucket of its own with an equal share of qps and burst, and takes a
//     write from the common bucket only with a token of its own, or while the common bucket
//     holds more than half its burst (capacity nobody else is using). One namespace flooding
//     pods then gets its share and what is spare; another's events keep flowing.
//   - forget(pod) drops the pod's series when the pod is gone.
//
// Thread-safe. record() makes at most one API call (bounded by the client's timeout).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "core/result.h"
#include "kube/client.h"

namespace allox::kube {

// The object an event is about, or a call acts on: a Pod unless kind says otherwise (a
// batch/v1 Job: kind "Job", api_version "batch/v1").
struct ObjectRef {
  std::string namespace_name, name, uid;
  std::string kind = "Pod";
  std::string api_version = "v1";
};

struct EventOptions {
  std::string component = "allox-scheduler";
  double qps = 20;
  double burst = 100;
  std::chrono::seconds repeat_after{300};
  std::chrono::seconds active_window{30};
};

class EventRecorder {
 public:
  using Clock = std::chrono::steady_clock;
  // clock: tests substitute a fake one.
  EventRecorder(KubeClient& client, EventOptions options,
                std::function<Clock::time_point()> clock = Clock::now);

  enum class Outcome { kCreated, kUpdated, kUnchanged, kDropped };
  // type is "Normal" or "Warning".
  Expected<Outcome> record(const ObjectRef& pod, const std::string& type, const std::string& reason,
                           const std::string& message);
  void forget(const ObjectRef& pod);
  std::uint64_t dropped() const;

 private:
  struct Series {
    std::string event_name;
    std::string message;
    int count = 0;
    Clock::time_point last_write{};
  };
  // The namespace's share and the common bucket (mu_ held).
  bool take_token(const std::string& namespace_name, Clock::time_point now);
  struct Share {
    double tokens = 0;
    Clock::time_point refilled_at{};
    Clock::time_point asked_at{};
  };

  KubeClient& client_;
  EventOptions options_;
  std::function<Clock::time_point()> clock_;
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, std::string>, Series> series_;  // ns, pod, reason
  double tokens_;
  Clock::time_point refilled_at_;
  std::map<std::string, Share> shares_;  // by namespace, those active within active_window
  Clock::time_point shares_swept_at_{};
  std::uint64_t dropped_ = 0;
  std::uint64_t sequence_ = 0;
};

}  // namespace allox::kube
