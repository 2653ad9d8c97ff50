// The controller: closes the gap between the plan and the cluster, the way a controller-runtime
// reconciler does. Level-triggered: each pass reads the observed state (the book, the latest
// plan, the pods ClusterFeed saw) and submits idempotent actions to the ActionQueue; a missed
// or repeated pass is harmless.
//
// A pass runs after every new plan or pod change (coalesced, and paced: ControllerOptions) and
// at least every `resync`, and only while this replica holds the Lease (`leading`):
//   - a job the plan starts now on device D at node N is admitted to a variant that runs on D
//     (Planner::admit: the job's other variants leave the book, so no later plan picks them);
//     that variant's allox.io/queue gate is removed, or, when it has none (webhook off or
//     released earlier) and kube-scheduler has turned it away (PodScheduled=False,
//     Unschedulable in its status), it is nudged with an annotation patch the moment the plan
//     flips it to "starts now", so the parked pod is retried at once (again every `renudge`
//     while it waits); a pod still in the scheduler's active queue is left to it;
//     event `Admitted: starts on N (D)`.
//   - every other pod of a job that is admitted elsewhere, runs, or has finished (a sibling, or
//     a variant that arrived late) is deleted, in its own namespace and only as it was seen
//     (a resourceVersion precondition); once the delete succeeded, an event `Deleted: job J runs
//     as variant ns/name` (or `... has finished`). A refused delete is tried again as soon as the
//     changed pod is seen. A pod a batch/v1 Job controls is a variant through its Job: the Job
//     is deleted instead (propagationPolicy Background, a uid precondition: kube/jobs.h) with
//     the event on the Job, naming the variant that runs by its Job (`runs as variant
//     ns/<job>`); the other pods of the Job the job runs as are never deleted for it.
//   - a pod whose Job has a shape allox refuses (model/job.h) gets a `Parked` warning on its Job
//     naming the field; it stays gated.
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
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "alloxd/cache/cluster_feed.h"
#include "alloxd/control/action_queue.h"
#include "alloxd/plan/planner.h"
#include "kube/client.h"
#include "kube/events.h"

namespace allox::extender {

struct ControllerOptions {
  std::chrono::milliseconds resync{5000};
  std::chrono::milliseconds renudge{10000};
  std::chrono::milliseconds requeue_event{30000};
  // How long a submitted action's key is not submitted again while the informer catches up.
  std::chrono::milliseconds settle{5000};
  // An action that succeeded is not submitted again while the watch still shows the pod at the
  // version it acted on, for up to this long (client-go's controller expectations): the watch
  // lags the write, and acting again on the stale view (a second DELETE, a gate removal of a
  // pod already ungated) only loads the API server. Past it, the pod is acted on again.
  std::chrono::milliseconds expectation{60000};
  // Pacing, as the planner's (planner.h): after a pass that took d, the next one starts no
  // sooner than min(pace × d, max_pause) after it; the pokes that arrive meanwhile are one pass.
  // A pass reads every waiting pod: back to back under a stream of watch events (hundreds a
  // second while a backlog binds) it would take a core for passes that each change little.
  double pace = 1;
  std::chrono::milliseconds max_pause{100};
  // Incremental passes: a pass looks only at the pods whose answer may have changed
  // since the last one (see reconcile()); every `full_pass` one looks at every pod, the safety
  // net for a change no pod of its job shows (an operator's completion through the API).
  std::chrono::milliseconds full_pass{5000};
  // The monotonic clock every interval above is measured on (not the pacing of the passes, which
  // waits on the thread's own time). Tests substitute a stepped one; unset: steady_clock.
  std::function<std::chrono::steady_clock::time_point()> steady_now;
};

class Controller {
 public:
  // Everything must outlive the controller. leading() says whether this replica may act.
  Controller(Planner& planner, ClusterFeed& feed, kube::KubeClient& client,
             kube::EventRecorder& events, ActionQueue& actions, std::function<bool()> leading,
             ControllerOptions options = {});
  ~Controller();

  // start() returns once the thread runs, named and in its class (thread_priority.h), as
  // HttpServer::start's: whoever looks at the process after start-up (`top -H`, a test) sees it.
  void start();
  void stop();
  // Asks for a pass soon (a new plan, a pod change, a new leader).
  void poke();
  // One pass now, on the caller's thread (tests).
  void reconcile();
  // True while a pass is due or running.
  bool busy() const;
  // Blocks until busy() is false, or until `deadline`; whether it is. The thread announces the
  // end of each pass, so the caller (a test) waits on that, never on a timer or a poll.
  bool wait_until_idle(std::chrono::steady_clock::time_point deadline) const;
  // Passes run so far (while leading), on the controller's thread or by reconcile().
  std::uint64_t passes() const { return passes_.load(); }
  // The pods ("namespace/name") the last pass looked at, in order, and whether it was a full
  // pass (tests).
  std::vector<std::string> last_visited() const;
  bool last_was_full() const;

 private:
  using Clock = std::chrono::steady_clock;
  using PodEntry = std::map<std::string, ObservedPod>::value_type;
  // What one pass reads once and every step of it shares.
  struct Pass {
    std::uint64_t number = 0;
    Clock::time_point now;
    double wall = 0;                    // the planner's clock
    std::shared_ptr<const Plan> plan;   // the plan acted on
    std::uint64_t seen = 0;             // the latest plan's version, acted on or passed over
    std::vector<std::string> changed;   // pods changed since the last pass
    std::vector<std::string> gone;      // pods that left the feed
    std::vector<std::string> gone_jobs; // the jobs of those
  };
  // Where a waiting pod's job stands, read out of the book under its lock: only what the pass
  // decides by, per pod, never a copy of every job.
  struct PodFacts {
    bool known = false;  // its job is in the book
    JobPhase phase = JobPhase::kQueued;
    bool in_book = false;  // the pod is a variant of its job in the book
    std::string runs_as;   // namespace/name of the pod the job runs as (when running)
    bool gang_member = false;  // a member of a gang: never a sibling to delete
  };
  struct Admissions {
    std::vector<std::string> rescanned;  // started jobs looked at (their pods are visited)
    std::vector<std::string> dropped;    // jobs whose start the plan dropped
  };
  // The steps of reconcile(), in order; each documented where it is defined.
  Pass begin_pass();
  std::vector<const PodEntry*> pods_to_visit(const Pass& pass);
  Admissions admit_starts(const Pass& pass);
  std::vector<PodFacts> facts_of(const std::vector<const PodEntry*>& visit) const;
  void act_on(const Pass& pass, const PodEntry& entry, const PodFacts& job);
  void end_pass(const Pass& pass, const std::vector<const PodEntry*>& visit);
  // act_on's answers for one pod: the reason to delete it (nullopt: it is its job's variant
  // to run; empty: leave it alone for now), and the actions.
  std::optional<std::string> why_delete(const std::string& key, const ObservedPod& pod,
                                        const PodFacts& job) const;
  void delete_variant(const Pass& pass, const std::string& key, const ObservedPod& pod,
                      const std::string& why);
  std::string variant_name(const std::string& pod_key) const;
  bool same_job_object(const ObservedPod& pod, const std::string& other_key) const;
  // A `Parked` warning on a Job whose shape allox refuses (ObservedPod::job_refusal).
  void tell_refused_job(const Pass& pass, const ObservedPod& pod);
  struct Release;
  void release(const Pass& pass, const std::string& key, const ObservedPod& pod,
               const PlannedStart& start, const Release& released);
  // Gangs (controller_gangs.cc). The pod a gang start is admitted by (its first member) when
  // every member of it is in the cluster and pending, else null: a gang is released whole.
  const std::string* gang_to_admit(const JobBook& book, const std::string& id,
                                   const PlannedStart& start) const;
  // Rolls back the admitted gangs whose hold lapsed, then carries out every rollback the
  // planner handed over: each member deleted (a uid precondition) and told why
  // (GangRolledBack, or GangFailed for a failed gang's members still running).
  void roll_back_gangs(const Pass& pass);
  // A queued gang some of whose members are released (ungated, pinned) though the planner has
  // no admission for it: alloxd restarted between the release and the binds. It is admitted
  // again on its members' pinned nodes when they still hold its units (Planner::adopt_gang),
  // else rolled back with the reason; a gang still settling in the book is looked at next pass.
  void adopt_released_gangs(const Pass& pass);
  struct OrphanedGang {
    enum Verdict { kSettled, kWait, kAdopt, kRollBack } verdict;
    std::string why;  // kRollBack's reason
  };
  // What adopt_released_gangs does with gang `id`; for kAdopt, `nodes` gets every member's node.
  OrphanedGang orphaned_gang(const std::string& id,
                             std::map<std::string, std::string>& nodes) const;
  void tell_queued(const Pass& pass, const std::string& key, const ObservedPod& pod,
                   const PlannedWait& wait);
  // A `Parked` warning with the reason the plan leaves the pod's job out (Plan::parked): its
  // gate stays on, so kube-scheduler never tries it and says nothing of it.
  void tell_parked(const Pass& pass, const std::string& key, const ObservedPod& pod,
                   const std::string& reason);
  void add_pod(const std::string& key, std::vector<const PodEntry*>& visit) const;
  void add_pods_of(const std::string& job, std::vector<const PodEntry*>& visit) const;
  void loop();
  Clock::time_point now() const { return options_.steady_now ? options_.steady_now() : Clock::now(); }
  // Submits an action unless the same key was submitted for the same `seen` (the pod's
  // resourceVersion) within `settle`, or succeeded for it within `expectation`: a pod that
  // changed since is always looked at again.
  void act(const std::string& key, const std::string& seen, std::function<Status()> action,
           Clock::time_point now, ActionPriority priority = ActionPriority::kBackground);
  // When the last event for `reason` went to the pod: less than requeue_event ago, say() would
  // send none, whatever its words.
  std::optional<Clock::time_point> said_at(const std::string& key, const std::string& reason) const;
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

  mutable std::mutex pass_mu_;  // one pass at a time; guards the maps below
  struct Submitted {
    Clock::time_point at;
    std::string seen;
  };
  // Looked up by key for each waiting pod of every pass: hashed, not ordered (tens of thousands
  // of keys sharing long prefixes made each ordered lookup a dozen string compares).
  std::unordered_map<std::string, Submitted> submitted_;
  // Actions that succeeded, by key: when, and the version they acted on. Written by the action
  // workers, read by the pass.
  mutable std::mutex succeeded_mu_;
  std::unordered_map<std::string, Submitted> succeeded_;
  // pod -> reason -> (words, when) of the last event submitted
  std::unordered_map<std::string, std::map<std::string, std::pair<std::string, Clock::time_point>>>
      said_;
  std::unordered_map<std::string, Clock::time_point> nudged_;
  std::unordered_set<std::string> ungated_;  // pods released by removing their gate
  PodMirror mirror_;  // the feed's pods as of the last pass

  // The plan's starts as the passes released them: job -> the pod released for it, at which
  // start, and since which pass (a pod released by an earlier pass is past its "starts now"
  // flip: it is nudged again only every renudge). Brought up to date for the starts that changed
  // between plans and the jobs whose pods changed, never by a walk over every start per pass:
  // thousands of released jobs wait for kube-scheduler while a backlog binds.
  struct Release {
    std::string pod;  // namespace/name
    PlannedStart start;
    std::uint64_t since = 0;  // passes_ when released
  };
  std::unordered_map<std::string, Release> released_;
  std::unordered_set<std::string> recheck_;  // started jobs with no pod released yet
  std::set<std::string> orphaned_gangs_;      // released gangs with no admission (a restart)
  std::shared_ptr<const Plan> last_plan_;    // the plan released_ follows

  // What makes a pass incremental. A pass looks at the pods that changed (and every pod of
  // their jobs: a bound pod's siblings are deleted), the pods of the jobs whose start the plan
  // added, changed or dropped, the pods still in motion (`active_`: not in the book yet, not in
  // the plan) and the quiet pods whose time has come (`due_`: a Queued event may follow the
  // last, a released pod parked by kube-scheduler is due another nudge, an action may be lost).
  // Every other pod is quiet: a full pass would do nothing for it (it is not pending, or runs as
  // its job, or was released and waits for kube-scheduler, or its Queued event is too recent to
  // be followed by another).
  void index(const std::string& key);    // job_of_ / pods_of_ from the mirror's pod
  void unindex(const std::string& key);  // the pod left the mirror (or is re-indexed)
  void make_quiet(const std::string& key, std::optional<Clock::time_point> until);
  std::unordered_map<std::string, std::string> job_of_;             // pod -> its job
  std::unordered_map<std::string, std::set<std::string>> pods_of_;  // job -> its pods
  std::unordered_set<std::string> active_;                          // looked at every pass
  std::unordered_map<std::string, Clock::time_point> quiet_until_;  // quiet, due then
  std::multimap<Clock::time_point, std::string> due_;               // quiet_until_ by time
  Clock::time_point next_full_{};                                   // the next full pass
  std::vector<std::string> last_visited_;
  bool last_full_ = false;

  std::atomic<std::uint64_t> passes_{0};

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool dirty_ = true, stopping_ = false, passing_ = false;
  bool pausing_ = false;  // the thread waits out the pause after a pass
  // Notified at the end of each of the thread's passes (wait_until_idle). Not cv_, whose
  // notify_one must reach the controller's thread.
  mutable std::condition_variable idle_cv_;
  std::thread thread_;
};

}  // namespace allox::extender
