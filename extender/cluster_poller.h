// The cluster side, by polling: every `tick` it lists the nodes from the API server into the
// planner's inventory, settles binds in doubt (bind intents a crash left, from their pods'
// spec.nodeName: Planner::reconcile_binds), and asks for the phase of each running job's pod;
// a pod that succeeded, failed or is gone completes its job.
//
// Thread-safe. The poll runs on its own thread between start() and stop(); stop() waits for a
// poll in flight (each API call is bounded by the client's timeout).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "extender/cluster_api.h"
#include "extender/planner.h"

namespace allox::extender {

class ClusterPoller {
 public:
  // planner and api must outlive the poller.
  ClusterPoller(Planner& planner, ClusterApi& api, std::chrono::steady_clock::duration tick);
  ~ClusterPoller();

  void start();
  void stop();  // idempotent
  // One poll: the node list, binds in doubt, then the running jobs' pod phases.
  void poll_once();

 private:
  Planner& planner_;
  ClusterApi& api_;
  std::chrono::steady_clock::duration tick_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace allox::extender
