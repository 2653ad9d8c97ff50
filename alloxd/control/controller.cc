// The controller's machinery: the handlers that enqueue job keys, the workers that run
// reconcile(key) and its actions, and what it remembers of pods that left.
#include "alloxd/control/controller.h"

#include <algorithm>
#include <future>

#include "core/log.h"
#include "core/thread_priority.h"

namespace allox::extender {
namespace {

// The queue's key for the resync itself: no job has an empty key.
const std::string kResync;
// The key of "a new plan to act on": looked at on a worker, not on the planner's thread that
// publishes the plan (its admissions are a store transaction and book writes, and the planner
// would wait for them before its next snapshot). Not a job key: job ids hold no parentheses.
const std::string kPlanKey = "(plan)";

// A pod's job key: its allox job; a pod with none by its Job, else by itself.
std::string job_key_of(const std::string& pod_key, const ObservedPod& pod) {
  if (pod.variant) return pod.variant->job_id;
  if (pod.owner_job) return "Job:" + pod.owner_job->key();
  return pod_key;
}

bool same_words(const PlannedWait& a, const PlannedWait& b) {
  return a.position == b.position && a.queue_length == b.queue_length && a.note == b.note &&
         a.estimated_start == b.estimated_start;
}

}  // namespace

Controller::Controller(Planner& planner, ClusterFeed& feed, kube::KubeClient& client,
                       kube::EventRecorder& events, std::function<bool()> leading,
                       ControllerOptions options)
    : planner_(planner),
      feed_(feed),
      client_(client),
      events_(events),
      leading_(std::move(leading)),
      options_(std::move(options)),
      queue_({.backoff_initial = options_.backoff_initial,
              .backoff_max = options_.backoff_max,
              .capacity = options_.capacity,
              .now = options_.steady_now}) {}

Controller::~Controller() {
  stop();
}

void Controller::start() {
  if (!workers_.empty() || queue_.shutting_down()) return;
  queue_.add(kResync);  // the first look at every job, at once
  std::vector<std::future<void>> running;
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    std::promise<void> named;
    running.push_back(named.get_future());
    workers_.emplace_back([this, named = std::move(named)]() mutable {
      become_background_thread("allox-control");
      named.set_value();
      work();
    });
  }
  for (std::future<void>& worker : running) worker.wait();
}

void Controller::stop() {
  queue_.shutdown();
  for (std::thread& worker : workers_) worker.join();
  workers_.clear();
}

void Controller::work() {
  while (std::optional<WorkQueue::Item> item = queue_.get()) process(*item);
}

std::vector<std::string> Controller::drain() {
  std::vector<std::string> keys;
  while (std::optional<WorkQueue::Item> item = queue_.try_get()) {
    if (!item->key.empty() && item->key != kPlanKey) keys.push_back(item->key);
    process(*item);
  }
  return keys;
}

void Controller::process(const WorkQueue::Item& item) {
  const std::string& key = item.key;
  if (key == kPlanKey) {
    act_on_plan();
    queue_.done(key);
    return;
  }
  if (key == kResync) {
    resync();
    queue_.add_after(kResync, options_.resync);
    queue_.done(key);
    return;
  }
  Reconciliation result = reconcile(key);
  // A job taken as an admission is started before it is tidied: its gate's removal (or nudge)
  // runs now and the rest (the unused variant's deletion, events) is left to the key's next
  // reconcile, queued as an admission behind the ones waiting. So a plan's starts reach
  // kube-scheduler at one round trip each, not two, and the tidying still goes before every
  // background key (a backlog's thousands of Queued events would starve it there).
  bool tidy_now = false;
  {
    std::lock_guard lock(mu_);
    tidy_now = tidy_next_.erase(key) > 0;
  }
  const bool starts_first =
      item.priority == WorkPriority::kAdmit && !tidy_now &&
      std::any_of(result.actions.begin(), result.actions.end(), [](const ControlAction& a) {
        return a.priority == WorkPriority::kAdmit;
      });
  bool deferred = false;
  const ControlAction* failed = nullptr;
  Status failure = OkStatus();
  for (const ControlAction& action : result.actions) {
    if (starts_first && action.priority != WorkPriority::kAdmit) {
      deferred = true;
      continue;
    }
    if (leading_ && !leading_()) {  // the Lease went while reconciling: act no more
      ++refused_;
      continue;
    }
    Status status = action.run();
    if (status) {
      ++done_;
    } else {
      ++failed_;
      failed = &action;
      failure = std::move(status);
    }
  }
  if (failed == nullptr) {
    queue_.forget(key);
    if (deferred) {
      {
        std::lock_guard lock(mu_);
        tidy_next_.insert(key);
      }
      queue_.add(key, WorkPriority::kAdmit);
    }
  } else if (const int attempts = queue_.retries(key) + 1; attempts >= options_.max_attempts) {
    queue_.forget(key);
    ++given_up_;
    // Nobody waits on an action: this line is the only trace of one that gave up. The job is
    // looked at again when it changes, or at the resync.
    log_warn("action failed; giving up",
             {{"action", failed->key}, {"attempts", attempts}, {"error", failure.message()}});
  } else {
    ++retried_;
    queue_.add_rate_limited(key, item.priority);
    log_debug("action failed; retrying",
              {{"action", failed->key}, {"attempt", attempts}, {"error", failure.message()}});
  }
  // Never at once: a job due again now is one a drain would reconcile for ever.
  if (result.requeue_after) {
    queue_.add_after(
        key, std::max<Clock::duration>(*result.requeue_after, std::chrono::milliseconds(1)));
  }
  queue_.done(key);
}

bool Controller::wait_until_idle(Clock::time_point deadline) const {
  const auto left = deadline - Clock::now();
  return queue_.wait_idle(std::chrono::duration_cast<std::chrono::milliseconds>(
      std::max(Clock::duration::zero(), left)));
}

Controller::Counts Controller::counts() const {
  Counts counts;
  counts.reconciled = reconciled_.load();
  counts.done = done_.load();
  counts.failed = failed_.load();
  counts.retried = retried_.load();
  counts.given_up = given_up_.load();
  counts.refused = refused_.load();
  counts.queue = queue_.counts();
  return counts;
}

// ---- The handlers: the cache brought up to date, then job keys enqueued. ----

void Controller::index(const std::string& pod, std::vector<std::string>& keys) {
  auto it = mirror_.pods.find(pod);
  if (it == mirror_.pods.end()) return;
  const std::string key = job_key_of(pod, it->second);
  key_of_[pod] = key;
  pods_of_[key].insert(pod);
  keys.push_back(key);
}

bool Controller::reindexed(const std::string& pod, std::vector<std::string>& keys) {
  auto indexed = key_of_.find(pod);
  auto seen = mirror_.pods.find(pod);
  if (indexed == key_of_.end() || seen == mirror_.pods.end()) return false;
  if (job_key_of(pod, seen->second) != indexed->second) return false;
  keys.push_back(indexed->second);
  return true;
}

std::optional<std::string> Controller::unindex(const std::string& pod) {
  auto it = key_of_.find(pod);
  if (it == key_of_.end()) return std::nullopt;
  std::string key = std::move(it->second);
  key_of_.erase(it);
  if (auto pods = pods_of_.find(key); pods != pods_of_.end()) {
    pods->second.erase(pod);
    if (pods->second.empty()) pods_of_.erase(pods);
  }
  return key;
}

void Controller::pods_changed() {
  std::vector<std::string> keys, gone;
  {
    std::unique_lock cache(cache_mu_);
    std::vector<std::string> changed;
    gone = feed_.sync_pods(mirror_, &changed);
    // A job whose pod left is looked at too: it may have finished, or its sibling run.
    for (const std::string& pod : gone) {
      if (auto key = unindex(pod)) keys.push_back(std::move(*key));
    }
    for (const std::string& pod : changed) {
      if (reindexed(pod, keys)) continue;
      if (auto key = unindex(pod)) keys.push_back(std::move(*key));  // its job may have changed
      index(pod, keys);
    }
  }
  if (!gone.empty()) {
    std::lock_guard lock(mu_);
    for (const std::string& pod : gone) forget_pod(pod);
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (const std::string& key : keys) queue_.add(key);
}

// Forget what concerns a pod that is gone (nothing else remembers a pod the feed lost).
void Controller::forget_pod(const std::string& pod) {
  nudged_.erase(pod);
  ungated_.erase(pod);
  auto it = said_.find(pod);
  if (it == said_.end()) return;
  auto slash = pod.find('/');
  events_.forget({pod.substr(0, slash), pod.substr(slash + 1), ""});
  said_.erase(it);
}

std::shared_ptr<const Plan> Controller::acting_plan() const {
  // A plan solved before this controller's last admissions were in the book did not hold their
  // machines: it may start another job on one (or move a released job), so reconcile acts on
  // the plan it last looked at until the planner publishes one that holds them.
  std::shared_ptr<const Plan> latest = planner_.latest_plan();
  if (last_plan_ != nullptr && latest->version < planner_.admitted_version()) return last_plan_;
  return latest;
}

void Controller::plan_changed() { queue_.add(kPlanKey, WorkPriority::kAdmit); }

void Controller::act_on_plan() {
  std::vector<std::pair<std::string, WorkPriority>> keys;
  {
    std::lock_guard lock(mu_);
    std::shared_ptr<const Plan> latest = planner_.latest_plan();
    if (leading_ && !leading_()) {
      // What it knows may be stale by the time it leads: every started job is released (and,
      // when parked, nudged) then as if for the first time. A follower admits nothing.
      last_plan_.reset();
      released_.clear();
      planner_.plan_acted_on(latest->version);
      return;
    }
    take_rollbacks(keys);
    // A plan solved before this controller's last admissions were in the book is passed over
    // (acting_plan); so is the plan already looked at.
    if (latest != last_plan_ &&
        (last_plan_ == nullptr || latest->version >= planner_.admitted_version())) {
      diff_plan(*latest, last_plan_.get(), keys);
      last_plan_ = latest;
      admit_together(*latest, keys);
    }
    planner_.plan_acted_on(latest->version);
  }
  for (const auto& [key, priority] : keys) queue_.add(key, priority);
}

void Controller::admit_together(const Plan& plan,
                                const std::vector<std::pair<std::string, WorkPriority>>& keys) {
  std::vector<Planner::AdmitRequest> admissions;
  std::shared_lock cache(cache_mu_);
  planner_.read([&](const JobBook& book) {
    for (const auto& [id, priority] : keys) {
      auto start = plan.starts.find(id);
      if (priority != WorkPriority::kAdmit || start == plan.starts.end()) continue;
      Look look;
      look.key = id;
      if (auto pods = pods_of_.find(id); pods != pods_of_.end()) {
        for (const std::string& pod : pods->second) {
          if (auto seen = mirror_.pods.find(pod); seen != mirror_.pods.end()) {
            look.pods.insert(*seen);
          }
        }
      }
      std::string chosen = choose(look, book, start->second);
      if (!chosen.empty()) admissions.push_back({id, std::move(chosen), start->second});
    }
  });
  cache.unlock();
  // An admission refused here is refused again by its job's reconcile, which says why.
  if (!admissions.empty()) (void)planner_.admit_all(admissions);
}

void Controller::diff_plan(const Plan& plan, const Plan* before,
                           std::vector<std::pair<std::string, WorkPriority>>& keys) {
  const auto at = now();
  for (const auto& [id, start] : plan.starts) {
    auto released = released_.find(id);
    const bool same = before != nullptr && released != released_.end() &&
                      released->second.start == start && before->starts.count(id) &&
                      before->starts.at(id) == start;
    if (!same) keys.emplace_back(id, WorkPriority::kAdmit);
  }
  // Starts dropped: the released pod waits now (or is told why).
  for (const auto& [id, release] : released_) {
    if (!plan.starts.count(id)) keys.emplace_back(id, WorkPriority::kBackground);
  }
  if (before != nullptr) {
    for (const auto& [id, start] : before->starts) {
      if (!plan.starts.count(id) && !released_.count(id)) {
        keys.emplace_back(id, WorkPriority::kBackground);
      }
    }
  }
  for (const auto& [id, wait] : plan.waiting) {
    const PlannedWait* was = nullptr;
    if (before != nullptr) {
      if (auto it = before->waiting.find(id); it != before->waiting.end()) was = &it->second;
    }
    if (was != nullptr && same_words(*was, wait)) continue;
    // New words for a job told a moment ago wait for its requeue (requeue_event): it reads
    // the plan of then.
    auto paced = told_until_.find(id);
    if (was != nullptr && paced != told_until_.end() && at < paced->second) continue;
    keys.emplace_back(id, WorkPriority::kBackground);
  }
  for (const auto& [id, reason] : plan.parked) {
    if (before != nullptr) {
      auto it = before->parked.find(id);
      if (it != before->parked.end() && it->second == reason) continue;
    }
    keys.emplace_back(id, WorkPriority::kBackground);
  }
}

void Controller::take_rollbacks(std::vector<std::pair<std::string, WorkPriority>>& keys) {
  for (Planner::Rollback& rollback : planner_.take_rollbacks()) {
    keys.emplace_back(rollback.job_id, WorkPriority::kAdmit);
    rollbacks_[rollback.job_id].push_back(std::move(rollback));
  }
}

void Controller::leader_changed() {
  {
    std::lock_guard lock(mu_);
    last_plan_.reset();  // every start looked at again, as if for the first time
    released_.clear();
  }
  plan_changed();
  resync();
}

// A job reconcile can only act on through a pod still waiting to run: act_on leaves a bound or
// ended pod alone whatever the book says, admit needs a start in the plan and roll_back a gang
// (both enqueued below, whatever their pods). Such a job's pods change only through the watch,
// which enqueues it (pods_changed), so the resync has nothing to find there.
bool Controller::settled(const std::set<std::string>& pods) const {
  for (const std::string& pod : pods) {
    auto seen = mirror_.pods.find(pod);
    if (seen == mirror_.pods.end() || seen->second.pending()) return false;
    if (seen->second.variant && seen->second.variant->gang > 1) return false;
  }
  return true;
}

void Controller::resync() {
  std::vector<std::string> keys;
  {
    std::shared_lock cache(cache_mu_);
    keys.reserve(pods_of_.size());
    for (const auto& [key, pods] : pods_of_) {
      if (!settled(pods)) keys.push_back(key);
    }
  }
  {
    // A started job whose pods the cache does not show yet is still admitted when they come.
    std::lock_guard lock(mu_);
    // What expired goes with the resync's walk: an expired expectation only costs its memory.
    const auto at = now();
    for (auto it = succeeded_.begin(); it != succeeded_.end();) {
      it = at - it->second.at > options_.expectation ? succeeded_.erase(it) : std::next(it);
    }
    // Held while its starts are read: the planner frees a replaced plan no one holds.
    const std::shared_ptr<const Plan> plan = planner_.latest_plan();
    for (const auto& [id, start] : plan->starts) keys.push_back(id);
    for (const auto& [id, rollbacks] : rollbacks_) keys.push_back(id);
  }
  for (const std::string& key : keys) queue_.add(key);
}

}  // namespace allox::extender
