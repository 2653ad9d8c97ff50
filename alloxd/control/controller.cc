#include "alloxd/control/controller.h"

#include <algorithm>
#include <cmath>
#include <future>

#include "core/log.h"
#include "core/thread_priority.h"
#include "core/time_text.h"
#include "kube/pods.h"

namespace allox::extender {
namespace {

// A pod by "namespace/name"; another kind (a Job) as "Kind:namespace/name".
std::string key_of(const kube::ObjectRef& pod) {
  const std::string key = pod.namespace_name + "/" + pod.name;
  return pod.kind == "Pod" ? key : pod.kind + ":" + key;
}

}  // namespace

Controller::Controller(Planner& planner, ClusterFeed& feed, kube::KubeClient& client,
                       kube::EventRecorder& events, ActionQueue& actions,
                       std::function<bool()> leading, ControllerOptions options)
    : planner_(planner),
      feed_(feed),
      client_(client),
      events_(events),
      actions_(actions),
      leading_(std::move(leading)),
      options_(options) {}

Controller::~Controller() {
  stop();
}

void Controller::start() {
  if (thread_.joinable()) return;
  std::promise<void> named;
  std::future<void> running = named.get_future();
  thread_ = std::thread([this, named = std::move(named)]() mutable {
    become_background_thread("allox-control");
    named.set_value();
    loop();
  });
  running.wait();
}

void Controller::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Controller::poke() {
  bool notify;
  {
    std::lock_guard lock(mu_);
    // Every watch event pokes: only the one that finds the thread waiting for a poke wakes it
    // (in the pause it waits for stopping_ alone and reads dirty_ once the pause is over).
    notify = !dirty_ && !pausing_;
    dirty_ = true;
  }
  if (notify) cv_.notify_one();
}

void Controller::loop() {
  auto resume = Clock::now();
  while (true) {
    {
      std::unique_lock lock(mu_);
      passing_ = false;
      idle_cv_.notify_all();
      // The pause after the last pass: pokes meanwhile set dirty_ and are one pass after it.
      pausing_ = true;
      cv_.wait_until(lock, resume, [&] { return stopping_; });
      pausing_ = false;
      cv_.wait_for(lock, options_.resync, [&] { return dirty_ || stopping_; });
      if (stopping_) return;
      dirty_ = false;
      passing_ = true;
    }
    const auto began = Clock::now();
    reconcile();
    const auto ended = Clock::now();
    resume = ended + plan_pause(std::chrono::duration<double>(ended - began).count(), options_.pace,
                                std::chrono::duration<double>(options_.max_pause).count());
  }
}

bool Controller::busy() const {
  std::lock_guard lock(mu_);
  return dirty_ || passing_;
}

bool Controller::wait_until_idle(std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock lock(mu_);
  return idle_cv_.wait_until(lock, deadline, [&] { return !dirty_ && !passing_; });
}

void Controller::act(const std::string& key, const std::string& seen,
                     std::function<Status()> action, Clock::time_point now,
                     ActionPriority priority) {
  auto it = submitted_.find(key);
  if (it != submitted_.end() && it->second.seen == seen && now - it->second.at < options_.settle) {
    return;
  }
  {
    std::lock_guard lock(succeeded_mu_);
    auto done = succeeded_.find(key);
    if (done != succeeded_.end() && done->second.seen == seen &&
        now - done->second.at < options_.expectation) {
      return;  // done for this very version: the watch has not shown its effect yet
    }
  }
  auto expect = [this, key, seen, action = std::move(action)]() -> Status {
    Status status = action();
    if (status) {
      std::lock_guard lock(succeeded_mu_);
      succeeded_[key] = {this->now(), seen};
    }
    return status;
  };
  if (actions_.submit(key, std::move(expect), priority)) submitted_[key] = {now, seen};
}

void Controller::say(const kube::ObjectRef& pod, const std::string& type, const std::string& reason,
                     const std::string& message, Clock::time_point now) {
  auto& said = said_[key_of(pod)];
  auto it = said.find(reason);
  if (it != said.end() &&
      (it->second.first == message || now - it->second.second < options_.requeue_event)) {
    return;
  }
  if (actions_.submit("event " + key_of(pod) + " " + reason,
                      [this, pod, type, reason, message]() -> Status {
                        auto outcome = events_.record(pod, type, reason, message);
                        if (!outcome) return outcome.error();
                        return OkStatus();
                      })) {
    said[reason] = {message, now};
  }
}

void Controller::index(const std::string& key) {
  unindex(key);
  auto pod = mirror_.pods.find(key);
  if (pod == mirror_.pods.end() || !pod->second.variant) return;
  const std::string& job = pod->second.variant->job_id;
  job_of_[key] = job;
  pods_of_[job].insert(key);
}

void Controller::unindex(const std::string& key) {
  auto it = job_of_.find(key);
  if (it == job_of_.end()) return;
  auto pods = pods_of_.find(it->second);
  if (pods != pods_of_.end()) {
    pods->second.erase(key);
    if (pods->second.empty()) pods_of_.erase(pods);
  }
  job_of_.erase(it);
}

void Controller::make_quiet(const std::string& key, std::optional<Clock::time_point> until) {
  active_.erase(key);
  if (!until) return;  // quiet until it changes
  quiet_until_[key] = *until;
  due_.emplace(*until, key);
}

std::vector<std::string> Controller::last_visited() const {
  std::lock_guard pass(pass_mu_);
  return last_visited_;
}

bool Controller::last_was_full() const {
  std::lock_guard pass(pass_mu_);
  return last_full_;
}

void Controller::reconcile() {
  std::lock_guard lock(pass_mu_);
  if (leading_ && !leading_()) {
    // What it knows may be stale by the time it leads: a full pass then, and every started
    // job's pod released (and, when parked, nudged) as if for the first time.
    next_full_ = {};
    released_.clear();
    recheck_.clear();
    last_plan_.reset();
    planner_.plan_acted_on(planner_.latest_plan()->version);  // a follower admits nothing
    return;
  }
  const Pass pass = begin_pass();
  std::vector<const PodEntry*> visit = pods_to_visit(pass);
  const Admissions admissions = admit_starts(pass);
  roll_back_gangs(pass);
  if (!last_full_) {
    for (const std::string& id : admissions.rescanned) add_pods_of(id, visit);
    for (const std::string& id : admissions.dropped) add_pods_of(id, visit);
    std::sort(visit.begin(), visit.end(),
              [](const PodEntry* a, const PodEntry* b) { return a->first < b->first; });
    visit.erase(std::unique(visit.begin(), visit.end()), visit.end());
  }
  // 2. Each pod of allox's that waits: release it, delete it, or tell it why it waits. Each
  //    visited pod is classified again: active (looked at next pass) or quiet.
  const std::vector<PodFacts> facts = facts_of(visit);
  for (std::size_t at = 0; at < visit.size(); ++at) act_on(pass, *visit[at], facts[at]);
  end_pass(pass, visit);
}

Controller::Pass Controller::begin_pass() {
  Pass pass;
  pass.number = ++passes_;
  pass.now = now();
  pass.wall = planner_.now();
  pass.plan = planner_.latest_plan();
  pass.seen = pass.plan->version;  // acted on below, whether used or passed over
  // A plan solved before this controller's last admissions were in the book did not hold their
  // machines: it may start another job on one (or move a released job), so the pass acts on
  // the plan it last acted on until the planner publishes one that holds them.
  if (last_plan_ != nullptr && pass.plan->version < planner_.admitted_version()) {
    pass.plan = last_plan_;
  }
  // The feed's pods as of now: only the pods changed since the last pass are copied.
  pass.gone = feed_.sync_pods(mirror_, &pass.changed);
  // The jobs of the pods that left (their siblings are looked at: a job whose pod vanished may
  // have finished), then the index brought up to the mirror.
  for (const std::string& key : pass.gone) {
    if (auto it = job_of_.find(key); it != job_of_.end()) pass.gone_jobs.push_back(it->second);
    unindex(key);
    active_.erase(key);
    quiet_until_.erase(key);
  }
  for (const std::string& key : pass.changed) index(key);
  return pass;
}

void Controller::add_pod(const std::string& key, std::vector<const PodEntry*>& visit) const {
  if (auto it = mirror_.pods.find(key); it != mirror_.pods.end()) visit.push_back(&*it);
}

void Controller::add_pods_of(const std::string& job, std::vector<const PodEntry*>& visit) const {
  if (auto it = pods_of_.find(job); it != pods_of_.end()) {
    for (const std::string& key : it->second) add_pod(key, visit);
  }
}

std::vector<const Controller::PodEntry*> Controller::pods_to_visit(const Pass& pass) {
  // The pods this pass looks at, in the order of the mirror (as a full pass would act on them).
  std::vector<const PodEntry*> visit;
  last_full_ = pass.now >= next_full_;
  if (last_full_) {
    next_full_ = pass.now + options_.full_pass;
    active_.clear();
    quiet_until_.clear();
    due_.clear();
    visit.reserve(mirror_.pods.size());
    for (const PodEntry& entry : mirror_.pods) visit.push_back(&entry);
    return visit;
  }
  for (const std::string& key : active_) add_pod(key, visit);
  for (const std::string& key : pass.changed) {
    add_pod(key, visit);
    if (auto it = job_of_.find(key); it != job_of_.end()) add_pods_of(it->second, visit);
  }
  for (const std::string& job : pass.gone_jobs) add_pods_of(job, visit);
  while (!due_.empty() && due_.begin()->first <= pass.now) {
    auto it = quiet_until_.find(due_.begin()->second);
    if (it != quiet_until_.end() && it->second == due_.begin()->first) {
      add_pod(it->first, visit);
      quiet_until_.erase(it);
    }
    due_.erase(due_.begin());
  }
  return visit;
}

void Controller::end_pass(const Pass& pass, const std::vector<const PodEntry*>& visit) {
  last_visited_.clear();
  for (const PodEntry* entry : visit) last_visited_.push_back(entry->first);
  // Forget what concerns pods that are gone (nothing else here names a pod the feed lost).
  for (const std::string& key : pass.gone) {
    nudged_.erase(key);
    ungated_.erase(key);
    auto it = said_.find(key);
    if (it == said_.end()) continue;
    auto slash = key.find('/');
    events_.forget({key.substr(0, slash), key.substr(slash + 1), ""});
    said_.erase(it);
  }
  // What expired goes with the full pass's walk: an expired entry only costs its memory (act()
  // reads its time), while a walk of every action submitted in the last 20 s on each of a dozen
  // passes a second took 10-20% of the controller's time at 800 binds a second.
  if (!last_full_) return;
  for (auto it = submitted_.begin(); it != submitted_.end();) {
    it = pass.now - it->second.at > options_.settle * 4 ? submitted_.erase(it) : std::next(it);
  }
  std::lock_guard lock(succeeded_mu_);
  for (auto it = succeeded_.begin(); it != succeeded_.end();) {
    it = pass.now - it->second.at > options_.expectation ? succeeded_.erase(it) : std::next(it);
  }
}

std::optional<Controller::Clock::time_point> Controller::said_at(const std::string& key,
                                                                 const std::string& reason) const {
  auto pod = said_.find(key);
  if (pod == said_.end()) return std::nullopt;
  auto it = pod->second.find(reason);
  if (it == pod->second.end()) return std::nullopt;
  return it->second.second;
}

}  // namespace allox::extender
