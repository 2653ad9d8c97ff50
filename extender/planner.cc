#include "extender/planner.h"

#include <cmath>

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

}  // namespace

Expected<std::unique_ptr<Planner>> Planner::create(const ExtenderConfig& config,
                                                   std::unique_ptr<SchedulingPolicy> policy,
                                                   Metrics& metrics, PlannerOptions options) {
  if (policy == nullptr) return Error{"extender: no scheduling policy"};
  if (!options.clock) options.clock = wall_clock_seconds;
  auto store = Store::open(config.database);
  if (!store) return store.error();
  auto stored = (*store)->load();
  if (!stored) return stored.error();
  std::unique_ptr<Planner> planner(
      new Planner(config, std::move(policy), std::move(*store), metrics, std::move(options)));
  if (planner->options_.inventory) planner->book_.set_inventory(*planner->options_.inventory);
  planner->book_.restore(*stored);
  return planner;
}

Planner::Planner(ExtenderConfig config, std::unique_ptr<SchedulingPolicy> policy,
                 std::unique_ptr<Store> store, Metrics& metrics, PlannerOptions options)
    : config_(std::move(config)),
      policy_(std::move(policy)),
      store_(std::move(store)),
      metrics_(metrics),
      options_(std::move(options)),
      book_(config_.devices, config_.default_job_seconds) {}

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
  {
    std::lock_guard lock(wake_mu_);
    wake_pending_ = true;
  }
  wake_cv_.notify_one();
}

void Planner::solve_now() {
  std::uint64_t version;
  {
    std::shared_lock lock(book_mu_);
    version = book_.version();
  }
  wake();
  plans_.wait_for(version, std::chrono::steady_clock::now() + std::chrono::seconds(30));
}

void Planner::loop() {
  auto tick = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(config_.tick));
  while (true) {
    solve_once();
    std::unique_lock lock(wake_mu_);
    wake_cv_.wait_for(lock, tick, [&] { return wake_pending_ || stopping_; });
    if (stopping_) return;
    wake_pending_ = false;
  }
}

void Planner::solve_once() {
  PlanInput input;
  std::vector<MachineSlot> slots;
  bool has_inventory;
  {
    std::shared_lock lock(book_mu_);
    has_inventory = book_.has_inventory();
    input = book_.snapshot(now());
    slots = book_.slots();
  }
  if (!has_inventory) return;
  auto begin = std::chrono::steady_clock::now();
  Expected<Decision> decision = policy_->decide(input.state);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  auto plan = std::make_shared<const Plan>(make_plan(input, decision, slots, seconds));
  // Metrics first: a filter answered from this plan may be followed at once by a /metrics read.
  metrics_.record_solve(seconds, input.state.queue.size(), input.state.running.size(),
                        current_shares(input.state));
  ready_.store(true, std::memory_order_release);  // before publishing: waiters see it ready
  plans_.publish(std::move(plan));
}

void Planner::set_inventory(const std::vector<NodeInventory>& nodes) {
  {
    std::unique_lock lock(book_mu_);
    book_.set_inventory(nodes);
  }
  wake();
}

Expected<std::uint64_t> Planner::register_variant(const JobVariant& variant) {
  auto unchanged = [&](const BookJob* job) {
    if (job == nullptr) return false;
    auto it = job->variants.find(pod_key(variant.pod));
    return it != job->variants.end() && it->second.device == variant.device &&
           it->second.time_hints == variant.time_hints &&
           it->second.iterations == variant.iterations && it->second.pod.uid == variant.pod.uid;
  };
  {
    std::shared_lock lock(book_mu_);
    if (unchanged(book_.job(variant.job_id))) return std::uint64_t{0};
  }
  std::unique_lock lock(book_mu_);
  const BookJob* job = book_.job(variant.job_id);
  if (unchanged(job)) return std::uint64_t{0};
  double arrival = now();
  if (job == nullptr) {
    JobRecord record;
    record.id = variant.job_id;
    record.user = variant.user;
    record.arrival = arrival;
    if (auto s = store_->record_arrival(record); !s) return s.error();
  }
  if (auto s = store_->record_variant(variant); !s) return s.error();
  book_.add_variant(variant, arrival);
  std::uint64_t version = book_.version();
  lock.unlock();
  wake();
  return version;
}

Expected<Planner::Started> Planner::record_start(const JobVariant& variant, const std::string& node,
                                                 int preferred_slot) {
  Started started;
  {
    std::unique_lock lock(book_mu_);
    auto record = book_.start(variant.job_id, variant, node, preferred_slot, now());
    if (!record) return record.error();
    if (auto s = store_->record_start(*record); !s) return s.error();
    started.record = *record;
    for (const auto& [key, v] : book_.job(variant.job_id)->variants) {
      if (key != pod_key(variant.pod)) started.unused_variants.push_back(v.pod);
    }
  }
  wake();
  return started;
}

Status Planner::complete(const std::string& job_id) {
  {
    std::unique_lock lock(book_mu_);
    const BookJob* job = book_.job(job_id);
    if (job == nullptr) return Error{"job " + job_id + " is unknown to allox"};
    if (job->record.phase != JobPhase::kRunning) {
      return Error{"job " + job_id + " is " + phase_name(job->record.phase) + ", not running"};
    }
    double finish = now();
    if (auto s = store_->record_finish(job_id, finish); !s) return s;
    if (auto r = book_.finish(job_id, finish); !r) return r.error();
  }
  wake();
  return OkStatus();
}

Status Planner::add_profile(const ProfileReport& report) {
  if (report.device.empty()) return Error{"device: missing"};
  if (report.iterations <= 0) return Error{"iterations: must be > 0"};
  if (!(report.seconds > 0) || !std::isfinite(report.seconds)) {
    return Error{"seconds: must be > 0"};
  }
  {
    std::unique_lock lock(book_mu_);
    const BookJob* job = book_.job(report.job_id);
    if (job == nullptr) return Error{"job " + report.job_id + " is unknown to allox"};
    if (job->iterations && report.iterations > *job->iterations &&
        report.kind == ProfileSample::Kind::kProgress) {
      return Error{"iterations: more than the job's " + std::to_string(*job->iterations)};
    }
    ProfileSample sample{report.job_id,     report.device,  report.kind,
                         report.iterations, report.seconds, now()};
    if (auto s = store_->record_profile(sample); !s) return s;
    book_.add_sample(sample);
  }
  wake();
  return OkStatus();
}

}  // namespace allox::extender
