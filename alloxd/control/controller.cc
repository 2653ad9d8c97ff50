#include "alloxd/control/controller.h"

#include <algorithm>
#include <cmath>
#include <future>

#include "core/log.h"
#include "core/time_text.h"
#include "kube/pods.h"
#include "core/thread_priority.h"

namespace allox::extender {
namespace {

std::string key_of(const kube::ObjectRef& pod) {
  return pod.namespace_name + "/" + pod.name;
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

// 1. Admit: a job the plan starts now keeps only the variant of the planned device that the
//    cluster still holds (the first by name when there are several). A full pass looks at every
//    start (and confirms every admission: one whose hold lapsed is made again); an incremental
//    one at the starts a new plan added or changed, the started jobs whose pods changed, and
//    those that had no pod to release. A start the plan dropped is forgotten and its job's pods
//    looked at (it waits now).
Controller::Admissions Controller::admit_starts(const Pass& pass) {
  const Plan& plan = *pass.plan;
  Admissions out;
  std::vector<std::string>& rescan = out.rescanned;
  if (last_full_) {
    rescan.reserve(plan.starts.size());
    for (const auto& [id, start] : plan.starts) rescan.push_back(id);
  } else {
    if (pass.plan != last_plan_) {
      for (const auto& [id, start] : plan.starts) {
        auto it = released_.find(id);
        if (it == released_.end() || it->second.start != start) rescan.push_back(id);
      }
    }
    auto if_started = [&](const std::string& id) {
      if (plan.starts.count(id)) rescan.push_back(id);
    };
    for (const std::string& id : recheck_) if_started(id);
    for (const std::string& key : pass.changed) {
      if (auto it = job_of_.find(key); it != job_of_.end()) if_started(it->second);
    }
    for (const std::string& job : pass.gone_jobs) if_started(job);
    std::sort(rescan.begin(), rescan.end());
    rescan.erase(std::unique(rescan.begin(), rescan.end()), rescan.end());
  }
  recheck_.clear();
  if (pass.plan != last_plan_) {
    for (auto it = released_.begin(); it != released_.end();) {
      if (plan.starts.count(it->first)) {
        ++it;
        continue;
      }
      out.dropped.push_back(it->first);
      it = released_.erase(it);
    }
  }
  last_plan_ = pass.plan;
  std::vector<Planner::AdmitRequest> admissions;
  planner_.read([&](const JobBook& book) {
    for (const std::string& id : rescan) {
      const PlannedStart& start = plan.starts.at(id);
      const std::string* chosen = nullptr;
      if (const BookJob* job = book.job(id);
          job != nullptr && job->record.phase == JobPhase::kQueued) {
        for (const auto& [key, variant] : job->variants) {
          auto pod = mirror_.pods.find(key);
          if (variant.device == start.device && pod != mirror_.pods.end() &&
              pod->second.pending()) {
            chosen = &key;
            break;
          }
        }
      }
      if (chosen == nullptr) {
        released_.erase(id);
        recheck_.insert(id);
        continue;
      }
      Release& release = released_[id];
      if (release.pod != *chosen || release.since == 0) release.since = pass.number;
      release.pod = *chosen;
      release.start = start;
      admissions.push_back({id, *chosen, start});
    }
  });
  const std::vector<Status> admitted = planner_.admit_all(admissions);
  planner_.plan_acted_on(pass.seen);
  for (std::size_t i = 0; i < admitted.size(); ++i) {
    if (!admitted[i]) {
      log_warn("controller: admission failed",
               {{"job", admissions[i].job_id}, {"error", admitted[i].message()}});
      recheck_.insert(admissions[i].job_id);  // tried again next pass
    }
  }
  return out;
}

// Where each visited waiting pod's job stands (after the admissions), in the order of `visit`.
std::vector<Controller::PodFacts> Controller::facts_of(
    const std::vector<const PodEntry*>& visit) const {
  std::vector<PodFacts> facts;
  planner_.read([&](const JobBook& book) {
    facts.reserve(visit.size());
    for (const PodEntry* entry : visit) {
      const auto& [key, pod] = *entry;
      PodFacts& f = facts.emplace_back();
      if (!pod.variant || !pod.pending()) continue;
      const BookJob* job = book.job(pod.variant->job_id);
      if (job == nullptr) continue;
      f.known = true;
      f.phase = job->record.phase;
      if (f.phase == JobPhase::kRunning) {
        f.runs_as = job->record.pod_namespace + "/" + job->record.pod_name;
      }
      f.in_book = f.phase != JobPhase::kDone && job->variants.count(key) > 0;
    }
  });
  return facts;
}

void Controller::act_on(const Pass& pass, const PodEntry& entry, const PodFacts& job) {
  const auto& [key, pod] = entry;
  quiet_until_.erase(key);
  active_.insert(key);
  if (!pod.variant || !pod.pending()) {
    make_quiet(key, std::nullopt);  // nothing to do until it changes
    return;
  }
  if (!job.known) return;  // not in the book yet
  if (job.phase == JobPhase::kRunning && job.runs_as == key) {
    // The pod the job runs as is never deleted, even before the watch shows it bound.
    make_quiet(key, std::nullopt);  // until the watch shows it bound
    return;
  }
  if (std::optional<std::string> why = why_delete(key, pod, job)) {
    if (!why->empty()) delete_variant(pass, key, pod, *why);
    return;
  }
  const std::string& id = pod.variant->job_id;
  auto start = pass.plan->starts.find(id);
  auto released = released_.find(id);
  if (start != pass.plan->starts.end() && released != released_.end() &&
      released->second.pod == key) {
    release(pass, key, pod, start->second, released->second);
    return;
  }
  if (auto wait = pass.plan->waiting.find(id); wait != pass.plan->waiting.end()) {
    tell_queued(pass, key, pod, wait->second);
  }
}

std::optional<std::string> Controller::why_delete(const std::string& key, const ObservedPod& pod,
                                                  const PodFacts& job) const {
  const std::string& id = pod.variant->job_id;
  if (job.phase == JobPhase::kRunning) return "job " + id + " runs as variant " + job.runs_as;
  if (job.phase == JobPhase::kDone) return "job " + id + " has finished";
  if (job.in_book) return std::nullopt;
  // Not (yet) a variant in the book: deleted only once its job was admitted as another (the
  // feed may show a new pod a moment before the book registers it); until then, left alone.
  const auto admitted = planner_.admitted_as(id);
  if (!admitted || *admitted == key) return std::string();
  return "job " + id + " runs as variant " + *admitted;
}

void Controller::delete_variant(const Pass& pass, const std::string& key, const ObservedPod& pod,
                                const std::string& why) {
  kube::ObjectRef ref = pod.ref;
  const std::string version = pod.resource_version;
  act(
      "delete " + key, version,
      [this, ref, version, why]() -> Status {
        // Only the pod as it was seen: one bound (or changed) since is looked at again.
        auto outcome = kube::delete_pod(client_, ref, version);
        if (!outcome) return outcome.error();
        if (*outcome == kube::DeleteOutcome::kDeleted) {
          (void)events_.record(ref, "Normal", "Deleted", why);
        }
        return OkStatus();
      },
      pass.now);
  make_quiet(key, pass.now + options_.settle);  // until the watch shows it gone (or changed)
}

void Controller::release(const Pass& pass, const std::string& key, const ObservedPod& pod,
                         const PlannedStart& start, const Release& released) {
  const auto now = pass.now;
  kube::ObjectRef ref = pod.ref;
  // Released: it rests until it changes (the watch shows it ungated, bound, parked), its start
  // changes, or (below) a nudge or a lost action is due.
  std::optional<Clock::time_point> rest_until;
  if (!pod.gates.empty() &&
      std::find(pod.gates.begin(), pod.gates.end(), kube::kQueueGate) != pod.gates.end()) {
    std::vector<std::string> gates = pod.gates;
    // Pinned to its planned node in the same patch: kube-scheduler then filters that one node.
    kube::NodePin pin{start.node, pod.affinity_room};
    act(
        "ungate " + key, pod.resource_version,
        [this, ref, gates, pin] {
          return kube::remove_gate(client_, ref, gates, kube::kQueueGate, pin);
        },
        now, ActionPriority::kAdmit);
    nudged_[key] = now;  // released: a nudge is due only if it still waits after renudge
    ungated_.insert(key);
    rest_until = now + options_.settle;  // looked at again if the removal was lost
  } else if (pod.turned_away) {
    // Parked by kube-scheduler (it said so in the pod's status): nudged the moment its plan
    // flips to "starts now" (it may have been released before, then parked when a later plan
    // let it wait), and again every renudge while it waits. An ungated pod it has not turned
    // away waits in its active queue and is tried without one: nudging it would be an API write
    // and a watch event on both sides for nothing (a backlog of thousands).
    auto last = nudged_.find(key);
    const bool flipped_now = released.since == pass.number;
    if (flipped_now || last == nudged_.end() || now - last->second >= options_.renudge) {
      std::string value = std::to_string(static_cast<long long>(pass.wall * 1000));
      if (actions_.submit(
              "nudge " + key, [this, ref, value] { return kube::nudge(client_, ref, value); },
              ActionPriority::kAdmit)) {
        nudged_[key] = now;
      }
    }
    last = nudged_.find(key);
    rest_until = last == nudged_.end() ? now : last->second + options_.renudge;
  }
  // On the gate path the gate's removal and kube-scheduler's own Scheduled event, moments later,
  // say all an Admitted event would: one API write per pod fewer. An ungated pod may wait in
  // kube-scheduler's back-off first, so it is told where it will start.
  if (!ungated_.contains(key)) {
    say(pod.ref, "Normal", "Admitted", "starts on " + start.node + " (" + start.device + ")", now);
  }
  make_quiet(key, rest_until);
}

void Controller::tell_queued(const Pass& pass, const std::string& key, const ObservedPod& pod,
                             const PlannedWait& wait) {
  const auto now = pass.now;
  // Its last Queued event is too recent to be followed by another: no words to build.
  if (auto at = said_at(key, "Queued"); at && now - *at < options_.requeue_event) {
    make_quiet(key, *at + options_.requeue_event);
    return;
  }
  std::string message = "position " + std::to_string(wait.position) + " of " +
                        std::to_string(wait.queue_length) + " for " + pod.variant->device;
  if (wait.estimated_start) {
    double in = std::max(0.0, *wait.estimated_start - pass.wall);
    message += ", est. start " + clock_label(*wait.estimated_start) + " (in " +
               std::to_string(static_cast<long long>(std::ceil(in / 60))) + " min)";
  }
  say(pod.ref, "Normal", "Queued", message, now);
  // Said now: quiet until another may follow. Not said (the same words, or the action queue
  // full): looked at again next pass, as a full pass would.
  if (auto at = said_at(key, "Queued"); at && now - *at < options_.requeue_event) {
    make_quiet(key, *at + options_.requeue_event);
  }
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
