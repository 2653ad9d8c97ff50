#include "alloxd/plan/planner.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/log.h"
#include "core/thread_priority.h"
#include "fairness/share.h"

namespace allox::extender {
namespace {

double wall_clock_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
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
      book_(config_.devices, config_.default_job_seconds, config_.throughputs) {
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
  PlanCause cause = PlanCause::kAsked;  // the first plan
  while (true) {
    prune_store_history();
    const auto began = std::chrono::steady_clock::now();
    solve_once(cause);
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
    cause = urgent_ ? PlanCause::kAsked : wake_pending_ ? PlanCause::kChange : PlanCause::kTick;
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
  std::vector<BookChange> parks;
  parks.reserve(culprits.size());
  for (auto& [id, reason] : culprits) parks.emplace_back(book::Park{id, std::move(reason)});
  (void)apply(parks);  // a job gone since is not parked, and not planned either
  {
    std::shared_lock lock(book_mu_);
    input = book_.snapshot(input.state.now);
  }
  return policy_->decide(input.state);
}

void Planner::solve_once(PlanCause cause) {
  PlanInput input;
  std::vector<std::pair<std::string, PlannedStart>> held;
  GangPlan gangs;
  bool has_inventory;
  {
    // Runs finished before the retention horizon are let go under the exclusive lock; the book
    // is then read under a shared lock only, so /filter and the controller read beside it and a
    // writer's store write runs beside it too (only its change to the book waits for the read).
    // The snapshot's time is taken once the read lock is held: every change in the book was
    // made before it, so no job arrived or started after the time the round plans at.
    const BookChange sweep = book::ForgetFinished{now() - config_.retention.finished_seconds};
    (void)apply({&sweep, 1});
    std::shared_lock lock(book_mu_);
    if (!plan_needed(cause, plans_.latest()->version, book_.version(), book_.queued_count())) {
      return;
    }
    has_inventory = book_.has_inventory();
    input = book_.snapshot(now());
    held = hold_admitted(input, input.state.now);
    gangs = plan_gangs(input);
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
  add_gangs(gangs, made);
  if (gangs.reservation) backfill(*gangs.reservation, *input.slots, input.state, made);
  {
    std::shared_lock lock(book_mu_);
    for (const std::string& id : book_.parked_jobs()) made.parked[id] = book_.job(id)->parked;
  }
  auto plan = std::make_shared<const Plan>(std::move(made));
  std::map<std::string, int> queued_per_user;
  for (const auto& queued : input.state.queue) ++queued_per_user[queued.job->user];
  // The policy's own (allox fills them in), or computed here: one pass over the running jobs.
  std::map<std::string, double> shares = decision && !decision->shares.empty()
                                             ? std::move(decision->shares)
                                             : current_shares(input.state);
  share_history_.record(now(), shares);
  // Metrics first: a filter answered from this plan may be followed at once by a /metrics read.
  metrics_.record_solve(seconds, input.state.queue.size(), input.state.running.size(),
                        std::move(shares), std::move(queued_per_user), cpu_seconds);
  ready_.store(true, std::memory_order_release);  // before publishing: waiters see it ready
  plans_.publish(std::move(plan));
  if (plan_listener_) plan_listener_();
}

void Planner::set_inventory(const std::vector<NodeInventory>& nodes) {
  const BookChange change = book::SetInventory{nodes};
  (void)apply({&change, 1});
}

}  // namespace allox::extender
