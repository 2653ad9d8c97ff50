#include "extender/service.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "fairness/share.h"
#include "fairness/usage_window.h"

namespace allox::extender {
namespace {

double wall_clock_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string whole_seconds(double seconds) {
  return std::to_string(static_cast<long long>(std::llround(std::max(0.0, seconds)))) + "s";
}

std::string pod_key(const PodIdentity& pod) {
  return pod.namespace_name + "/" + pod.name;
}

}  // namespace

Expected<std::unique_ptr<ExtenderService>> ExtenderService::create(
    const ExtenderConfig& config, std::unique_ptr<SchedulingPolicy> policy,
    std::unique_ptr<ClusterApi> api, ServiceOptions options) {
  if (policy == nullptr) return Error{"extender: no scheduling policy"};
  if (!options.clock) options.clock = wall_clock_seconds;
  auto store = Store::open(config.database);
  if (!store) return store.error();
  auto stored = (*store)->load();
  if (!stored) return stored.error();
  std::unique_ptr<ExtenderService> service(new ExtenderService(
      config, std::move(policy), std::move(api), std::move(*store), std::move(options)));
  if (!config.apiserver || service->api_ == nullptr) service->book_.set_inventory(config.nodes);
  service->book_.restore(*stored);
  return service;
}

ExtenderService::ExtenderService(ExtenderConfig config, std::unique_ptr<SchedulingPolicy> policy,
                                 std::unique_ptr<ClusterApi> api, std::unique_ptr<Store> store,
                                 ServiceOptions options)
    : config_(std::move(config)),
      policy_(std::move(policy)),
      api_(std::move(api)),
      store_(std::move(store)),
      options_(std::move(options)),
      book_(config_.devices, config_.default_job_seconds) {}

ExtenderService::~ExtenderService() {
  stop();
}

void ExtenderService::start() {
  if (scheduler_.joinable()) return;
  scheduler_ = std::thread([this] { scheduler_loop(); });
}

void ExtenderService::stop() {
  {
    std::lock_guard lock(wake_mu_);
    stopping_ = true;
  }
  wake_cv_.notify_all();
  if (scheduler_.joinable()) scheduler_.join();
}

bool ExtenderService::ready() const {
  return ready_.load(std::memory_order_acquire);
}

void ExtenderService::wake() {
  {
    std::lock_guard lock(wake_mu_);
    wake_pending_ = true;
  }
  wake_cv_.notify_one();
}

void ExtenderService::solve_now() {
  std::uint64_t version;
  {
    std::shared_lock lock(book_mu_);
    version = book_.version();
  }
  wake();
  plans_.wait_for(version, std::chrono::steady_clock::now() + std::chrono::seconds(30));
}

void ExtenderService::scheduler_loop() {
  auto tick = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(config_.tick));
  auto next_refresh = std::chrono::steady_clock::now();
  while (true) {
    if (api_ != nullptr && config_.apiserver && std::chrono::steady_clock::now() >= next_refresh) {
      refresh_from_api();
      next_refresh = std::chrono::steady_clock::now() + tick;
    }
    solve_once();
    std::unique_lock lock(wake_mu_);
    wake_cv_.wait_for(lock, tick, [&] { return wake_pending_ || stopping_; });
    if (stopping_) return;
    wake_pending_ = false;
  }
}

void ExtenderService::refresh_from_api() {
  auto nodes = api_->list_nodes(config_.devices);
  if (nodes) {
    std::unique_lock lock(book_mu_);
    book_.set_inventory(*nodes);
  }
  // Completions from pod status: a bound pod that succeeded, failed or vanished is done.
  std::vector<std::pair<std::string, PodIdentity>> running;
  {
    std::shared_lock lock(book_mu_);
    for (const auto& [id, job] : book_.jobs()) {
      if (job.record.phase == JobPhase::kRunning) {
        running.push_back({id, {job.record.pod_name, job.record.pod_namespace, ""}});
      }
    }
  }
  for (const auto& [id, pod] : running) {
    auto phase = api_->pod_phase(pod.namespace_name, pod.name);
    if (phase && (*phase == "Succeeded" || *phase == "Failed" || *phase == "Gone")) {
      (void)complete(id);
    }
  }
}

void ExtenderService::solve_once() {
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
  ready_.store(true, std::memory_order_release);  // before publishing: waiters see it ready
  plans_.publish(std::move(plan));
  metrics_.record_solve(seconds, input.state.queue.size(), input.state.running.size(),
                        current_shares(input.state));
}

Expected<std::uint64_t> ExtenderService::register_variant(const JobVariant& variant) {
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

FilterResult ExtenderService::filter(const ExtenderArgs& args) {
  FilterResult result;
  result.node_names.emplace();  // nodeCacheCapable: always a list, never null
  if (args.node_objects) result.node_objects.emplace();
  const std::vector<std::string> candidates = args.candidates();
  auto variant = read_job_variant(args.pod, config_.devices);
  if (!variant) {
    for (const std::string& node : candidates) {
      result.failed_and_unresolvable_nodes[node] =
          "allox cannot read this pod: " + variant.message();
    }
    return result;
  }
  if (!ready()) {
    result.error = "allox is not ready: its node inventory is not loaded yet";
    return result;
  }
  auto needed = register_variant(*variant);
  if (!needed) {
    result.error = needed.message();
    return result;
  }
  std::shared_ptr<const Plan> plan = plans_.latest();
  if (plan->version < *needed) {
    plan = plans_.wait_for(*needed, std::chrono::steady_clock::now() + options_.first_plan_wait);
  }

  std::shared_lock lock(book_mu_);
  const BookJob* job = book_.job(variant->job_id);
  const std::string& id = variant->job_id;
  const std::string resource = config_.devices.resource_for(variant->device);

  // Why no node can take this variant, when that holds for every node.
  std::string never;
  if (job->record.phase == JobPhase::kRunning) {
    never = "job " + id + " already runs as pod " + job->record.pod_namespace + "/" +
            job->record.pod_name + " on " + job->record.node;
  } else if (job->record.phase == JobPhase::kDone) {
    never = "job " + id + " has finished";
  }
  std::string wait_reason;
  const PlannedStart* start = nullptr;
  if (auto it = plan->starts.find(id); it != plan->starts.end()) {
    start = &it->second;
    if (start->device != variant->device) {
      wait_reason = "job " + id + " starts on " + start->device + " (another variant); this " +
                    variant->device + " variant is not used";
      start = nullptr;
    }
  } else if (auto w = plan->waiting.find(id); w != plan->waiting.end()) {
    wait_reason = "queued: position " + std::to_string(w->second.position) + " of " +
                  std::to_string(w->second.queue_length);
    if (w->second.estimated_start) {
      wait_reason += ", est. start in " + whole_seconds(*w->second.estimated_start - now());
    }
  } else if (!plan->error.empty()) {
    result.error = "allox's scheduling round failed: " + plan->error;
    return result;
  } else {
    wait_reason = "queued: waiting for allox's next scheduling round";
  }

  // Nodes that may take the job now: the planned one, or, when kube-scheduler did not offer it
  // or it is full, any offered node with a free machine of the planned device.
  std::set<std::string> admitted;
  if (start != nullptr && never.empty()) {
    bool offered = std::find(candidates.begin(), candidates.end(), start->node) != candidates.end();
    if (offered && book_.capacity(start->node, start->device).free > 0) {
      admitted.insert(start->node);
    } else {
      for (const std::string& node : candidates) {
        if (book_.capacity(node, start->device).free > 0) admitted.insert(node);
      }
    }
  }

  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const std::string& node = candidates[i];
    if (!book_.has_node(node)) {
      result.failed_nodes[node] = "node " + node + " is not in allox's inventory";
      continue;
    }
    NodeCapacity capacity = book_.capacity(node, variant->device);
    if (capacity.total == 0) {
      result.failed_and_unresolvable_nodes[node] = "node has no " + resource + " capacity";
    } else if (!never.empty()) {
      result.failed_and_unresolvable_nodes[node] = never;
    } else if (admitted.count(node)) {
      result.node_names->push_back(node);
      if (args.node_objects) result.node_objects->push_back((*args.node_objects)[i]);
    } else if (start == nullptr) {
      result.failed_nodes[node] = wait_reason;
    } else if (capacity.free == 0) {
      result.failed_nodes[node] =
          "insufficient free " + resource + " (0 of " + std::to_string(capacity.total) + " free)";
    } else {
      result.failed_nodes[node] = "allox placed job " + id + " on " + start->node;
    }
  }
  return result;
}

std::vector<HostPriority> ExtenderService::prioritize(const ExtenderArgs& args) {
  std::vector<HostPriority> priorities;
  for (const std::string& node : args.candidates()) priorities.push_back({node, 0});
  auto variant = read_job_variant(args.pod, config_.devices);
  if (!variant) return priorities;
  std::shared_ptr<const Plan> plan = plans_.latest();
  auto it = plan->starts.find(variant->job_id);
  if (it == plan->starts.end() || it->second.device != variant->device) return priorities;
  for (HostPriority& p : priorities) {
    if (p.host == it->second.node) p.score = kMaxExtenderPriority;
  }
  return priorities;
}

BindingResult ExtenderService::bind(const BindingArgs& args) {
  std::lock_guard bind_lock(bind_mu_);
  JobVariant variant;
  int preferred_slot = -1;
  auto refuse = [&](std::string why) {
    metrics_.record_bind_failure();
    return BindingResult{std::move(why)};
  };
  {
    std::shared_lock lock(book_mu_);
    const BookJob* job = book_.job_of_pod(
        args.pod_namespace.empty() ? "default" : args.pod_namespace, args.pod_name);
    std::string pod = args.pod_namespace + "/" + args.pod_name;
    if (job == nullptr) return refuse("pod " + pod + " is unknown to allox: filter it first");
    if (job->record.phase != JobPhase::kQueued) {
      return refuse("job " + job->record.id + " is " + phase_name(job->record.phase) +
                    (job->record.phase == JobPhase::kRunning
                         ? " as pod " + job->record.pod_namespace + "/" + job->record.pod_name
                         : std::string()));
    }
    for (const auto& [key, v] : job->variants) {
      if (v.pod.name == args.pod_name &&
          v.pod.namespace_name == (args.pod_namespace.empty() ? "default" : args.pod_namespace)) {
        variant = v;
      }
    }
    if (!book_.has_node(args.node)) {
      return refuse("node " + args.node + " is not in allox's inventory");
    }
    NodeCapacity capacity = book_.capacity(args.node, variant.device);
    if (capacity.free == 0) {
      return refuse("node " + args.node + " has no free " +
                    config_.devices.resource_for(variant.device) + " (0 of " +
                    std::to_string(capacity.total) + " free)");
    }
    std::shared_ptr<const Plan> plan = plans_.latest();
    if (auto it = plan->starts.find(job->record.id);
        it != plan->starts.end() && it->second.node == args.node) {
      preferred_slot = it->second.slot;
    }
  }
  if (api_ != nullptr) {
    if (auto s = api_->bind(args); !s) return refuse(s.message());
  }
  std::vector<PodIdentity> unused_variants;
  {
    std::unique_lock lock(book_mu_);
    auto record = book_.start(variant.job_id, variant, args.node, preferred_slot, now());
    if (!record) return refuse(record.message());
    if (auto s = store_->record_start(*record); !s) return refuse(s.message());
    for (const auto& [key, v] : book_.job(variant.job_id)->variants) {
      if (key != pod_key(variant.pod)) unused_variants.push_back(v.pod);
    }
  }
  wake();
  if (api_ != nullptr) {
    // The other device variants will never run; removing them keeps them out of the queue.
    for (const PodIdentity& pod : unused_variants)
      (void)api_->delete_pod(pod.namespace_name, pod.name);
  }
  return BindingResult{};
}

PreemptionResult ExtenderService::preempt(const PreemptionArgs& args) {
  // allox jobs are non-preemptive once started: refuse any node whose victims include one.
  std::set<std::string> protected_uids;
  {
    std::shared_lock lock(book_mu_);
    for (const auto& [id, job] : book_.jobs()) {
      if (job.record.phase == JobPhase::kRunning && !job.record.pod_uid.empty()) {
        protected_uids.insert(job.record.pod_uid);
      }
    }
  }
  PreemptionResult result;
  for (const auto& [node, victims] : args.victims) {
    bool touches_allox_job =
        std::any_of(victims.pod_uids.begin(), victims.pod_uids.end(),
                    [&](const std::string& uid) { return protected_uids.count(uid) > 0; });
    if (!touches_allox_job) result.victims[node] = victims;
  }
  return result;
}

Status ExtenderService::complete(const std::string& job_id) {
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

Status ExtenderService::add_profile(const ProfileReport& report) {
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

FairnessReport ExtenderService::fairness() const {
  FairnessReport report;
  report.now = now();
  report.window = 3600;
  auto usage = store_->usage_since(report.now - report.window);
  std::shared_lock lock(book_mu_);
  std::map<DeviceType, int> machines;
  for (const MachineSlot& slot : book_.slots()) ++machines[slot.device];
  std::map<std::string, UserReport> users;
  std::map<std::string, double> jct_sum;
  for (const auto& [user, share] : current_shares(book_.snapshot(report.now).state)) {
    users[user].user = user;
    users[user].share = share;
  }
  for (const auto& [id, job] : book_.jobs()) {
    UserReport& u = users[job.record.user];
    u.user = job.record.user;
    switch (job.record.phase) {
      case JobPhase::kQueued:
        ++u.queued;
        break;
      case JobPhase::kRunning:
        ++u.running;
        break;
      case JobPhase::kDone:
        ++u.done;
        jct_sum[u.user] += job.record.finish - job.record.arrival;
        break;
    }
  }
  if (usage) {
    for (const UsageRecord& row : *usage) {
      double begin = std::max(row.start, report.now - report.window);
      double end = row.end.value_or(report.now);
      if (end <= begin) continue;
      UserReport& u = users[row.user];
      u.user = row.user;
      u.window_share += (end - begin) / report.window / std::max(1, machines[row.device]);
    }
  }
  std::vector<double> active_shares;
  for (auto& [name, u] : users) {
    if (u.done > 0) u.mean_jct = jct_sum[name] / u.done;
    if (u.queued + u.running > 0) active_shares.push_back(u.share);
    report.users.push_back(u);
  }
  report.jain_index = allox::jain_index(active_shares);
  return report;
}

JobView ExtenderService::view_of(const BookJob& job, const Plan& plan, double at) const {
  JobView view;
  view.record = job.record;
  for (const auto& [key, variant] : job.variants) {
    view.variants.push_back({key, variant.device, book_.estimate(job, variant.device)});
  }
  if (auto it = plan.starts.find(job.record.id);
      it != plan.starts.end() && job.record.phase == JobPhase::kQueued) {
    view.planned_start = it->second;
  }
  if (auto it = plan.waiting.find(job.record.id);
      it != plan.waiting.end() && job.record.phase == JobPhase::kQueued) {
    view.planned_wait = it->second;
  }
  if (job.record.phase == JobPhase::kRunning) view.remaining = book_.remaining(job, at);
  return view;
}

QueueView ExtenderService::queue() const {
  QueueView view;
  view.now = now();
  std::shared_ptr<const Plan> plan = plans_.latest();
  view.plan_solved_at = plan->solved_at;
  view.plan_solve_seconds = plan->solve_seconds;
  view.plan_error = plan->error;
  std::shared_lock lock(book_mu_);
  view.nodes = static_cast<int>(book_.node_count());
  for (const MachineSlot& slot : book_.slots()) {
    ++view.machines;
    if (slot.running_job.empty()) ++view.idle_machines;
  }
  for (const auto& [id, job] : book_.jobs()) {
    if (job.record.phase == JobPhase::kQueued) view.queued.push_back(view_of(job, *plan, view.now));
    if (job.record.phase == JobPhase::kRunning) {
      view.running.push_back(view_of(job, *plan, view.now));
    }
  }
  auto rank = [](const JobView& j) {
    if (j.planned_start) return 0;
    if (j.planned_wait) return j.planned_wait->position;
    return std::numeric_limits<int>::max();
  };
  std::sort(view.queued.begin(), view.queued.end(), [&](const JobView& a, const JobView& b) {
    return std::forward_as_tuple(rank(a), a.record.arrival, a.record.id) <
           std::forward_as_tuple(rank(b), b.record.arrival, b.record.id);
  });
  std::sort(view.running.begin(), view.running.end(), [](const JobView& a, const JobView& b) {
    return std::tie(a.record.start, a.record.id) < std::tie(b.record.start, b.record.id);
  });
  return view;
}

Expected<JobView> ExtenderService::job(const std::string& job_id) const {
  std::shared_ptr<const Plan> plan = plans_.latest();
  double at = now();
  std::shared_lock lock(book_mu_);
  const BookJob* job = book_.job(job_id);
  if (job == nullptr) return Error{"job " + job_id + " is unknown to allox"};
  return view_of(*job, *plan, at);
}

}  // namespace allox::extender
