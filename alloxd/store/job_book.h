// The extender's live picture of the cluster: machine slots per node (from the inventory), the
// jobs it has seen with their device-variant pods, which job runs on which slot, and the
// profiling samples behind each estimate.
//
// A node offers machines per device type (8 GPUs, 2 CPU bundles); each machine slot runs one job.
// A pod needs k units of its device on one node (JobVariant::units): a job is queued until one
// of its variants is bound, then running on k slots of that node and device until done, when
// it frees all k (the state machine, with the call that makes each transition: job_state.h).
// The slots are the policy's units of one node (Machine::node, core/model.h).
// A queued job leaves the plan while it is parked, with the reason: the policy could not take
// it, or no node offers as many units as it needs on any device it has a variant for (parked
// for size: planned again once an inventory has a node that large), or while a bind of it is in
// doubt (a bind intent found at start-up, until reconciled). An admin may remove a queued job;
// its pods are refused from then on.
//
// Runs: a job id names one run at a time. When a pod of a finished or removed run is re-created
// (its name with a new UID), it starts a new run of that id; pods of the old run are refused,
// and so is a variant the run never saw (another name), which would run the job twice. Finished
// runs leave memory after the retention window (forget_finished); their history stays in the store.
// snapshot() turns the book into the scheduling policy's input (fairness/policy.h): one Machine
// per slot, named by its node (busy ones until their estimated finish), running jobs on all
// their slots, and the queued jobs with estimated times on the devices they have a variant pod
// for (a pod may offer several: a GPU of any model) that some node can hold, and Job::units the
// most any of those variants needs (a job whose variants need different counts is planned for
// the largest: it never gets fewer than it needs).
//
// Scale: a plan is taken of 50,000 jobs many times a second, so nothing a snapshot
// reads is recomputed per snapshot. Each change refreshes the one job it touches: its policy
// Job (estimates on the offered devices) is rebuilt into a new immutable value that snapshots
// share by pointer, and its estimate and last progress report are kept for the running time
// left. The book also keeps its active jobs in plan order (arrival, id), its finished runs in
// finish order (forget_finished pops the front), its parked jobs and the machines' names; a
// snapshot is then one pass over the slots and one over the active jobs, with no estimate,
// sort or string built. tests/alloxd/store/job_book_test.cc holds it equal to a snapshot computed
// from scratch after random sequences of changes.
//
// Not thread-safe: the owner (ExtenderService) guards it with a reader/writer lock; const
// methods may run concurrently.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "alloxd/config.h"
#include "alloxd/model/estimates.h"
#include "alloxd/model/pod.h"
#include "alloxd/store/job_state.h"
#include "alloxd/store/job_types.h"
#include "fairness/policy.h"

namespace allox::extender {

struct StoredState;  // store.h

// Hashes any string-like key as its characters, so a map keyed by std::string is looked up with
// a std::string_view (with std::equal_to<>) and no copy.
struct NameHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view name) const noexcept {
    return std::hash<std::string_view>{}(name);
  }
};

// The inventory's nodes by name with what their Node objects say (labels, taints, cordon);
// rebuilt by each set_inventory and shared with the snapshots.
using NodeFactsIndex = std::unordered_map<std::string, kube::NodeFacts, NameHash, std::equal_to<>>;

struct MachineSlot {
  std::string node;
  DeviceType device;
  int index = 0;            // among the node's machines of this device
  std::string running_job;  // empty when idle
};

struct BookJob {
  JobRecord record;
  std::map<std::string, JobVariant> variants;  // by "namespace/name"
  std::optional<std::int64_t> iterations;
  std::vector<ProfileSample> samples;
  int slot = -1;  // index into JobBook::slots() while running (the first of its units)
  // A running job of k > 1 units also holds these k − 1 slots of the same node and device.
  std::vector<int> other_slots;
  // Why the policy cannot take this queued job (empty when it can). Cleared when a variant
  // changes, so a fixed pod is tried again.
  std::string parked;
  // The park is the book's own: no node is large enough (see the top). Lifted by refresh once
  // one is, where a policy's park waits for a changed variant.
  bool parked_for_size = false;
  std::optional<BindIntent> intent;  // a bind whose outcome alloxd has not yet seen
  // A gang (record.gang > 1, job_book_gangs.cc): its variants are its members, all of which
  // run. While it runs, each member's node (pod key -> node; stored with the variant), and the
  // members whose pods ended. `gang_note` says why a queued gang waits that the plan cannot
  // say (it was rolled back); it keeps a gang whose pods were all deleted in the book.
  std::map<std::string, std::string> member_nodes;
  std::set<std::string> members_ended;
  std::string gang_note;
  bool is_gang() const { return record.gang > 1; }

  // Kept current by the book on every change of this job (never set them elsewhere): the
  // policy's view of the job (estimated times on the offered devices of its variants, and on
  // the device it runs on), shared with the snapshots that hold it; the estimate on the device
  // it runs on and its latest progress report there, for the time it has left.
  std::shared_ptr<const Job> planned;
  double run_estimate = 0;
  std::optional<ProfileSample> progress;
  // Its variants, for the plan to ask which nodes each may go to (JobVariant::may_go_to), shared
  // with the snapshots; null when no variant's pod states a constraint (each then goes wherever
  // a pod that states nothing may).
  std::shared_ptr<const std::vector<JobVariant>> placements;
};


// The policy's input, owning (sharing) the Job values its pointers refer to.
struct PlanInput {
  std::vector<std::shared_ptr<const Job>> jobs;
  ClusterState state;
  std::vector<std::string> unrunnable;  // queued jobs no machine in the cluster can run
  std::uint64_t version = 0;            // JobBook::version() it was taken at
  // The slots the machines are, as the inventory was (running_job left empty): a plan's
  // machine index names a node and device by it, whatever the inventory became since.
  std::shared_ptr<const std::vector<MachineSlot>> slots;
  // The nodes' facts, and BookJob::placements of each job in state.queue, index for index
  // (null where its variants state nothing): which node a start may take (plan.h).
  std::shared_ptr<const NodeFactsIndex> nodes;
  std::vector<std::shared_ptr<const std::vector<JobVariant>>> queue_placements;
};

struct NodeCapacity {
  int total = 0;
  int free = 0;
};


class JobBook {
 public:
  // throughputs: Gavel's table for pods that name allox.io/model (null: none).
  JobBook(DeviceMapping devices, double default_job_seconds,
          std::shared_ptr<const ThroughputTable> throughputs = nullptr);

  // Replaces the node inventory. Running jobs keep their slots when their node and device are
  // still offered (the one recorded in JobRecord::machine, then the lowest free ones up to its
  // units); a running job whose node disappeared keeps running without a slot.
  void set_inventory(const std::vector<NodeInventory>& nodes);
  bool has_inventory() const { return has_inventory_; }
  // The capacity index: every inventory node's machines of each device, kept up to date by
  // start() and finish(). Looked up by name without a copy, one hash lookup per call: the
  // verbs ask it for each of thousands of offered nodes per /filter.
  bool has_node(std::string_view node) const { return capacity_.count(node) > 0; }
  // A node's machines of `device`, total and free; {0, 0} when it has none of that device or is
  // not in the inventory (has_node tells them apart).
  NodeCapacity capacity(std::string_view node, std::string_view device) const;
  // capacity() and has_node() in one lookup: std::nullopt when the node is not in the inventory.
  std::optional<NodeCapacity> find_capacity(std::string_view node, std::string_view device) const;
  const std::vector<MachineSlot>& slots() const { return slots_; }
  // What the node's Node object says (labels, taints, cordon); null for a node not in the
  // inventory or of the config's fixed one.
  const kube::NodeFacts* node_facts(std::string_view node) const {
    auto found = node_facts_->find(node);
    return found == node_facts_->end() ? nullptr : &found->second;
  }
  const DeviceMapping& devices() const { return devices_; }
  std::size_t node_count() const { return nodes_.size(); }
  const std::map<std::string, NodeInventory>& nodes() const { return nodes_; }

  // What registering `variant` would change: nothing (a known pod as it was, or a pod of a
  // finished or removed run), a new run of its job id, or a new or changed variant of the run.
  enum class Change { kNone, kNewRun, kVariant };
  Change classify(const JobVariant& variant) const;
  // Starts a new run (record.row set by the store) with its first pod, replacing a finished or
  // removed run of the same id.
  void add_run(const JobRecord& record, const JobVariant& first);
  // Adds or updates a variant of the current run of variant.job_id (which must exist).
  void add_variant(const JobVariant& variant);
  // Restores state read from the store: runs by row (a later run of an id replaces an earlier
  // one), then the variants, samples and intents of the runs kept.
  // The pod is no longer a variant of its run (deleted, or its job was admitted as another
  // variant). A queued run left without variants leaves the book. Returns whether it was one.
  bool remove_variant(const std::string& namespace_name, const std::string& name);
  void restore(const StoredState& state);

  // Parks a queued job: the plan leaves it out until a variant changes.
  void park(const std::string& job_id, const std::string& reason);
  // Removes a queued job for good (an admin's DELETE); its pods are refused from now on.
  Expected<JobRecord> remove(const std::string& job_id, double now);
  // Drops runs that finished before `before` from memory. Returns how many went.
  std::size_t forget_finished(double before);
  // A restored bind intent was settled: it did not happen, or (via start) it did.
  void clear_intent(const std::string& job_id);

  const BookJob* job(const std::string& id) const;
  const BookJob* job_of_pod(const std::string& namespace_name, const std::string& name) const;
  const std::unordered_map<std::string, BookJob>& jobs() const { return jobs_; }
  // The queued jobs that are parked (BookJob::parked set), by id.
  const std::set<std::string>& parked_jobs() const { return parked_; }
  // Units of the inventory's largest node of each device type (core/model.h).
  const std::map<DeviceType, int>& largest_node_units() const { return largest_; }

  // The type `variant` runs as on `node`: the one of its types the node has machines of
  // (variant.device first), whether free or not; std::nullopt when the node has none of them.
  std::optional<DeviceType> device_on(std::string_view node, const JobVariant& variant) const;

  // Puts the job on pod_variant.units free slots of ONE of pod_variant's types on `node`, phase
  // running: the type of `preferred_slot` (the plan's) when it is one of them with enough free
  // there, else the first of its types (pod_variant.device first) with enough free; the
  // preferred slot first when it is one of them, then the lowest free. The record names that
  // type and the units. Errors name why it cannot (unknown job, already running, fewer free
  // machines of any of its types there than it needs); then nothing changes.
  Expected<JobRecord> start(const std::string& job_id, const JobVariant& pod_variant,
                            const std::string& node, int preferred_slot, double now);
  Expected<JobRecord> finish(const std::string& job_id, double now);
  // A gang's start (job_book_gangs.cc): every member (pod key -> node) on record.units free
  // slots of `device` on its node, all or none; phase running. Errors name the member and node
  // that cannot hold it (then nothing changes), a pod that is not a member, or a count of
  // members other than the gang's size.
  Expected<JobRecord> start_gang(const std::string& job_id,
                                 const std::map<std::string, std::string>& member_nodes,
                                 const DeviceType& device, double now);
  // A running gang's member ended; returns whether every member has.
  bool end_member(const std::string& job_id, const std::string& pod_key);
  // A queued gang goes back to waiting with `note` (a rollback), shown in reports.
  void note_gang(const std::string& job_id, const std::string& note);
  // Units of every device type in the inventory (a gang of N × k needs N × k of one type).
  const std::map<DeviceType, int>& total_units() const { return totals_; }
  // The running job's pod failed and its Job will run it again as another pod (model/job.h):
  // the job frees its slots and is queued again, the same run (no new run, nothing finished),
  // and the pod that ran is no longer a variant (a gang: none of its members is, and it waits
  // for all N again). Errors: unknown, or not running.
  Expected<JobRecord> requeue(const std::string& job_id);
  void add_sample(const ProfileSample& sample);

  TimeEstimate estimate(const BookJob& job, const DeviceType& device) const;
  // Estimated seconds left for a running job.
  double remaining(const BookJob& job, double now) const;

  // The policy's input. Parked jobs and jobs with a bind in doubt are left out; when `only` is
  // set, the queue holds that one job alone (to find which job a failed round cannot take).
  PlanInput snapshot(double now, const std::string* only = nullptr) const;
  std::size_t queued_count() const { return queued_; }
  std::size_t running_count() const { return running_; }
  // Bumped by every change that can alter a plan.
  std::uint64_t version() const { return version_; }
  // The planning input changed outside the book (an admission): plans must be made again.
  void touch() { ++version_; }

 private:
  // Plan order: arrival, then id (the policy's tie-breaks depend on it).
  struct ByArrival {
    bool operator()(const BookJob* a, const BookJob* b) const {
      return std::tie(a->record.arrival, a->record.id) < std::tie(b->record.arrival, b->record.id);
    }
  };
  struct ByFinish {
    bool operator()(const BookJob* a, const BookJob* b) const {
      return std::tie(a->record.finish, a->record.id) < std::tie(b->record.finish, b->record.id);
    }
  };
  // Recomputes the job's kept values and files it in the indexes its phase belongs to; call
  // after every change of it. unfile() takes it out of them; call before a change of its phase,
  // arrival, finish or id, and before it leaves jobs_.
  void refresh(BookJob& job);
  // Every slot the job holds made free again (its units back on their nodes).
  void free_slots(BookJob& job);
  void unfile(BookJob& job);
  void erase_job(std::unordered_map<std::string, BookJob>::iterator it);
  void recount_capacity();
  // Free slots of `device` on `node`, ascending.
  std::vector<int> free_slots(const std::string& node, const DeviceType& device) const;
  // Gives a running job its slots after an inventory change (set_inventory's two passes).
  void place_running(BookJob& job, bool recorded_slot_only);

  DeviceMapping devices_;
  double default_job_seconds_;
  std::shared_ptr<const ThroughputTable> throughputs_;
  bool has_inventory_ = false;
  std::map<std::string, NodeInventory> nodes_;
  std::vector<MachineSlot> slots_;
  // node -> its slots, ascending (set_inventory): a start looks at its node's few slots, not
  // at every slot of the cluster (50,000 name compares per bind at 5,000 nodes).
  std::unordered_map<std::string, std::vector<int>, NameHash, std::equal_to<>> node_slots_;
  // node -> device -> machines; one entry per inventory node, with no devices when it has none
  std::unordered_map<std::string, std::map<DeviceType, NodeCapacity, std::less<>>, NameHash,
                     std::equal_to<>>
      capacity_;
  std::unordered_map<std::string, BookJob> jobs_;
  std::unordered_map<std::string, std::string> pod_to_job_;  // "namespace/name" -> job id
  // Indexes into jobs_ (its nodes do not move): queued and running jobs in plan order, done
  // runs in finish order, parked queued jobs; and per slot its Machine as the policy names it.
  std::set<BookJob*, ByArrival> active_;
  std::set<BookJob*, ByFinish> finished_;
  std::set<std::string> parked_;
  std::vector<Machine> machines_;
  std::shared_ptr<const std::vector<MachineSlot>> layout_ =
      std::make_shared<const std::vector<MachineSlot>>();
  std::shared_ptr<const NodeFactsIndex> node_facts_ = std::make_shared<const NodeFactsIndex>();
  std::set<DeviceType> offered_;  // the device types the slots offer
  std::map<DeviceType, int> largest_;  // largest_node_units() of the slots
  std::map<DeviceType, int> totals_;   // total_units() of the slots
  // A gang's park for size (refresh): N × k above every offered type's units; "" when none.
  std::string gang_too_large(const BookJob& job) const;
  // place_running for a gang: each member's units on its node.
  void place_gang(BookJob& job);
  std::size_t queued_ = 0, running_ = 0;
  std::uint64_t version_ = 1;
};

}  // namespace allox::extender
