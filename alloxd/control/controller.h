// The controller: closes the gap between the plan and the cluster in controller-runtime's shape.
// Handlers only say which job to look at again; one rate-limited, de-duplicating work queue of
// job keys (work_queue.h) holds them; `reconcile(job key)` reads the pod cache, the book and the
// latest plan for that one job and returns idempotent actions; the queue's workers run reconcile
// and then the actions, each one API round trip. Level-triggered: a missed or repeated key is
// harmless, and the resync looks again at every job that may need it.
//
//   ClusterFeed on_change ──► pods_changed()   the cache brought up to the feed; the jobs of the
//                                              pods that changed or left
//   Planner (a new plan)  ──► plan_changed()   one key for the plan; its worker takes the jobs
//                                              whose entry changed: starts now (as an
//                                              admission, made with the others in one store
//                                              transaction first), waits with new words, parked,
//                                              start dropped; a gang rolled back
//   Lease won or lost     ──► leader_changed() every job
//   every `resync`        ──► resync()         every job with a pod still waiting to run, a
//                                              start in the plan, a gang or a rollback (a
//                                              change no pod shows: an operator's completion
//                                              through the API); a job whose pods are all bound
//                                              or ended has nothing to act on until one changes
//                                 │ job keys
//                                 ▼
//        WorkQueue: de-duplicated, admissions first, add_after, per-key back-off
//                                 │ get()
//                                 ▼
//   `workers` threads:  reconcile(key) ──► actions (gate removal, nudge, delete, event)
//                         ok: forget(key)   failed: add_rate_limited(key), up to max_attempts
//                         requeue_after:  add_after(key, d)      then done(key)
//                         taken as an admission: only the starting actions (gate removal,
//                         nudge, Admitted event) run; the key goes back as an admission once more,
//                         behind the admissions waiting, for the rest: a plan's starts go out
//                         before their deletions, and the deletions before any background key
//
// reconcile(job) acts only while this replica holds the Lease (`leading`), and the workers ask
// again before each action:
//   - a job the plan starts now on device D at node N is admitted to a variant that runs on D
//     (Planner::admit: the job's other variants leave the book, so no later plan picks them);
//     that variant's allox.io/queue gate is removed, pinning it to N in the same patch (README,
//     "The pin"), or, when it has none (webhook off or released earlier) and kube-scheduler has
//     turned it away (PodScheduled=False, Unschedulable in its status), it is nudged with an
//     annotation patch the moment the plan flips it to "starts now" (again every `renudge`
//     while it waits); a pod still in the scheduler's active queue is left to it; event
//     `Admitted: starts on N (D)` where no gate removal says so. A gang is admitted only with
//     every member pending, all its gates removed by one reconcile (controller_gangs.cc).
//   - every other pod of a job that is admitted elsewhere, runs, or has finished (a sibling, or
//     a variant that arrived late) is deleted, in its own namespace and only as it was seen
//     (a resourceVersion precondition); once the delete succeeded, an event `Deleted: job J runs
//     as variant ns/name` (or `... has finished`). A pod a batch/v1 Job controls is a variant
//     through its Job: the Job is deleted instead (propagationPolicy Background, a uid
//     precondition: kube/jobs.h) with the event on the Job; the other pods of the Job the job
//     runs as are never deleted for it.
//   - a released pod pinned to a node that has since gone, closed (cordoned, not ready) or come
//     to refuse it (a taint) gets a `PinnedNodeUnavailable` warning: a pin cannot change, so it
//     waits for that node until deleted; the warning says so.
//   - a pod whose Job has a shape allox refuses (model/job.h) gets a `Parked` warning on its Job
//     naming the field; it stays gated. A job the plan parks gets a `Parked` warning.
//   - a waiting job's pods get `Queued: position p of n for D, est. start 14:05 (in 9 min)`
//     (times are UTC), written when the words change and at most every `requeue_event`.
// Expectations: an action that succeeded is not returned again while the cache still shows the
// pod at the version it acted on, for up to `expectation`: the watch lags the write.
//
// Keys: a pod's job id (allox.io/job, "namespace/name"); a pod with no job (its annotations
// unreadable, its Job refused) by its Job ("Job:namespace/name") or its own key.
//
// Thread-safe: the handlers from any thread (the informers', the planner's, the Lease's);
// reconcile and drain from any thread, one key never on two at once (the queue's guarantee).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "alloxd/cache/cluster_feed.h"
#include "alloxd/control/work_queue.h"
#include "alloxd/plan/planner.h"
#include "core/result.h"
#include "kube/client.h"
#include "kube/events.h"

namespace allox::extender {

struct ControllerOptions {
  int workers = 4;  // each action is one API round trip, mostly waiting on the network
  std::chrono::milliseconds resync{5000};
  std::chrono::milliseconds renudge{10000};
  std::chrono::milliseconds requeue_event{30000};
  // After acting on a pod, its job is looked at again this much later if the watch has shown
  // nothing of it meanwhile (the action may have been lost).
  std::chrono::milliseconds settle{5000};
  // An action that succeeded is not returned again while the watch still shows the pod at the
  // version it acted on, for up to this long (client-go's controller expectations): acting
  // again on the stale view (a second DELETE, a gate removal of a pod already ungated) only
  // loads the API server. Past it, the pod is acted on again.
  std::chrono::milliseconds expectation{60000};
  // A job whose actions keep failing is retried with per-key back-off (WorkQueue) this many
  // times, then given up with a warning until something about it changes (or the resync).
  int max_attempts = 5;
  std::chrono::milliseconds backoff_initial{100};
  std::chrono::milliseconds backoff_max{5000};
  std::size_t capacity = 100000;  // job keys waiting, beyond which new keys are dropped
  // The monotonic clock every interval above is measured on. Tests substitute a stepped one;
  // unset: steady_clock.
  std::function<std::chrono::steady_clock::time_point()> steady_now;
};

// One idempotent action on the cluster: one API round trip.
struct ControlAction {
  std::string key;  // what it does to what: "ungate lab/a-gpu", "delete job lab/x", "event ..."
  std::function<Status()> run;
  // kAdmit: it starts a job (a gate's removal, a nudge, the Admitted event that says where);
  // kBackground: it tidies up (a deletion, another event), left to the job's next reconcile
  // when it comes with a start (Controller::process).
  WorkPriority priority = WorkPriority::kBackground;
};

// What reconcile(key) returns: the actions, and when to look at the job again if nothing
// changes meanwhile (a Queued event due, a nudge due, a hold that lapses, an action that may
// have been lost).
struct Reconciliation {
  std::vector<ControlAction> actions;
  std::optional<std::chrono::steady_clock::duration> requeue_after;
};

class Controller {
 public:
  using Clock = std::chrono::steady_clock;
  // Everything must outlive the controller. leading() says whether this replica may act.
  Controller(Planner& planner, ClusterFeed& feed, kube::KubeClient& client,
             kube::EventRecorder& events, std::function<bool()> leading,
             ControllerOptions options = {});
  ~Controller();

  // start() returns once every worker runs, named and in its class (thread_priority.h), as
  // HttpServer::start's: whoever looks at the process after start-up (`top -H`, a test) sees
  // them. The first resync is due at once. stop() drops what waits and returns once the
  // reconciles and actions in flight have ended (each action is one bounded API call).
  void start();
  void stop();

  // The handlers: each only brings the cache up to date and enqueues job keys.
  void pods_changed();
  void plan_changed();
  void leader_changed();
  void resync();

  // The job's actions, as of now; admits the job when the plan starts it (a book write). Does
  // not run the actions: the caller (a worker, drain) does.
  Reconciliation reconcile(const std::string& key);
  // Every key ready now, reconciled and its actions run on the caller's thread, until none is
  // ready (tests, with a stepped clock: delayed keys come due as it steps). The keys, in order.
  std::vector<std::string> drain();

  // True while a key waits or is processed.
  bool busy() const { return !queue_.idle(); }
  // Blocks until busy() is false, or until `deadline`; whether it is.
  bool wait_until_idle(Clock::time_point deadline) const;
  struct Counts {
    std::uint64_t reconciled = 0;  // reconcile() calls while leading
    std::uint64_t done = 0, failed = 0, retried = 0, given_up = 0, refused = 0;  // actions
    WorkQueue::Counts queue;
  };
  Counts counts() const;

 private:
  // What one reconcile reads once and every step of it shares, and what it returns.
  struct Look {
    std::string key;  // the job's
    Clock::time_point now;
    double wall = 0;                          // the planner's clock
    std::shared_ptr<const Plan> plan;         // the plan acted on
    std::map<std::string, ObservedPod> pods;  // the job's pods, as the cache shows them
    bool synced = false;                      // the feed has listed every pod
    bool released_now = false;                // admit() released a pod for the start just now
    std::string pin_refused;  // why the released pod may not be pinned to its node ("" if it may)
    std::set<std::string> said_now;           // events returned by this reconcile
    Reconciliation out;
    std::optional<Clock::time_point> due;  // when to look again (unset: when it changes)
    void look_again_at(Clock::time_point at) {
      if (!due || at < *due) due = at;
    }
  };
  // Where a waiting pod's job stands, read out of the book under its lock.
  struct PodFacts {
    bool known = false;  // its job is in the book
    JobPhase phase = JobPhase::kQueued;
    bool in_book = false;      // the pod is a variant of its job in the book
    std::string runs_as;       // namespace/name of the pod the job runs as (when running)
    bool gang_member = false;  // a member of a gang: never a sibling to delete
  };
  // The plan's start as reconcile released it: the pod released for it, at which start.
  struct Release {
    std::string pod;  // namespace/name
    PlannedStart start;
  };

  // controller.cc: the workers and the handlers' bookkeeping.
  void work();
  void process(const WorkQueue::Item& item);
  Clock::time_point now() const {
    return options_.steady_now ? options_.steady_now() : Clock::now();
  }
  std::shared_ptr<const Plan> acting_plan() const;
  // The plan's entries that changed since `before` (null: every entry), as keys to enqueue.
  void diff_plan(const Plan& plan, const Plan* before,
                 std::vector<std::pair<std::string, WorkPriority>>& keys);
  // The planner's rollbacks, kept by job until their job's reconcile carries them out.
  // plan_changed's work, on a worker: the jobs whose entry changed since the plan last looked
  // at, their starts admitted together, then their keys enqueued.
  void act_on_plan();
  void take_rollbacks(std::vector<std::pair<std::string, WorkPriority>>& keys);
  // Whether a job with these pods (cache_mu_ held) has nothing a resync could find: every pod
  // bound or ended, none a gang's member (controller.cc says why).
  bool settled(const std::set<std::string>& pods) const;
  void index(const std::string& pod, std::vector<std::string>& keys);
  // A changed pod whose job key is the one indexed (most changes: bound, ended) keeps its entries
  // (no erase and insert of each) and its key goes to `keys`; false when it must be indexed anew.
  bool reindexed(const std::string& pod, std::vector<std::string>& keys);
  std::optional<std::string> unindex(const std::string& pod);
  void forget_pod(const std::string& pod);

  // controller_reconcile.cc: what reconcile does for one job.
  void admit(Look& look);
  // The pod the start admits: a variant that runs on the planned device and the cache shows
  // pending (the first by name), or a gang's first member when every member is; "" for none.
  std::string choose(const Look& look, const JobBook& book, const PlannedStart& start) const;
  // The admissions a new plan's changed starts need, made together (one store transaction, the
  // book's lock taken once per chunk) before their keys are handed out: each reconcile then
  // finds its admission made, and the next plan holds every machine at once.
  void admit_together(const Plan& plan,
                      const std::vector<std::pair<std::string, WorkPriority>>& keys);
  std::vector<PodFacts> facts_of(const Look& look) const;
  std::string pin_refused(const JobBook& book, const std::string& job_id, const std::string& pod,
                          const std::string& node) const;
  void tell_stale_pin(Look& look, const ObservedPod& pod);
  void act_on(Look& look, const std::string& key, const ObservedPod& pod, const PodFacts& job);
  std::optional<std::string> why_delete(const Look& look, const std::string& key,
                                        const ObservedPod& pod, const PodFacts& job) const;
  void delete_variant(Look& look, const std::string& key, const ObservedPod& pod,
                      const std::string& why);
  void release(Look& look, const std::string& key, const ObservedPod& pod,
               const PlannedStart& start);
  void tell_refused_job(Look& look, const ObservedPod& pod);
  void tell_queued(Look& look, const std::string& key, const ObservedPod& pod,
                   const PlannedWait& wait);
  void tell_parked(Look& look, const std::string& key, const ObservedPod& pod,
                   const std::string& reason);
  // Returns the action unless it succeeded for this very `seen` (the pod's resourceVersion, or
  // a uid) within `expectation`; records its success when it runs.
  void act(Look& look, const std::string& key, const std::string& seen,
           std::function<Status()> action, WorkPriority priority = WorkPriority::kBackground);
  // Returns an event when its words changed, at most every requeue_event; recorded as said
  // once it was written.
  // kAdmit for the words that come with a start: a later reconcile may find the pod bound
  // and no longer say them.
  void say(Look& look, const kube::ObjectRef& object, const std::string& type,
           const std::string& reason, const std::string& message,
           WorkPriority priority = WorkPriority::kBackground);
  // When the last event for `reason` went to the object (by its key).
  std::optional<Clock::time_point> said_at(const std::string& key, const std::string& reason) const;

  // controller_gangs.cc: gangs, per job.
  const std::string* gang_to_admit(const Look& look, const JobBook& book,
                                   const PlannedStart& start) const;
  // The job's gang rolled back when its hold lapsed unbound, or when released before a restart
  // with no admission and its pinned nodes no longer hold it; adopted when they do; and the
  // planner's rollbacks of it carried out (each member deleted by uid, and told why).
  void roll_back(Look& look);
  void adopt_if_orphaned(Look& look);
  struct OrphanedGang {
    enum Verdict { kSettled, kWait, kAdopt, kRollBack } verdict;
    std::string why;  // kRollBack's reason
  };
  OrphanedGang orphaned_gang(const Look& look, std::map<std::string, std::string>& nodes) const;

  Planner& planner_;
  ClusterFeed& feed_;
  kube::KubeClient& client_;
  kube::EventRecorder& events_;
  std::function<bool()> leading_;
  ControllerOptions options_;
  WorkQueue queue_;

  // The pod cache: the feed's pods, and the job key of each. Written by pods_changed, read by
  // reconcile. Lock order: mu_, then cache_mu_; pods_changed never holds cache_mu_ while it
  // takes mu_.
  mutable std::shared_mutex cache_mu_;
  PodMirror mirror_;
  std::unordered_map<std::string, std::string> key_of_;             // pod -> its job key
  std::unordered_map<std::string, std::set<std::string>> pods_of_;  // job key -> its pods

  // What the controller remembers between reconciles (guarded by mu_).
  mutable std::mutex mu_;
  struct Done {
    Clock::time_point at;
    std::string seen;
  };
  std::unordered_map<std::string, Done> succeeded_;  // by action key
  // object key -> reason -> (words, when) of the last event written
  std::unordered_map<std::string, std::map<std::string, std::pair<std::string, Clock::time_point>>>
      said_;
  std::unordered_map<std::string, Clock::time_point> nudged_;
  std::unordered_set<std::string> ungated_;            // pods released by removing their gate
  std::unordered_map<std::string, Release> released_;  // by job
  // Until when a job's Queued events are paced: a plan whose words changed enqueues it only
  // past this (its reconcile asked to be requeued then).
  std::unordered_map<std::string, Clock::time_point> told_until_;
  std::map<std::string, std::vector<Planner::Rollback>> rollbacks_;  // by job
  std::shared_ptr<const Plan> last_plan_;  // the plan plan_changed last looked at
  // Admissions whose tidying (deletions, events) was left to their next reconcile: that one
  // runs every action, so a job is deferred once, never in a loop.
  std::unordered_set<std::string> tidy_next_;

  std::atomic<std::uint64_t> reconciled_{0}, done_{0}, failed_{0}, retried_{0}, given_up_{0},
      refused_{0};
  std::vector<std::thread> workers_;
};

}  // namespace allox::extender
