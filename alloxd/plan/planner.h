// The job queue and its planner: the job book under its lock, made durable through the Store,
// and the thread that plans it (docs/design.md, "alloxd").
//
// Every change (a new variant, a start, a completion, a profile, a new inventory) is written to
// the Store before the book changes and before the call returns, then wakes the planner thread,
// except the latest plan being carried out: an admission as that plan starts the job, and the
// job's bind onto the machines its admission holds, leave the next plan as it would be, so they
// wake none (a bind stream re-plans on what it frees, not on every bind).
// The thread snapshots the book, runs the policy (fairness round + matcher) and publishes a
// Plan; it plans again after a change and at least every `tick`, except a plan that would
// repeat the latest one (plan_needed, plan.h: no change since it, or the tick with nothing
// queued), which is not solved. Readers take the latest plan
// by pointer and read the book under a shared lock (read()), so they never wait for a solve.
//
// Pacing: after a plan that took d seconds (snapshot to published), the next one
// starts no sooner than min(pace × d, max_pause) after it, however many changes arrive in
// between: they are all in that next plan. Under a stream of changes (a backlog binding at
// hundreds of pods a second, each bind and watch event a change) the thread then uses at most
// 1 / (1 + pace) of a core instead of re-solving the whole queue after every change, and a
// change waits at most max_pause longer for the plan that includes it. solve_now() never waits
// out a pause.
//
// The planner does not talk to kube-scheduler or the API server: the verbs (verbs.h) and the
// cluster side (cluster_poller.h) call it.
//
// Isolation: when the policy fails a round, each queued job is tried alone and the
// ones it cannot take are parked (Plan::parked, BookJob::parked); the round then goes on for
// everyone else. Bind intents restored from the store hold readiness back until
// reconcile_binds() has looked at them once (with no API server, there is nothing to wait for).
// Finished runs leave the book after retention.finished_seconds and the store after
// retention.history_seconds.
//
// Thread-safe: all public methods may be called concurrently.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "alloxd/config.h"
#include "alloxd/control/cluster_api.h"
#include "alloxd/plan/book_change.h"
#include "alloxd/plan/gang_reservation.h"
#include "alloxd/plan/plan.h"
#include "alloxd/store/job_book.h"
#include "alloxd/store/store.h"
#include "alloxd/web/bind_latency.h"
#include "alloxd/web/metrics.h"
#include "alloxd/web/timeline.h"
#include "fairness/policy.h"

namespace allox::extender {

struct PlannerOptions {
  // Unix seconds; tests substitute a fake clock. Unset: the wall clock.
  std::function<double()> clock;
  // A fixed node inventory (no API server); set before the stored jobs are restored.
  std::optional<std::vector<NodeInventory>> inventory;
  // How long (wall seconds, whatever `clock` says) an admitted job keeps its slot while its pod
  // is not yet bound: it waits on kube-scheduler, which runs on the wall's time.
  double admission_hold = 60;
  // The monotonic clock admission_hold is measured on. Tests substitute a stepped one; unset:
  // steady_clock.
  std::function<std::chrono::steady_clock::time_point()> steady_now;
  // The pause after each plan (see above). pace 0: plan again as soon as anything changed.
  double pace = 1;
  double max_pause = 0.2;  // seconds
  // With a controller (it admits each plan's starts): how long, at most, the next snapshot waits
  // after a plan for the controller to say it acted on it (plan_acted_on). A plan solved before
  // the last plan's admissions were in the book does not hold their machines, so it may start
  // other jobs on them. 0: no wait.
  double admissions_wait = 0;  // seconds
  // The planner thread's nice value (thread_priority.h): the request threads, the watch and the
  // controller go first when the cores are busy. Never raised above the process's: 0 keeps it.
  int nice = 10;
  // Tests: `joined` runs as a batch of changes queues behind a running group commit, with the
  // number of batches queued, under the queue's lock (it must not call the planner);
  // `before_commit` runs before a group's store transaction, with its number of batches, on the
  // committing caller's thread holding the writers' lock only.
  struct GroupHooks {
    std::function<void(std::size_t queued)> joined;
    std::function<void(std::size_t batches)> before_commit;
  };
  GroupHooks group_hooks;
};

// The pause after a plan that took `solve_seconds`: min(pace × solve_seconds, max_pause), and
// never negative.
std::chrono::steady_clock::duration plan_pause(double solve_seconds, double pace, double max_pause);

class Planner {
 public:
  // apply() changes the book this many at a time, each chunk under its own hold of the book's
  // lock: a /filter waits for one chunk at most, not for thousands of changes. Every change is
  // whole on its own, so a reader between chunks sees the book that the same changes applied
  // one after another would have left.
  static constexpr std::size_t kBookWriteChunk = 64;

  // Opens the store and restores the book from it. metrics must outlive the planner.
  static Expected<std::unique_ptr<Planner>> create(const ExtenderConfig& config,
                                                   std::unique_ptr<SchedulingPolicy> policy,
                                                   Metrics& metrics, PlannerOptions options = {});
  ~Planner();

  // Starts and stops the planner thread. stop() is idempotent; the destructor calls it.
  void start();
  void stop();

  // True once the node inventory is loaded and a first plan is published.
  bool ready() const;
  double now() const { return options_.clock(); }
  // The monotonic clock of admission holds (PlannerOptions::steady_now).
  std::chrono::steady_clock::time_point steady_now() const {
    return options_.steady_now ? options_.steady_now() : std::chrono::steady_clock::now();
  }
  const ExtenderConfig& config() const { return config_; }

  // The one write path of the book (the writers below are thin callers of it). Each change is
  // durable (as its kind says: book_change.h) before apply returns, and is in the book: an
  // outcome per change, in order. How a batch is applied, under one hold of the writers' lock:
  //   1. each change is checked against the book (a read; a start takes its machines in the
  //      book here, before the store, as only the book can choose them);
  //   2. one store transaction writes every change that must be written, each in a savepoint:
  //      a change whose write fails fails alone and the others are kept (when the commit itself
  //      fails, each is written again alone). The transaction is as durable as the strictest
  //      change in it;
  //   3. the book is changed, kBookWriteChunk changes per hold of its lock;
  //   4. the planner thread is woken once, when a change can alter the next plan: not for a
  //      change that changed nothing, a bind intent, nor the latest plan carried out (an
  //      admission as that plan starts the job, and the job's bind onto the machines its
  //      admission holds).
  // Group commit: concurrent callers (kube-scheduler's binds side by side, the watch, the
  // controller's workers) share these steps. A caller that finds a group being committed queues
  // its batch, and the next group takes every batch queued of the first one's class (synced:
  // a change of it is kSynced; or written), so a burst of callers costs one transaction (one
  // fsync when synced) and one hold of the writers' lock per group, not per call, and a written
  // caller (the watch) never waits for an fsync of its own. A batch is never split: it is as
  // durable as its strictest change. Within a group, a change to a job another change of the group
  // already changes (other than registering its pods) waits for the next group, which is as if the
  // changes had been applied one after the other. Never call it from inside a read() or a hook.
  std::vector<Status> apply(std::span<const BookChange> changes);

  // The writers: apply() with one change (or a batch of one kind), with what their callers need
  // back. `durability` (store.h): kWritten for what the API server also holds (the watch's pods,
  // a start whose bind intent is on disk), which then costs no fsync of its own.
  void set_inventory(const std::vector<NodeInventory>& nodes);
  // Registers a pod as a variant of its job (persisted when new or changed). Returns the book
  // version a plan must reach to include it (0 when nothing changed).
  Expected<std::uint64_t> register_variant(const JobVariant& variant,
                                           Durability durability = Durability::kSynced);
  // register_variant for each, in order, in one batch (the watch's burst of new pods); an
  // outcome per variant. A pod must appear at most once.
  std::vector<Status> register_variants(const std::vector<JobVariant>& variants,
                                        Durability durability = Durability::kSynced);
  struct Started {
    JobRecord record;
    std::vector<PodIdentity> unused_variants;  // the job's other variants, which never run
  };
  // Durable before the API server is asked to bind (store.h); dropped when it refuses.
  Status record_bind_intent(const BindIntent& intent);
  Status drop_bind_intent(std::int64_t job_row, const std::string& job_id);
  // Records that `variant` was bound to `node` (on `preferred_slot` when it is free there).
  // unused_variants holds only pods in variant's namespace: a job never spans tenants. Idempotent:
  // a start already recorded for this pod on this node (the watch saw the binding first, and
  // perhaps the pod's end too) is returned.
  Expected<Started> record_start(const JobVariant& variant, const std::string& node,
                                 int preferred_slot, Durability durability = Durability::kSynced);
  // The job's pod failed (or vanished) and its batch/v1 Job will run it again as another pod:
  // the job is queued again (JobBook::requeue), the same run, and its machines are free. The
  // replacement pod registers as its variant as any waiting pod does. A gang's members all
  // leave it (book and store) and it waits for all N of the Job's new pods.
  Status requeue(const std::string& job_id, Durability durability = Durability::kSynced);
  // The job finished (its pod succeeded, failed or vanished, or an operator said so).
  Status complete(const std::string& job_id, Durability durability = Durability::kSynced);
  // complete() for each (the watch's burst of ended pods), in one batch; an outcome per id. An
  // id given twice is completed once (the second is answered as the first).
  std::vector<Status> complete_all(const std::vector<std::string>& job_ids,
                                   Durability durability = Durability::kSynced);
  // An admin removes a queued job for good; its pods are refused from then on.
  Status remove(const std::string& job_id);
  // Settles bind intents from pods as the API server shows them: a pod with spec.nodeName was
  // bound there (the job starts), one without was not (the intent is dropped). With `complete`
  // (a full list, e.g. an informer's first list) an intent whose pod is absent is dropped too;
  // otherwise absent pods are left for a later call.
  void reconcile_binds(const std::vector<PodPlacement>& pods, bool complete);
  Status add_profile(const ProfileReport& report);
  // The pod is no longer a variant of its job (it was deleted); a waiting job left without
  // variants leaves the queue. The pod a job runs as is never removed. Written, not synced: the
  // API server is where the deletion lives (a re-list after a power cut shows it again).
  Status remove_variant(const PodIdentity& pod);
  // The plan starts `job_id` as the variant `pod_key` ("namespace/name") at `start`, and the
  // controller releases that pod: its other variants leave the book and the store, so no later
  // plan picks them (the controller deletes them), and an admission is a commitment: later
  // plans keep starting the job on that slot (held for it, as if it ran) until it binds or for
  // `admission_hold` seconds. A released pod is never turned away by a plan that changed its
  // mind in between (it would be parked by kube-scheduler, waiting for a nudge or 5 minutes).
  // Admitting again as before changes nothing and does not wake the planner, nor does an
  // admission as the latest plan starts the job (the next change's plan holds it). The siblings'
  // removal is written, not synced: the admission itself lives in memory only.
  Status admit(const std::string& job_id, const std::string& pod_key, const PlannedStart& start);
  struct AdmitRequest {
    std::string job_id;
    std::string pod_key;  // namespace/name
    PlannedStart start;
  };
  // admit() for each (a job at most once), in one batch; an outcome per admission.
  std::vector<Status> admit_all(const std::vector<AdmitRequest>& admissions);
  // Gangs (planner_gangs.cc, whose top says what the plan guarantees). The start of a gang
  // whose members were all bound (member pod key -> node), recorded in the book and the store
  // at once; a start already recorded as this one is returned.
  Expected<JobRecord> record_gang_start(const std::string& job_id,
                                        const std::map<std::string, std::string>& member_nodes,
                                        const DeviceType& device,
                                        Durability durability = Durability::kSynced);
  // The watch saw a member of a queued gang bound to `node`: once it has seen all N, the gang
  // starts (a bind alloxd made before a restart, or one it did not see the answer of). The
  // start's error, if it failed.
  std::optional<std::string> gang_member_bound(const JobVariant& member, const std::string& node);
  // A running gang's member ended (Succeeded, Failed or deleted): once every member has, the
  // gang is done and its units are freed together. A Failed member ends the gang: its members
  // still running are handed to the controller to delete (take_rollbacks, event GangFailed),
  // and the units go once they have ended, never while one of them still runs.
  // `retry`: the member Failed and its batch/v1 Job will make it again (model/job.h): once
  // every member has ended the gang is queued again, the same run (requeue), not done.
  Status gang_member_ended(const JobVariant& member, bool failed = false, bool retry = false);
  // A released gang did not bind whole (a partial bind, or its hold lapsed): it waits again,
  // admitted nowhere, with `note` as its reason.
  // Its members leave the book and the store at once (the pods' UIDs never rejoin: they are on
  // their way out), and are handed to the controller (take_rollbacks), which deletes them and
  // tells them why (event GangRolledBack).
  void roll_back_gang(const std::string& job_id, const std::string& note);
  struct Rollback {
    std::string job_id;
    std::string note;
    std::vector<PodIdentity> members;       // to delete
    std::string reason = "GangRolledBack";  // the event's
  };
  // The rollbacks since the last call (the controller's).
  std::vector<Rollback> take_rollbacks();
  // A queued gang found released with no admission (alloxd restarted between the release and
  // the binds): its members are already pinned (`member_nodes`: pod key -> the node its pin, or
  // its binding, names; every member of the gang), so the gang can only run there. When every
  // node still has its members' units free of running jobs (one device type of the gang's for
  // all), it is admitted again on them, its admission_hold starting now: the plans keep those
  // placements and a gang that does not bind in time is rolled back as any. Otherwise an error
  // saying which node lacks what (the caller rolls the gang back). A gang admitted already, or
  // no longer queued, is left as it is.
  Status adopt_gang(const std::string& job_id,
                    const std::map<std::string, std::string>& member_nodes);
  // Admitted gangs whose admission_hold lapsed before they started (the controller rolls them
  // back).
  std::vector<std::string> lapsed_gangs() const;
  // The variant ("namespace/name") `job_id` was admitted as, if it was.
  std::optional<std::string> admitted_as(const std::string& job_id) const;
  // Whether `job_id`, still queued, is admitted as `pod_key` for `start` and its hold has not
  // lapsed: admitting it so again would change nothing (a reconcile reads this instead of
  // queueing a no-op behind the next group commit).
  bool admission_stands(const std::string& job_id, const std::string& pod_key,
                        const PlannedStart& start) const;
  // When `job_id`'s admission lapses (its steady-clock time plus admission_hold), if it is
  // admitted: the controller looks at a released gang again then (lapsed_gangs).
  std::optional<std::chrono::steady_clock::time_point> hold_lapses_at(
      const std::string& job_id) const;
  // Runs on the planner thread after each plan is published. Set before start().
  void set_plan_listener(std::function<void()> listener) { plan_listener_ = std::move(listener); }

  // Reads. `read` runs under the book's shared lock and must not call back into the planner.
  template <typename Read>
  auto read(Read&& read) const {
    std::shared_lock lock(book_mu_);
    return read(static_cast<const JobBook&>(book_));
  }
  // As read(), for a variant that needs no registration: its job is in the book, and the variant
  // is in it as it is (or stays out: its job was admitted as another). Then `read` (returning
  // bool) runs under the same shared lock and its answer is returned; otherwise false, unread.
  template <typename Read>
  bool read_registered(const JobVariant& variant, Read&& read) const {
    std::shared_lock lock(book_mu_);
    if (book_.job(variant.job_id) == nullptr) return false;
    if (!admitted_as_another(variant) && book_.classify(variant) != JobBook::Change::kNone) {
      return false;
    }
    return read(static_cast<const JobBook&>(book_));
  }
  std::shared_ptr<const Plan> latest_plan() const { return plans_.latest(); }
  // The latest plan once it reflects book version `version`, or whatever is latest at deadline.
  std::shared_ptr<const Plan> wait_for_plan(std::uint64_t version,
                                            std::chrono::steady_clock::time_point deadline) const {
    return plans_.wait_for(version, deadline);
  }
  Expected<std::vector<UsageRecord>> usage_since(double since) const {
    return store_->usage_since(since);
  }
  // Every user's share as sampled at each solve since `from` (the status page's chart).
  std::vector<ShareSample> shares_since(double from) const { return share_history_.since(from); }

  // The book version of the latest change that freed capacity (a completion, a new inventory):
  // a plan older than that may still keep a job waiting that can start now (verbs.h).
  std::uint64_t freed_version() const { return freed_version_.load(std::memory_order_acquire); }

  // The controller acted on the plan of book version `version` (its admissions are in the
  // book, or it had none to make): the next snapshot need not wait for it any longer.
  void plan_acted_on(std::uint64_t version);

  // The book version of the latest admission (admit_all). A plan of an older book was solved
  // without that admission's hold and may give its machine to another job: the controller acts
  // on a newer plan only.
  std::uint64_t admitted_version() const {
    return admitted_version_.load(std::memory_order_acquire);
  }

  // Wakes the planner thread and waits until it has published a plan of the current book.
  void solve_now();
  // True while a change waits for a plan, or a plan is being made or handed to its listener.
  bool busy() const;
  // The two states below are announced by the planner thread as it enters them, so a caller
  // blocks on that announcement, never on a timer or a poll of busy(): the tests, which must
  // tell "not planned yet" from "held back" without sleeping through the pause. Each returns
  // whether the state was reached before `deadline`.
  // busy() is false: every change so far is in the published plan and the thread rests.
  bool wait_until_idle(std::chrono::steady_clock::time_point deadline) const;
  // The pause after the last plan is over and the thread holds the next plan back for the
  // controller (admissions_wait): a change made now waits for plan_acted_on (or solve_now, or
  // the bound).
  bool wait_until_holding_for_controller(std::chrono::steady_clock::time_point deadline) const;

 private:
  Planner(ExtenderConfig config, std::unique_ptr<SchedulingPolicy> policy,
          std::unique_ptr<Store> store, Metrics& metrics, PlannerOptions options);
  void loop();
  // Plans unless plan_needed (plan.h) says the plan would repeat the latest one.
  void solve_once(PlanCause cause);
  void wake();
  void prune_store_history();
  // Runs the policy; when it fails, parks the queued jobs it cannot take alone and runs again.
  Expected<Decision> decide_isolating(PlanInput& input);

  // Under book_mu_ (shared): a sibling of a job admitted as another variant stays out.
  bool admitted_as_another(const JobVariant& variant) const;
  // Under book_mu_ (shared): `job_id` is admitted as `pod_key` for `start` and the hold has not
  // lapsed, so admitting it so again changes nothing (the Admit change's "as before").
  bool admitted_as_before(const std::string& job_id, const std::string& pod_key,
                          const PlannedStart& start) const;

  // apply()'s outcome of one change, with what its writer returns besides.
  struct Applied {
    Status status = OkStatus();
    std::uint64_t version = 0;       // RegisterVariant: the book's version with it (0: no change)
    std::optional<Started> started;  // Start
    std::optional<JobRecord> gang;   // StartGang
    bool gang_ended = false;         // EndMember: every member has ended
    bool gang_again = false;         // EndMember: ... and its Job makes the gang again
  };
  // apply() with every outcome. The group commit: a caller's batch waits in group_queue_ while
  // another caller commits a group; whoever finds none running leads, and each leader hands the
  // lead to the queue's front when its group is committed.
  struct Batch;
  std::vector<Applied> apply_changes(std::span<const BookChange> changes);
  // Under write_mu_ (planner_apply.cc): steps 1-4 of apply() for the group's batches, again for
  // the changes that wait for the next group, until none does.
  void commit_group(const std::vector<Batch*>& group);
  // One change on its way through a group, and what each kind does at each step
  // (planner_steps.h, planner_steps.cc).
  struct Step;
  struct GroupView;
  struct Steps;
  std::mutex group_mu_;
  std::vector<Batch*> group_queue_;  // under group_mu_
  bool group_committing_ = false;    // under group_mu_: a leader holds the lead

  // Runs `section` on the calling thread holding book_mu_ exclusively, and returns its result.
  // apply()'s book step changes the book through it; a start's check changes it under the same
  // lock (only the book can choose the machines). Nothing outside apply() changes the book.
  template <typename Section>
  auto write_book(Section&& section) {
    std::unique_lock lock(book_mu_);
    return section();
  }
  // section(begin, end) for consecutive ranges of at most kBookWriteChunk of [0, count), each
  // range one write_book section: the batched writers' chunks.
  template <typename Section>
  void write_book_in_chunks(std::size_t count, Section&& section) {
    for (std::size_t begin = 0; begin < count; begin += kBookWriteChunk) {
      const std::size_t end = std::min(count, begin + kBookWriteChunk);
      write_book([&] { section(begin, end); });
    }
  }

  const ExtenderConfig config_;
  std::unique_ptr<SchedulingPolicy> policy_;  // used by the planner thread only
  std::unique_ptr<Store> store_;
  Metrics& metrics_;
  PlannerOptions options_;
  PlanBoard plans_;

  // The lock order, for every writer: write_mu_ (the writers, one at a time), then the store's
  // transaction (Store::batch), then book_mu_ (exclusive, kBookWriteChunk changes at a time).
  // A writer reads the book under a shared lock, writes the store holding no lock that readers
  // (/filter, the controller) or the planner's snapshot wait on (a SQLite commit can take tens
  // of ms on a loaded disk), and changes the book with nothing changed in between.
  std::mutex write_mu_;
  mutable std::shared_mutex book_mu_;
  JobBook book_;
  // job -> the variant it was admitted as (guarded by book_mu_); a sibling seen again later
  // (a status update before its deletion) does not re-enter the book.
  struct Admission {
    std::string pod_key;
    PlannedStart start;
    // When admitted, on the steady clock: the hold waits on kube-scheduler, whose pace is the
    // wall's whatever the planner's clock (a simulation's runs 100 times faster).
    std::chrono::steady_clock::time_point at;
  };
  std::unordered_map<std::string, Admission> admitted_;
  // The admitted jobs not known to have started (under book_mu_): the ones a plan holds a
  // machine for. admitted_ keeps a job until it finishes, tens of thousands of running jobs at
  // 5,000 nodes, which each plan's hold_admitted would otherwise walk. A start takes its job
  // out; each plan prunes the ids whose admission or queued phase is gone (drop_stale_holds).
  std::unordered_set<std::string> held_jobs_;
  void drop_stale_holds();  // under book_mu_ (exclusive)
  // Holds the admitted jobs' slots in `input` (run on the planner thread, under book_mu_ shared);
  // returns the starts they keep.
  std::vector<std::pair<std::string, PlannedStart>> hold_admitted(PlanInput& input,
                                                                  double now) const;
  // The gangs' starts and waits of one plan (planner_gangs.cc): placed on `input`'s idle slots,
  // which the policy's round then sees taken (under book_mu_ shared, after hold_admitted).
  struct GangPlan {
    std::vector<std::pair<std::string, PlannedStart>> starts;
    std::vector<std::pair<std::string, std::string>> waiting;  // job id, why it waits
    // The oldest waiting gang's units (gang_reservation.h), held in `input` from the round.
    std::optional<GangReservation> reservation;
  };
  GangPlan plan_gangs(PlanInput& input) const;
  static void add_gangs(const GangPlan& gangs, Plan& plan);
  // Members of queued gangs the watch saw bound (job -> pod key -> node), under book_mu_.
  std::unordered_map<std::string, std::map<std::string, std::string>> gang_bound_;
  // UIDs of rolled-back members (under book_mu_), and the rollbacks the controller has not
  // taken yet (under write_mu_).
  std::unordered_set<std::string> rolled_back_;
  // Gangs a Failed member ended whose Job runs them again (under write_mu_): requeued, not
  // completed, once every member has ended.
  std::unordered_set<std::string> gang_retries_;
  std::vector<Rollback> rollbacks_;
  CompletionToBind completion_to_bind_;  // under book_mu_

  // Under book_mu_, after the start: the job started on the very machines its admission held.
  bool held_as_started(const std::string& job_id, const JobRecord& record) const;
  ShareHistory share_history_;

  mutable std::mutex wake_mu_;
  std::condition_variable wake_cv_;
  bool wake_pending_ = false;
  bool urgent_ = false;         // solve_now() asked: no pause (guarded by wake_mu_)
  bool sleeping_ = false;       // the thread waits for a wake (guarded by wake_mu_)
  bool pausing_ = false;        // the thread waits out the pause after a plan (guarded by wake_mu_)
  std::uint64_t acted_on_ = 0;  // plan_acted_on's latest version (guarded by wake_mu_)
  bool holding_ = false;        // waits for plan_acted_on, the pause over (guarded by wake_mu_)
  // Notified when the thread comes to rest (sleeping_) or starts holding_: the waits above.
  // Not wake_cv_, whose notify_one must reach the planner thread.
  mutable std::condition_variable rest_cv_;
  bool stopping_ = false;
  std::thread thread_;
  std::atomic<bool> ready_{false};
  std::atomic<std::uint64_t> freed_version_{0};     // written under book_mu_
  std::atomic<std::uint64_t> admitted_version_{0};  // written under book_mu_
  std::function<void()> plan_listener_;
  std::atomic<bool> intents_seen_{true};  // false while restored bind intents await a first look
  std::chrono::steady_clock::time_point next_history_prune_{};
};

}  // namespace allox::extender
