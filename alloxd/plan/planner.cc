#include "alloxd/plan/planner.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "core/log.h"
#include "core/thread_priority.h"
#include "fairness/share.h"

namespace allox::extender {
namespace {

double wall_clock_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string pod_key(const PodIdentity& pod) {
  return pod.namespace_name + "/" + pod.name;
}

// apply(begin, end) for consecutive ranges of at most Planner::kBookWriteChunk of [0, count).
template <typename Apply>
void for_each_chunk(std::size_t count, Apply apply) {
  for (std::size_t begin = 0; begin < count; begin += Planner::kBookWriteChunk) {
    apply(begin, std::min(count, begin + Planner::kBookWriteChunk));
  }
}

}  // namespace

std::chrono::steady_clock::duration plan_pause(double solve_seconds, double pace,
                                               double max_pause) {
  const double pause = std::min(pace * solve_seconds, max_pause);
  if (!(pause > 0)) return std::chrono::steady_clock::duration::zero();
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(pause));
}

Expected<std::unique_ptr<Planner>> Planner::create(const ExtenderConfig& config,
                                                   std::unique_ptr<SchedulingPolicy> policy,
                                                   Metrics& metrics, PlannerOptions options) {
  if (policy == nullptr) return Error{"extender: no scheduling policy"};
  if (!options.clock) options.clock = wall_clock_seconds;
  auto store = Store::open(config.database);
  if (!store) return store.error();
  if (Status emptied = (*store)->empty_wal(); !emptied) {
    log_warn("planner: the WAL the last run left is copied by the store's thread instead",
             {{"error", emptied.message()}});
  }
  auto stored = (*store)->load(options.clock() - config.retention.finished_seconds);
  if (!stored) return stored.error();
  std::unique_ptr<Planner> planner(
      new Planner(config, std::move(policy), std::move(*store), metrics, std::move(options)));
  if (planner->options_.inventory) planner->book_.set_inventory(*planner->options_.inventory);
  planner->book_.restore(*stored);
  // With an API server, restored intents are looked at (reconcile_binds) before alloxd is ready.
  if (!planner->options_.inventory && !stored->intents.empty()) planner->intents_seen_ = false;
  return planner;
}

Planner::Planner(ExtenderConfig config, std::unique_ptr<SchedulingPolicy> policy,
                 std::unique_ptr<Store> store, Metrics& metrics, PlannerOptions options)
    : config_(std::move(config)),
      policy_(std::move(policy)),
      store_(std::move(store)),
      metrics_(metrics),
      options_(std::move(options)),
      book_(config_.devices, config_.default_job_seconds),
      book_writer_([] {
        name_this_thread("allox-book");
        // Refused (a real-time class the kernel does not grant): normal, and still correct.
        (void)enter_request_class(std::chrono::microseconds(0), kBookWriterPriority);
      }) {
  store_->observe_writes(
      [&metrics](double seconds, bool synced) { metrics.record_store_write(seconds, synced); });
}

Planner::~Planner() {
  stop();
}

void Planner::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { loop(); });
}

void Planner::stop() {
  {
    std::lock_guard lock(wake_mu_);
    stopping_ = true;
  }
  wake_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Planner::ready() const {
  return ready_.load(std::memory_order_acquire);
}

void Planner::wake() {
  bool notify;
  {
    std::lock_guard lock(wake_mu_);
    // Only the change that finds the thread waiting for one wakes it: in the pause after a
    // plan it waits for urgent_ alone and looks at wake_pending_ once the pause is over, and
    // a second change before it woke finds wake_pending_ set. Under hundreds of changes a
    // second each would otherwise be a context switch for nothing.
    notify = !wake_pending_ && !pausing_;
    wake_pending_ = true;
  }
  if (notify) wake_cv_.notify_one();
}

void Planner::solve_now() {
  std::uint64_t version;
  {
    std::shared_lock lock(book_mu_);
    version = book_.version();
  }
  {
    std::lock_guard lock(wake_mu_);
    wake_pending_ = true;
    urgent_ = true;
  }
  wake_cv_.notify_one();
  plans_.wait_for(version, std::chrono::steady_clock::now() + std::chrono::seconds(30));
}

void Planner::plan_acted_on(std::uint64_t version) {
  {
    std::lock_guard lock(wake_mu_);
    if (version <= acted_on_) return;
    acted_on_ = version;
  }
  wake_cv_.notify_all();
}

bool Planner::busy() const {
  std::lock_guard lock(wake_mu_);
  return wake_pending_ || !sleeping_;
}

bool Planner::wait_until_idle(std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock lock(wake_mu_);
  return rest_cv_.wait_until(lock, deadline, [&] { return sleeping_ && !wake_pending_; });
}

bool Planner::wait_until_holding_for_controller(
    std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock lock(wake_mu_);
  return rest_cv_.wait_until(lock, deadline, [&] { return holding_; });
}

void Planner::loop() {
  become_background_thread("allox-planner");
  if (options_.nice > this_thread_nice()) {  // lowered, never raised
    if (Status lowered = set_this_thread_nice(options_.nice); !lowered) {
      log_warn("planner: runs at the process's priority", {{"error", lowered.message()}});
    }
  }
  auto tick = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(config_.tick));
  while (true) {
    prune_store_history();
    const auto began = std::chrono::steady_clock::now();
    solve_once();
    const auto ended = std::chrono::steady_clock::now();
    const auto resume = ended + plan_pause(std::chrono::duration<double>(ended - began).count(),
                                           options_.pace, options_.max_pause);
    const std::uint64_t published = plans_.latest()->version;
    std::unique_lock lock(wake_mu_);
    sleeping_ = true;
    rest_cv_.notify_all();
    // The pause: changes made in it set wake_pending_ and are planned together after it.
    pausing_ = true;
    wake_cv_.wait_until(lock, resume, [&] { return urgent_ || stopping_; });
    if (options_.admissions_wait > 0) {
      // The next plan holds this one's admissions only if they are in the book before it.
      const auto admitted_by =
          ended + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(options_.admissions_wait));
      auto acted = [&] { return acted_on_ >= published || urgent_ || stopping_; };
      holding_ = !acted();
      if (holding_) rest_cv_.notify_all();
      wake_cv_.wait_until(lock, admitted_by, acted);
      holding_ = false;
    }
    pausing_ = false;
    wake_cv_.wait_for(lock, tick, [&] { return wake_pending_ || stopping_; });
    sleeping_ = false;
    if (stopping_) return;
    wake_pending_ = false;
    urgent_ = false;
  }
}

void Planner::prune_store_history() {
  const double at = now();
  auto steady = std::chrono::steady_clock::now();
  if (steady < next_history_prune_) return;
  next_history_prune_ = steady + std::chrono::minutes(1);
  if (auto pruned = store_->prune_history(at - config_.retention.history_seconds); !pruned) {
    log_warn("could not prune the store's history", {{"error", pruned.message()}});
  }
}

Expected<Decision> Planner::decide_isolating(PlanInput& input) {
  Expected<Decision> decision = policy_->decide(input.state);
  if (decision || input.state.queue.empty()) return decision;
  // Find the queued jobs the policy cannot take on their own (one pod must not stop the round
  // for everyone), park them with the policy's reason, and decide again.
  std::vector<std::pair<std::string, std::string>> culprits;
  for (const QueuedJob& queued : input.state.queue) {
    PlanInput alone;
    {
      std::shared_lock lock(book_mu_);
      alone = book_.snapshot(input.state.now, &queued.job->id);
    }
    if (alone.state.queue.empty()) continue;
    if (auto d = policy_->decide(alone.state); !d)
      culprits.push_back({queued.job->id, d.message()});
  }
  if (culprits.empty()) return decision;  // only the mix fails: every pod hears of it
  {
    std::lock_guard write(write_mu_);
    std::unique_lock lock(book_mu_);
    for (const auto& [id, reason] : culprits) {
      book_.park(id, reason);
      log_warn("job parked: the policy cannot take it", {{"job", id}, {"reason", reason}});
    }
    input = book_.snapshot(input.state.now);
  }
  return policy_->decide(input.state);
}

void Planner::solve_once() {
  PlanInput input;
  std::vector<std::pair<std::string, PlannedStart>> held;
  bool has_inventory;
  {
    // Runs finished before the retention horizon are let go under the exclusive lock; the book
    // is then read under a shared lock only, so /filter and the controller read beside it and a
    // writer's store write runs beside it too (only its change to the book waits for the read).
    // The snapshot's time is taken once the read lock is held: every change in the book was
    // made before it, so no job arrived or started after the time the round plans at.
    {
      std::lock_guard write(write_mu_);
      write_book([&] { book_.forget_finished(now() - config_.retention.finished_seconds); });
    }
    std::shared_lock lock(book_mu_);
    has_inventory = book_.has_inventory();
    input = book_.snapshot(now());
    held = hold_admitted(input, input.state.now);
  }
  // No plan before the inventory is loaded and restored bind intents were looked at once.
  if (!has_inventory || !intents_seen_.load()) return;
  auto begin = std::chrono::steady_clock::now();
  const std::optional<double> cpu_begin = this_thread_cpu_seconds();
  Expected<Decision> decision = decide_isolating(input);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  const std::optional<double> cpu_end = this_thread_cpu_seconds();
  const std::optional<double> cpu_seconds =
      cpu_begin && cpu_end ? std::optional<double>(*cpu_end - *cpu_begin) : std::nullopt;
  Plan made = make_plan(input, decision, *input.slots, seconds);
  for (const auto& [job_id, start] : held) {
    made.starts[job_id] = start;
    made.waiting.erase(job_id);
  }
  if (!held.empty()) index_starts(made);
  {
    std::shared_lock lock(book_mu_);
    for (const std::string& id : book_.parked_jobs()) made.parked[id] = book_.job(id)->parked;
  }
  auto plan = std::make_shared<const Plan>(std::move(made));
  std::map<std::string, int> queued_per_user;
  for (const auto& queued : input.state.queue) ++queued_per_user[queued.job->user];
  std::map<std::string, double> shares = current_shares(input.state);
  share_history_.record(now(), shares);
  // Metrics first: a filter answered from this plan may be followed at once by a /metrics read.
  metrics_.record_solve(seconds, input.state.queue.size(), input.state.running.size(),
                        std::move(shares), std::move(queued_per_user), cpu_seconds);
  ready_.store(true, std::memory_order_release);  // before publishing: waiters see it ready
  plans_.publish(std::move(plan));
  if (plan_listener_) plan_listener_();
}

void Planner::set_inventory(const std::vector<NodeInventory>& nodes) {
  {
    std::lock_guard write(write_mu_);
    std::unique_lock lock(book_mu_);
    book_.set_inventory(nodes);
    freed_version_.store(book_.version(), std::memory_order_release);
  }
  wake();
}

bool Planner::admitted_as_another(const JobVariant& variant) const {
  auto it = admitted_.find(variant.job_id);
  return it != admitted_.end() && it->second.pod_key != pod_key(variant.pod);
}

Expected<Planner::VariantChange> Planner::write_variant(
    const JobVariant& variant, const std::unordered_map<std::string, JobRecord>& new_runs,
    Durability durability) {
  VariantChange change;
  change.variant = &variant;
  if (auto run = new_runs.find(variant.job_id); run != new_runs.end()) {
    change.kind = JobBook::Change::kVariant;  // its run is new in this batch, not in the book yet
    change.record = run->second;
  } else {
    std::shared_lock lock(book_mu_);
    // A sibling of a job admitted as another variant (seen again before its deletion) stays out.
    if (admitted_as_another(variant)) return change;
    change.kind = book_.classify(variant);
    if (change.kind == JobBook::Change::kVariant) {
      change.record = book_.job(variant.job_id)->record;
    }
  }
  switch (change.kind) {
    case JobBook::Change::kNone:
      break;
    case JobBook::Change::kNewRun: {
      change.record.id = variant.job_id;
      change.record.user = variant.user;
      change.record.arrival = now();
      // The run's row and its first variant in one transaction: no job without its pod.
      auto row = store_->record_arrival(change.record, variant, durability);
      if (!row) return row.error();
      change.record.row = *row;
      break;
    }
    case JobBook::Change::kVariant:
      if (auto s = store_->record_variant(change.record.row, variant, durability); !s) {
        return s.error();
      }
      break;
  }
  return change;
}

void Planner::apply_variant(const VariantChange& change) {
  if (change.kind == JobBook::Change::kNewRun) {
    book_.add_run(change.record, *change.variant);
  } else if (change.kind == JobBook::Change::kVariant) {
    book_.add_variant(*change.variant);
  }
}

Expected<std::uint64_t> Planner::register_variant(const JobVariant& variant,
                                                  Durability durability) {
  {
    std::shared_lock lock(book_mu_);
    if (admitted_as_another(variant) || book_.classify(variant) == JobBook::Change::kNone) {
      return std::uint64_t{0};
    }
  }
  // A change. As the one writer (write_mu_) the book read here is the one the change applies
  // to; the store is written holding no lock of the book, so other filters, the controller and
  // the planner's snapshot never wait on this pod's SQLite commit.
  std::lock_guard write(write_mu_);
  auto change = write_variant(variant, {}, durability);
  if (!change) return change.error();
  if (change->kind == JobBook::Change::kNone) return std::uint64_t{0};
  const std::uint64_t version = write_book([&] {
    apply_variant(*change);
    return book_.version();
  });
  wake();
  return version;
}

std::vector<Status> Planner::register_variants(const std::vector<JobVariant>& variants,
                                               Durability durability) {
  std::vector<Status> outcomes(variants.size(), OkStatus());
  std::vector<VariantChange> changes;
  Status written = OkStatus();
  if (variants.size() > 1) {
    // As register_variant, for the whole batch in one store transaction, then the book.
    std::lock_guard write(write_mu_);
    std::unordered_map<std::string, JobRecord> new_runs;
    written = store_->batch(
        [&]() -> Status {
          for (const JobVariant& variant : variants) {
            auto change = write_variant(variant, new_runs, durability);
            if (!change) return change.error();
            if (change->kind == JobBook::Change::kNone) continue;
            if (change->kind == JobBook::Change::kNewRun) new_runs[variant.job_id] = change->record;
            changes.push_back(std::move(*change));
          }
          return OkStatus();
        },
        durability);
    if (written) {
      for_each_chunk(changes.size(), [&](std::size_t begin, std::size_t end) {
        write_book([&] {
          for (std::size_t i = begin; i < end; ++i) apply_variant(changes[i]);
        });
      });
    }
  }
  if (variants.size() > 1 && written) {
    if (!changes.empty()) wake();
    return outcomes;
  }
  // One variant, or a failed batch (nothing of it kept): each alone, outside write_mu_.
  for (std::size_t i = 0; i < variants.size(); ++i) {
    if (auto registered = register_variant(variants[i], durability); !registered) {
      outcomes[i] = registered.error();
    }
  }
  return outcomes;
}

Status Planner::record_bind_intent(const BindIntent& intent) {
  return store_->record_bind_intent(intent);
}

Status Planner::drop_bind_intent(std::int64_t job_row) {
  return store_->drop_bind_intent(job_row);
}

struct Planner::StartCall {
  const JobVariant& variant;
  const std::string& node;
  int preferred_slot;
  Durability durability;
  std::optional<Expected<Started>> result;  // written by the group's recorder
  bool recorded = false;                    // needs a store write (not a repeat)
  bool done = false;  // under start_group_mu_: result is final and the recorder let go of it
};

Expected<Planner::Started> Planner::record_start(const JobVariant& variant, const std::string& node,
                                                 int preferred_slot, Durability durability) {
  StartCall call{variant, node, preferred_slot, durability, std::nullopt};
  std::unique_lock lock(start_group_mu_);
  start_forming_.push_back(&call);
  while (!call.done) {
    if (start_recording_) {
      start_group_cv_.wait(lock);
      continue;
    }
    // Ours is in the forming group (no one took it, or it would be done by now).
    start_recording_ = true;
    std::vector<StartCall*> group;
    group.swap(start_forming_);
    lock.unlock();
    try {
      record_start_group(group);
    } catch (const std::exception& e) {
      // Every member must get an answer and the next group a recorder, whatever went wrong.
      for (StartCall* member : group) {
        if (!member->result)
          member->result = Error{"recording the start failed: " + std::string(e.what())};
      }
    }
    lock.lock();
    for (StartCall* member : group) member->done = true;  // its caller may return from here on
    start_recording_ = false;
    start_group_cv_.notify_all();
  }
  return std::move(*call.result);
}

void Planner::record_start_group(const std::vector<StartCall*>& group) {
  bool started_any = false;
  {
    std::lock_guard write(write_mu_);
    const double started_at = now();
    write_book([&] {
      for (StartCall* call : group) {
        const JobVariant& variant = call->variant;
        // Idempotent: the watch may report the binding (ClusterFeed) before /bind records it,
        // and a short job may even have finished by then: this very run is not a second start.
        if (const BookJob* job = book_.job(variant.job_id);
            job != nullptr &&
            (job->record.phase == JobPhase::kRunning || job->record.phase == JobPhase::kDone) &&
            job->record.node == call->node &&
            job->record.pod_namespace == variant.pod.namespace_name &&
            job->record.pod_name == variant.pod.name) {
          call->result = Started{job->record, {}};
          continue;
        }
        int slot = call->preferred_slot;
        if (auto admission = admitted_.find(variant.job_id);
            slot < 0 && admission != admitted_.end() &&
            admission->second.start.node == call->node &&
            admission->second.start.device == variant.device) {
          slot = admission->second.start.slot;  // the machine held for it (the watch names none)
        }
        auto record = book_.start(variant.job_id, variant, call->node, slot, started_at);
        if (!record) {
          call->result = record.error();
          continue;
        }
        Started started{*record, {}};
        if (auto waited = completion_to_bind_.bound(call->node, variant.device, started_at)) {
          metrics_.record_completion_to_bind(*waited);
        }
        for (const auto& [key, v] : book_.job(variant.job_id)->variants) {
          // Only in the bound pod's namespace: a job never spans tenants (alloxd/model/pod.h).
          if (key != pod_key(variant.pod) && v.pod.namespace_name == variant.pod.namespace_name) {
            started.unused_variants.push_back(v.pod);
          }
        }
        call->result = std::move(started);
        call->recorded = true;
        started_any = true;
      }
    });
    // The store after the book, outside the book's lock (still the one writer): a start needs
    // the book's slot, and /filter readers need not wait for a commit. One transaction for the
    // group, as durable as its most demanding call. A bind's intent is on disk already, so a
    // failure here is settled from spec.nodeName after a restart.
    if (started_any) {
      Durability durability = Durability::kWritten;
      for (const StartCall* call : group) {
        if (call->recorded && call->durability == Durability::kSynced) {
          durability = Durability::kSynced;
        }
      }
      const Status written = store_->batch(
          [&]() -> Status {
            for (const StartCall* call : group) {
              if (!call->recorded) continue;
              if (auto s = store_->record_start((*call->result)->record, durability); !s) return s;
            }
            return OkStatus();
          },
          durability);
      for (StartCall* call : group) {
        if (!call->recorded) continue;
        if (!written) {
          call->result = written.error();
          continue;
        }
        metrics_.record_time_to_bind(std::max(0.0, started_at - (*call->result)->record.arrival));
      }
    }
  }
  if (started_any) wake();
}

Status Planner::complete(const std::string& job_id, Durability durability) {
  {
    std::lock_guard write(write_mu_);
    std::string node;
    DeviceType device;
    std::int64_t row = 0;
    {
      std::shared_lock lock(book_mu_);
      const BookJob* job = book_.job(job_id);
      if (job == nullptr) return Error{"job " + job_id + " is unknown to allox"};
      if (job->record.phase != JobPhase::kRunning) {
        return Error{"job " + job_id + " is " + phase_name(job->record.phase) + ", not running"};
      }
      node = job->record.node;
      device = job->record.device;
      row = job->record.row;
    }
    // As the one writer: the store written holding no lock of the book's, then the book.
    double finish = now();
    if (auto s = store_->record_finish(row, finish, durability); !s) return s;
    Status finished = write_book([&]() -> Status {
      if (auto r = book_.finish(job_id, finish); !r) return r.error();
      const bool waiting = book_.queued_count() > 0;
      completion_to_bind_.freed(node, device, finish, waiting);
      admitted_.erase(job_id);
      freed_version_.store(book_.version(), std::memory_order_release);
      return OkStatus();
    });
    if (!finished) return finished;
  }
  wake();
  return OkStatus();
}

std::vector<Status> Planner::complete_all(const std::vector<std::string>& job_ids,
                                          Durability durability) {
  std::vector<Status> outcomes(job_ids.size(), OkStatus());
  if (job_ids.size() == 1) outcomes[0] = complete(job_ids[0], durability);
  if (job_ids.size() <= 1) return outcomes;
  struct Finish {
    std::size_t index;
    std::string node;
    DeviceType device;
    std::int64_t row;
  };
  std::vector<Finish> finishes;
  std::vector<std::pair<std::size_t, std::size_t>> repeats;  // (index, index of the first)
  Status written = OkStatus();
  {
    // As complete(), for the whole burst: the rows read as the one writer, the store written
    // holding no lock of the book's, then the book.
    std::lock_guard write(write_mu_);
    {
      std::shared_lock lock(book_mu_);
      std::unordered_map<std::string_view, std::size_t> first;
      for (std::size_t i = 0; i < job_ids.size(); ++i) {
        const std::string& job_id = job_ids[i];
        if (auto [at, fresh] = first.emplace(job_id, i); !fresh) {
          repeats.emplace_back(i, at->second);
          continue;
        }
        const BookJob* job = book_.job(job_id);
        if (job == nullptr) {
          outcomes[i] = Error{"job " + job_id + " is unknown to allox"};
        } else if (job->record.phase != JobPhase::kRunning) {
          outcomes[i] =
              Error{"job " + job_id + " is " + phase_name(job->record.phase) + ", not running"};
        } else {
          finishes.push_back({i, job->record.node, job->record.device, job->record.row});
        }
      }
    }
    if (finishes.empty()) {
      for (auto [i, original] : repeats) outcomes[i] = outcomes[original];
      return outcomes;
    }
    const double finish = now();
    written = store_->batch(
        [&]() -> Status {
          for (const Finish& f : finishes) {
            if (auto s = store_->record_finish(f.row, finish, durability); !s) return s;
          }
          return OkStatus();
        },
        durability);
    if (written) {
      for_each_chunk(finishes.size(), [&](std::size_t begin, std::size_t end) {
        write_book([&] {
          for (std::size_t i = begin; i < end; ++i) {
            const Finish& f = finishes[i];
            const std::string& job_id = job_ids[f.index];
            if (auto r = book_.finish(job_id, finish); !r) {
              outcomes[f.index] = r.error();
              continue;
            }
            completion_to_bind_.freed(f.node, f.device, finish, book_.queued_count() > 0);
            admitted_.erase(job_id);
          }
          freed_version_.store(book_.version(), std::memory_order_release);
        });
      });
    }
  }
  if (written) {
    wake();
  } else {
    // The burst's transaction kept nothing: each alone, so one bad row fails only itself.
    for (const Finish& f : finishes) outcomes[f.index] = complete(job_ids[f.index], durability);
  }
  for (auto [i, original] : repeats) outcomes[i] = outcomes[original];
  return outcomes;
}

Status Planner::remove_variant(const PodIdentity& pod) {
  {
    std::lock_guard write(write_mu_);
    std::unique_lock lock(book_mu_);
    const BookJob* job = book_.job_of_pod(pod.namespace_name, pod.name);
    if (job == nullptr) return OkStatus();
    if (job->record.phase != JobPhase::kQueued) return OkStatus();  // a run keeps its pods
    const std::string job_id = job->record.id;
    if (auto s = store_->forget_variant(pod, job->record.row, Durability::kWritten); !s) return s;
    book_.remove_variant(pod.namespace_name, pod.name);
    if (book_.job(job_id) == nullptr) admitted_.erase(job_id);
  }
  wake();
  return OkStatus();
}

std::optional<std::string> Planner::admitted_as(const std::string& job_id) const {
  std::shared_lock lock(book_mu_);
  auto it = admitted_.find(job_id);
  if (it == admitted_.end()) return std::nullopt;
  return it->second.pod_key;
}

std::vector<std::pair<std::string, PlannedStart>> Planner::hold_admitted(PlanInput& input,
                                                                         double now) const {
  std::vector<std::pair<std::string, PlannedStart>> held;
  ClusterState& state = input.state;
  if (admitted_.empty()) return held;
  // Thousands of admissions can wait for their binds while tens of thousands of jobs queue: the
  // queue is in plan order (arrival, id; JobBook::snapshot), so each admission is a binary
  // search, and one compaction follows, not an index of the whole queue per plan.
  auto in_order = [](const QueuedJob& q, const std::pair<double, std::string_view>& key) {
    return std::pair<double, std::string_view>(q.job->arrival, q.job->id) < key;
  };
  std::vector<bool> keep;
  auto hold = [&](const std::string& job_id, const QueuedJob& queued, std::size_t queue_index,
                  PlannedStart start, double seconds) {
    const auto slot = static_cast<std::size_t>(start.slot);
    state.idle[slot] = false;
    state.machines[slot].busy_until = now + seconds;
    state.running.push_back({queued.job, slot, now, now + seconds, 0});
    held.emplace_back(job_id, std::move(start));
    if (keep.empty()) keep.assign(state.queue.size(), true);
    keep[queue_index] = false;
  };
  // Admissions whose slot another start took: a bind that reached a node with no slot named
  // (the watch's, or one kube-scheduler sent elsewhere) takes the node's first free machine,
  // which may be the one held for this job. The node still has the machine the other start was
  // planned on, so the job keeps its node on that one (second pass, after every admission whose
  // slot is free kept it) rather than be planned afresh while its pod is already released.
  struct Displaced {
    const std::string* job_id;
    const QueuedJob* queued;
    std::size_t queue_index;
    const PlannedStart* start;
    double seconds;
  };
  std::vector<Displaced> displaced;
  const std::vector<MachineSlot>& slots = *input.slots;
  const auto wall = steady_now();
  for (const auto& [job_id, admission] : admitted_) {
    if (std::chrono::duration<double>(wall - admission.at).count() > options_.admission_hold) {
      continue;  // lapsed: planned afresh
    }
    const BookJob* job = book_.job(job_id);
    if (job == nullptr || job->record.phase != JobPhase::kQueued) continue;  // started or gone
    const std::pair<double, std::string_view> key(job->record.arrival, job_id);
    auto found = std::lower_bound(state.queue.begin(), state.queue.end(), key, in_order);
    if (found == state.queue.end() || found->job->id != job_id) continue;  // parked, in doubt
    const QueuedJob& queued = *found;
    const auto slot = static_cast<std::size_t>(admission.start.slot);
    if (admission.start.slot < 0 || slot >= state.machines.size() || slot >= slots.size() ||
        slots[slot].node != admission.start.node ||
        state.machines[slot].device != admission.start.device) {
      continue;  // the inventory changed under it: planned afresh
    }
    auto time = queued.job->time.find(admission.start.device);
    if (time == queued.job->time.end()) continue;
    const auto queue_index = static_cast<std::size_t>(found - state.queue.begin());
    if (state.idle[slot]) {
      hold(job_id, queued, queue_index, admission.start, time->second);
    } else {
      displaced.push_back({&job_id, &queued, queue_index, &admission.start, time->second});
    }
  }
  for (const Displaced& d : displaced) {
    // A node's machines of one device are adjacent slots (JobBook::set_inventory).
    const auto at = static_cast<std::size_t>(d.start->slot);
    auto same_machine_type = [&](std::size_t i) {
      return slots[i].node == d.start->node && slots[i].device == d.start->device;
    };
    std::size_t first = at;
    while (first > 0 && same_machine_type(first - 1)) --first;
    for (std::size_t i = first; i < slots.size() && same_machine_type(i); ++i) {
      if (!state.idle[i]) continue;
      PlannedStart moved = *d.start;
      moved.slot = static_cast<int>(i);
      hold(*d.job_id, *d.queued, d.queue_index, std::move(moved), d.seconds);
      break;
    }  // no free machine left there: planned afresh
  }
  if (held.empty()) return held;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < state.queue.size(); ++i) {
    if (keep[i]) state.queue[kept++] = std::move(state.queue[i]);
  }
  state.queue.resize(kept);
  return held;
}

Status Planner::admit(const std::string& job_id, const std::string& pod_key,
                      const PlannedStart& start) {
  return admit_all({{job_id, pod_key, start}}).front();
}

std::vector<Status> Planner::admit_all(const std::vector<AdmitRequest>& admissions) {
  std::vector<Status> outcomes(admissions.size(), OkStatus());
  struct Admitting {
    std::size_t index = 0;  // into admissions
    std::int64_t row = 0;
    std::vector<PodIdentity> siblings;
    std::size_t forgotten = 0;  // siblings out of the store
  };
  std::vector<Admitting> admitting;
  bool changed = false;
  {
    // As the one writer (write_mu_): read under a shared lock, write the store holding no lock
    // of the book's, then change the book (register_variant's pattern).
    std::lock_guard write(write_mu_);
    {
      std::shared_lock lock(book_mu_);
      const auto at = steady_now();
      for (std::size_t i = 0; i < admissions.size(); ++i) {
        const AdmitRequest& a = admissions[i];
        const BookJob* job = book_.job(a.job_id);
        if (job == nullptr) {
          outcomes[i] = Error{"job " + a.job_id + " is unknown to allox"};
          continue;
        }
        if (job->record.phase != JobPhase::kQueued) continue;
        if (!job->variants.count(a.pod_key)) {
          outcomes[i] = Error{"pod " + a.pod_key + " is not a variant of job " + a.job_id};
          continue;
        }
        auto known = admitted_.find(a.job_id);
        if (known != admitted_.end() && known->second.pod_key == a.pod_key &&
            known->second.start == a.start &&
            std::chrono::duration<double>(at - known->second.at).count() <=
                options_.admission_hold) {
          continue;  // as before: nothing to plan again
        }
        Admitting next;
        next.index = i;
        next.row = job->record.row;
        for (const auto& [key, variant] : job->variants) {
          if (key != a.pod_key) next.siblings.push_back(variant.pod);
        }
        admitting.push_back(std::move(next));
      }
    }
    if (admitting.empty()) return outcomes;
    // The siblings leave the store: all in one transaction, or (when it fails) one by one, each
    // admission stopping at its first failure as alone.
    auto forget = [this](Admitting& a) -> Status {
      for (; a.forgotten < a.siblings.size(); ++a.forgotten) {
        Status s = store_->forget_variant(a.siblings[a.forgotten], a.row, Durability::kWritten);
        if (!s) return s;
      }
      return OkStatus();
    };
    const Status together = store_->batch(
        [&]() -> Status {
          for (Admitting& a : admitting) {
            if (auto s = forget(a); !s) return s;
          }
          return OkStatus();
        },
        Durability::kWritten);
    if (!together) {
      for (Admitting& a : admitting) {
        a.forgotten = 0;  // the batch's writes were rolled back
        outcomes[a.index] = forget(a);
      }
    }
    const auto at = steady_now();
    for_each_chunk(admitting.size(), [&](std::size_t begin, std::size_t end) {
      write_book([&] {
        bool chunk_changed = false;
        for (std::size_t i = begin; i < end; ++i) {
          const Admitting& a = admitting[i];
          for (std::size_t k = 0; k < a.forgotten; ++k) {
            book_.remove_variant(a.siblings[k].namespace_name, a.siblings[k].name);
          }
          chunk_changed = chunk_changed || a.forgotten > 0;
          if (!outcomes[a.index]) continue;
          const AdmitRequest& request = admissions[a.index];
          Admission& admission = admitted_[request.job_id];
          // A hold moved to another machine of the same node (hold_admitted) is the same
          // commitment: its time runs from the first admission.
          const bool moved = admission.pod_key == request.pod_key &&
                             admission.start.node == request.start.node &&
                             admission.start.device == request.start.device;
          admission = {request.pod_key, request.start, moved ? admission.at : at};
          chunk_changed = true;
        }
        if (chunk_changed) {
          book_.touch();
          admitted_version_.store(book_.version(), std::memory_order_release);
        }
        changed = changed || chunk_changed;
      });
    });
  }
  if (changed) wake();
  return outcomes;
}

Status Planner::remove(const std::string& job_id) {
  {
    std::lock_guard write(write_mu_);
    std::unique_lock lock(book_mu_);
    const BookJob* job = book_.job(job_id);
    if (job == nullptr) return Error{"job " + job_id + " is unknown to allox"};
    const double at = now();
    // The book says why not (running, done, a bind in doubt) before anything is written.
    if (job->record.phase != JobPhase::kQueued || job->intent) {
      return book_.remove(job_id, at).error();
    }
    if (auto s = store_->record_removal(job->record.row, at); !s) return s;
    if (auto r = book_.remove(job_id, at); !r) return r.error();
  }
  wake();
  return OkStatus();
}

void Planner::reconcile_binds(const std::vector<PodPlacement>& pods, bool complete) {
  std::map<std::string, const PodPlacement*> by_pod;
  for (const PodPlacement& pod : pods) by_pod[pod_key(pod.pod)] = &pod;
  {
    std::lock_guard write(write_mu_);
    std::unique_lock lock(book_mu_);
    std::vector<BindIntent> intents;
    for (const auto& [id, job] : book_.jobs()) {
      if (job.intent) intents.push_back(*job.intent);
    }
    for (const BindIntent& intent : intents) {
      auto it = by_pod.find(pod_key(intent.pod));
      if (it == by_pod.end() && !complete) continue;
      const PodPlacement* seen = it == by_pod.end() ? nullptr : it->second;
      bool bound =
          seen != nullptr && seen->exists && !seen->node_name.empty() &&
          (intent.pod.uid.empty() || seen->pod.uid.empty() || seen->pod.uid == intent.pod.uid);
      const BookJob* job = book_.job(intent.job_id);
      auto variant = job->variants.find(pod_key(intent.pod));
      if (variant == job->variants.end()) bound = false;  // nothing left to start
      if (bound) {
        auto record = book_.start(intent.job_id, variant->second, seen->node_name, -1, now());
        if (record) {
          // Not durable: the store keeps the intent, and the next start-up settles it again.
          (void)store_->record_start(*record);
          continue;
        }
        // The node left the inventory or is full in allox's view: the pod runs there anyway,
        // but allox cannot account for it; the job stays queued rather than double-booked.
      }
      if (store_->drop_bind_intent(intent.job_row)) book_.clear_intent(intent.job_id);
    }
  }
  intents_seen_ = true;
  wake();
}

Status Planner::add_profile(const ProfileReport& report) {
  if (report.device.empty()) return Error{"device: missing"};
  if (report.iterations <= 0) return Error{"iterations: must be > 0"};
  if (!(report.seconds >= kMinJobSeconds && report.seconds <= kMaxJobSeconds)) {
    return Error{"seconds: must be within 0.001 to 2592000 (30 days)"};
  }
  {
    std::lock_guard write(write_mu_);
    std::unique_lock lock(book_mu_);
    const BookJob* job = book_.job(report.job_id);
    if (job == nullptr) return Error{"job " + report.job_id + " is unknown to allox"};
    if (job->iterations && report.iterations > *job->iterations &&
        report.kind == ProfileSample::Kind::kProgress) {
      return Error{"iterations: more than the job's " + std::to_string(*job->iterations)};
    }
    ProfileSample sample{report.job_id,  report.device, report.kind,    report.iterations,
                         report.seconds, now(),         job->record.row};
    if (auto s = store_->record_profile(sample); !s) return s;
    book_.add_sample(sample);
  }
  wake();
  return OkStatus();
}

}  // namespace allox::extender
