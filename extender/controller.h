// The controller: closes the gap between the plan and the cluster, the way a controller-runtime
// reconciler does. Level-triggered: each pass reads the observed state (the book, the latest
// plan, the pods ClusterFeed saw) and submits idempotent actions to the ActionQueue; a missed
// or repeated pass is harmless.
//
// A pass runs after every new plan or pod change (coalesced, and paced: ControllerOptions) and
// at least every `resync`, and only while this replica holds the Lease (`leading`):
//   - a job the plan starts now on device D at node N is admitted to its D variant
//     (Planner::admit: the job's other variants leave the book, so no later plan picks them);
//     that variant's allox.io/queue gate is removed, or, when it has none (webhook off or
//     released earlier), it is nudged with an annotation patch the moment the plan flips it to
//     "starts now", so a parked pod is retried at once (again every `renudge` while it waits);
//     event `Admitted: starts on N (D)`.
//   - every other pod of a job that is admitted elsewhere, runs, or has finished (a sibling, or
//     a variant that arrived late) is deleted, in its own namespace and only as it was seen
//     (a resourceVersion precondition); once the delete succeeded, an event `Deleted: job J runs
//     as variant ns/name` (or `... has finished`). A refused delete is tried again as soon as the
//     changed pod is seen.
//   - a waiting job's pods get `Queued: position p of n for D, est. start 14:05 (in 9 min)`
//     (times are UTC), written when the words change and at most every `requeue_event`.
//
// Thread-safe: start/stop/poke from any thread; passes run on the controller's thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "extender/action_queue.h"
#include "extender/cluster_feed.h"
#include "extender/kube/client.h"
#include "extender/kube/events.h"
#include "extender/planner.h"

namespace allox::extender {

struct ControllerOptions {
  std::chrono::milliseconds resync{5000};
  std::chrono::milliseconds renudge{10000};
  std::chrono::milliseconds requeue_event{30000};
  // How long a submitted action's key is not submitted again while the informer catches up.
  std::chrono::milliseconds settle{5000};
  // Pacing, as the planner's (planner.h): after a pass that took d, the next one starts no
  // sooner than min(pace × d, max_pause) after it; the pokes that arrive meanwhile are one pass.
  // A pass reads every waiting pod: back to back under a stream of watch events (hundreds a
  // second while a backlog binds) it would take a core for passes that each change little.
  double pace = 1;
  std::chrono::milliseconds max_pause{100};
};

class Controller {
 public:
  // Everything must outlive the controller. leading() says whether this replica may act.
  Controller(Planner& planner, ClusterFeed& feed, kube::KubeClient& client,
             kube::EventRecorder& events, ActionQueue& actions, std::function<bool()> leading,
             ControllerOptions options = {});
  ~Controller();

  void start();
  void stop();
  // Asks for a pass soon (a new plan, a pod change, a new leader).
  void poke();
  // One pass now, on the caller's thread (tests).
  void reconcile();
  // True while a pass is due or running.
  bool busy() const;
  // Passes run so far (while leading), on the controller's thread or by reconcile().
  std::uint64_t passes() const { return passes_.load(); }

 private:
  using Clock = std::chrono::steady_clock;
  void loop();
  // Submits an action unless the same key was submitted for the same `seen` (the pod's
  // resourceVersion) within `settle`: a pod that changed since is always looked at again.
  void act(const std::string& key, const std::string& seen, std::function<Status()> action,
           Clock::time_point now, ActionPriority priority = ActionPriority::kBackground);
  // True when an event for `reason` went to the pod less than requeue_event ago: say() would
  // send none, whatever its words.
  bool said_within(const std::string& key, const std::string& reason, Clock::time_point now) const;
  // Submits an event when its words changed, at most every requeue_event.
  void say(const kube::ObjectRef& pod, const std::string& type, const std::string& reason,
           const std::string& message, Clock::time_point now);

  Planner& planner_;
  ClusterFeed& feed_;
  kube::KubeClient& client_;
  kube::EventRecorder& events_;
  ActionQueue& actions_;
  std::function<bool()> leading_;
  ControllerOptions options_;

  std::mutex pass_mu_;  // one pass at a time; guards the maps below
  struct Submitted {
    Clock::time_point at;
    std::string seen;
  };
  std::map<std::string, Submitted> submitted_;
  // pod -> reason -> (words, when) of the last event submitted
  std::map<std::string, std::map<std::string, std::pair<std::string, Clock::time_point>>> said_;
  std::map<std::string, Clock::time_point> nudged_;
  std::set<std::string> starting_;  // pods the previous pass released or nudged
  PodMirror mirror_;                // the feed's pods as of the last pass

  std::atomic<std::uint64_t> passes_{0};

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool dirty_ = true, stopping_ = false, passing_ = false;
  std::thread thread_;
};

}  // namespace allox::extender
