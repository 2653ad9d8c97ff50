// Plays kube-scheduler's side of the extender protocol against a running alloxd, over HTTP, on a
// sped-up clock: the demo behind `./dev run` and the end-to-end test of the whole extender.
//
// Each job becomes one pending pod per device variant it can run on (all sharing the
// allox.io/job annotation, with allox.io/time.<device> hints from the job's estimates). The
// emulator schedules pods the way kube-scheduler does with an extender: for one pod at a time,
// POST /filter with every node (nodeCacheCapable: NodeNames), then /prioritize over the nodes
// that passed, then /bind to the best-scored one. A pod filtered out everywhere is parked with
// exponential back-off, and every cluster event (a completion) moves parked pods back to the
// active queue, as kube-scheduler's MoveAllToActiveOrBackoffQueue does. Once one variant is
// bound, its siblings are deleted. A bound job runs for its *true* time on the bound device and
// is then reported done (POST /v1/jobs/{id}/done with the admin token).
//
// Simulated seconds pass `speedup` times faster than wall-clock seconds. The replay ends when
// every job is done, when `stop` becomes true (Ctrl-C), or on an HTTP fault, which is an error
// naming the request. Not thread-safe; run one replay per emulator call.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"

namespace allox::extender {

struct ReplayJob {
  std::string id;
  std::string user;
  double arrival = 0;                      // simulated seconds from the replay's start
  std::map<DeviceType, double> estimate;   // seconds; sent as allox.io/time.<device> hints
  std::map<DeviceType, double> true_time;  // seconds the job really runs; same keys
};

struct ReplayEvent {
  enum class Kind { kArrived, kBound, kDone, kBindFailed };
  Kind kind = Kind::kArrived;
  double at = 0;  // simulated seconds
  std::string job;
  std::string user;
  std::string node;                       // kBound, kDone
  DeviceType device;                      // kBound, kDone
  int queued = 0, running = 0, done = 0;  // after the event
};

struct ReplayOptions {
  std::string server = "http://127.0.0.1:8888";
  std::string admin_token;
  std::vector<std::string> nodes;  // node names, as kube-scheduler would list
  std::map<DeviceType, std::string>
      resource_of;        // device -> resource to request ("nvidia.com/gpu")
  double cpu_cores = 32;  // cores requested by a CPU variant
  std::string pod_namespace = "demo";
  double speedup = 100;                              // simulated seconds per wall-clock second
  double max_backoff_wall_s = 2;                     // back-off cap for a parked pod
  std::atomic<bool>* stop = nullptr;                 // set to end the replay early
  std::function<void(const ReplayEvent&)> on_event;  // progress, called on the replay's thread
};

struct ReplayedJob {
  std::string id, user, node;
  DeviceType device;
  double arrival = 0, start = 0, finish = 0;  // simulated seconds; finish 0 if not done
};

struct ReplaySummary {
  std::vector<ReplayedJob> jobs;  // in input order
  int filter_calls = 0, prioritize_calls = 0, bind_calls = 0, bind_failures = 0;
  double simulated_s = 0, wall_s = 0;
  bool interrupted = false;
};

Expected<ReplaySummary> replay_as_kube_scheduler(const std::vector<ReplayJob>& jobs,
                                                 const ReplayOptions& options);

}  // namespace allox::extender
