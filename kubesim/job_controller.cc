#include "kubesim/job_controller.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "core/thread_priority.h"
#include "kubesim/attachment.h"
#include "kubesim/cluster_threads.h"

namespace allox::emulator {

using nlohmann::json;

namespace {

constexpr const char* kIndexKey = "batch.kubernetes.io/job-completion-index";

std::string text(const json& object, const char* a, const char* b) {
  auto outer = object.find(a);
  if (outer == object.end() || !outer->is_object()) return "";
  auto inner = outer->find(b);
  return inner != outer->end() && inner->is_string() ? inner->get<std::string>() : "";
}

long long number(const json& spec, const char* key, long long otherwise) {
  auto it = spec.find(key);
  return it != spec.end() && it->is_number_integer() ? it->get<long long>() : otherwise;
}

// A pod's completion index, or -1.
int index_of(const json& pod) {
  auto meta = pod.find("metadata");
  if (meta == pod.end() || !meta->is_object()) return -1;
  auto annotations = meta->find("annotations");
  if (annotations == meta->end() || !annotations->is_object()) return -1;
  auto value = annotations->find(kIndexKey);
  if (value == annotations->end() || !value->is_string()) return -1;
  try {
    return std::stoi(value->get<std::string>());
  } catch (const std::exception&) {
    return -1;
  }
}

bool has_condition(const json& job, const char* type) {
  const json& status = job.value("status", json::object());
  for (const json& c : status.value("conditions", json::array())) {
    if (c.value("type", "") == type && c.value("status", "") == "True") return true;
  }
  return false;
}

// "0-2,4": the succeeded indexes as kube writes status.completedIndexes.
std::string index_ranges(const std::set<int>& indexes) {
  std::string out;
  for (auto it = indexes.begin(); it != indexes.end();) {
    int first = *it, last = *it;
    for (++it; it != indexes.end() && *it == last + 1; ++it) last = *it;
    if (!out.empty()) out += ",";
    out += std::to_string(first);
    if (last > first) out += "-" + std::to_string(last);
  }
  return out;
}

// kube's pod failure back-off before a failed pod is replaced: 10 s, doubled per failure, 6 min.
double failure_backoff(int failures) {
  if (failures <= 0) return 0;
  return std::min(360.0, 10.0 * std::pow(2.0, std::min(failures - 1, 10)));
}

}  // namespace

struct JobController::Impl {
  ApiObjects& objects;
  const SimClock& clock;

  // What the controller remembers of one Job (by uid), on its thread only.
  struct Tracking {
    std::set<std::string> expected;         // pods it created that have not ended
    std::set<std::string> deleted_by_us;    // removed on purpose: not failures
    std::set<std::string> succeeded, failed;
    std::set<int> succeeded_indexes;
    double last_failure = 0;
    std::optional<double> start_time;
  };
  std::map<std::string, Tracking> tracking;

  mutable std::mutex mu;
  std::condition_variable cv;
  std::set<std::string> queue;                 // Job keys "ns/name" to sync
  std::multimap<double, std::string> delayed;  // back-offs: simulated instant -> key
  bool stopping = false, busy = false, woken = false;
  std::optional<Attachment> attachment;
  std::thread thread;

  Impl(ApiObjects& o, const SimClock& c) : objects(o), clock(c) {}

  // Under the store's lock: only the key is taken.
  void on_change(const Change& change) {
    const json* object = change.after ? change.after.get() : change.before.get();
    if (object == nullptr) return;
    std::string ns = text(*object, "metadata", "namespace"), name;
    if (change.resource == &jobs_resource()) {
      name = text(*object, "metadata", "name");
    } else if (change.resource == &pods_resource()) {
      name = controller_name(*object, "Job");
      if (name.empty() && change.before) name = controller_name(*change.before, "Job");
    }
    if (name.empty()) return;
    std::lock_guard lock(mu);
    queue.insert(ns + "/" + name);
    cv.notify_one();
  }

  void requeue_at(double when, const std::string& key) {
    std::lock_guard lock(mu);
    delayed.emplace(when, key);
  }

  std::vector<ObjectPtr> pods_named(const std::string& ns, const std::string& job) const {
    std::vector<ObjectPtr> out;
    for (ObjectPtr& pod : objects.objects(pods_resource())) {
      if (text(*pod, "metadata", "namespace") == ns && controller_name(*pod, "Job") == job) {
        out.push_back(std::move(pod));
      }
    }
    return out;
  }

  void remove_pod(const json& pod, Tracking* t) {
    const std::string uid = text(pod, "metadata", "uid");
    if (t != nullptr) t->deleted_by_us.insert(uid);
    (void)objects.remove(pods_resource(), text(pod, "metadata", "namespace"),
                         text(pod, "metadata", "name"),
                         {{"preconditions", {{"uid", uid}}}, {"propagationPolicy", "Background"}});
  }

  void sync(const std::string& key);
  void collect_garbage(const std::vector<ObjectPtr>& pods, const std::string& live_uid);
  struct Counts;
  Counts count(const json& job, const std::vector<ObjectPtr>& pods, Tracking& t);
  void create_pods(const json& job, const Counts& counts, int how_many);
  void write_status(const json& job, const Counts& counts, Tracking& t, const char* finished);
  void loop();
};

struct JobController::Impl::Counts {
  std::vector<ObjectPtr> active;  // not ended, not being deleted
  std::set<int> active_indexes;
  int ready = 0;
  int succeeded = 0;  // pods, or indexes of an Indexed Job
  int failed = 0;
};

void JobController::Impl::collect_garbage(const std::vector<ObjectPtr>& pods,
                                          const std::string& live_uid) {
  for (const ObjectPtr& pod : pods) {
    const std::string owner = controller_uid(*pod, "Job");
    if (owner == live_uid) continue;
    tracking.erase(owner);
    remove_pod(*pod, nullptr);
  }
}

JobController::Impl::Counts JobController::Impl::count(const json& job,
                                                       const std::vector<ObjectPtr>& pods,
                                                       Tracking& t) {
  const json& spec = job["spec"];
  const bool indexed = spec.value("completionMode", "") == "Indexed";
  const long long completions = number(spec, "completions", -1);
  Counts counts;
  std::set<std::string> present;
  for (const ObjectPtr& pod : pods) {
    const std::string uid = text(*pod, "metadata", "uid");
    present.insert(uid);
    const std::string phase = text(*pod, "status", "phase");
    if (phase == "Succeeded") {
      t.expected.erase(uid);
      if (t.succeeded.insert(uid).second && indexed) {
        int index = index_of(*pod);
        if (index >= 0 && index < completions) t.succeeded_indexes.insert(index);
      }
    } else if (phase == "Failed") {
      t.expected.erase(uid);
      if (t.failed.insert(uid).second) t.last_failure = clock.now();
    } else if (!job["metadata"].contains("deletionTimestamp") &&
               !(*pod)["metadata"].contains("deletionTimestamp")) {
      counts.active.push_back(pod);
      if (indexed) counts.active_indexes.insert(index_of(*pod));
      if (phase == "Running") ++counts.ready;
    }
  }
  // Pods it made that vanished before they ended: failures, unless it removed them itself.
  for (auto it = t.expected.begin(); it != t.expected.end();) {
    if (present.count(*it)) {
      ++it;
      continue;
    }
    if (!t.deleted_by_us.count(*it) && t.failed.insert(*it).second) t.last_failure = clock.now();
    it = t.expected.erase(it);
  }
  counts.succeeded = indexed ? static_cast<int>(t.succeeded_indexes.size())
                             : static_cast<int>(t.succeeded.size());
  counts.failed = static_cast<int>(t.failed.size());
  return counts;
}

void JobController::Impl::create_pods(const json& job, const Counts& counts, int how_many) {
  const json& spec = job["spec"];
  const std::string ns = text(job, "metadata", "namespace");
  const std::string name = text(job, "metadata", "name");
  const std::string uid = text(job, "metadata", "uid");
  const bool indexed = spec.value("completionMode", "") == "Indexed";
  const long long completions = number(spec, "completions", -1);
  Tracking& t = tracking[uid];
  std::vector<int> indexes;
  for (long long i = 0; indexed && i < completions && static_cast<int>(indexes.size()) < how_many;
       ++i) {
    const int index = static_cast<int>(i);
    if (!t.succeeded_indexes.count(index) && !counts.active_indexes.count(index)) {
      indexes.push_back(index);
    }
  }
  if (indexed) how_many = static_cast<int>(indexes.size());
  for (int n = 0; n < how_many; ++n) {
    const json& tmpl = spec["template"];
    json pod = {{"metadata", tmpl.value("metadata", json::object())},
                {"spec", tmpl.value("spec", json::object())}};
    json& meta = pod["metadata"];
    meta["generateName"] = name + "-";
    meta["ownerReferences"] = json::array({{{"apiVersion", "batch/v1"},
                                            {"kind", "Job"},
                                            {"name", name},
                                            {"uid", uid},
                                            {"controller", true},
                                            {"blockOwnerDeletion", true}}});
    if (indexed) {
      const std::string index = std::to_string(indexes[n]);
      meta["generateName"] = name + "-" + index + "-";
      meta["annotations"][kIndexKey] = index;
      meta["labels"][kIndexKey] = index;
      pod["spec"]["hostname"] = name + "-" + index;
      for (json& container : pod["spec"]["containers"]) {
        container["env"].push_back(
            {{"name", "JOB_COMPLETION_INDEX"},
             {"valueFrom",
              {{"fieldRef",
                {{"fieldPath", std::string("metadata.annotations['") + kIndexKey + "']"}}}}}});
      }
    }
    auto created = objects.create(pods_resource(), ns, std::move(pod));
    if (failed(created)) {
      requeue_at(clock.now() + 1, ns + "/" + name);  // a refused create is tried again
      return;
    }
    t.expected.insert(text(*std::get<ObjectPtr>(created), "metadata", "uid"));
  }
}

void JobController::Impl::write_status(const json& job, const Counts& counts, Tracking& t,
                                        const char* finished) {
  const json& spec = job["spec"];
  const json old = job.value("status", json::object());
  json status = old;
  const std::string now = rfc3339(objects.now());
  const bool suspended = spec.value("suspend", false) && finished == nullptr;
  if (!suspended && !t.start_time) t.start_time = objects.now();
  if (t.start_time && !status.contains("startTime")) status["startTime"] = rfc3339(*t.start_time);
  status["active"] = finished != nullptr ? 0 : static_cast<int>(counts.active.size());
  status["ready"] = finished != nullptr ? 0 : counts.ready;
  status["succeeded"] = counts.succeeded;
  status["failed"] = counts.failed;
  if (spec.value("completionMode", "") == "Indexed") {
    status["completedIndexes"] = index_ranges(t.succeeded_indexes);
  }
  json conditions = json::array();
  for (const json& c : old.value("conditions", json::array())) {
    if (c.value("type", "") != "Suspended") conditions.push_back(c);
  }
  auto condition = [&](const char* type, const char* value, const std::string& reason,
                       const std::string& message) {
    json c = {{"type", type}, {"status", value}, {"lastProbeTime", now},
              {"lastTransitionTime", now}};
    if (!reason.empty()) c["reason"] = reason;
    if (!message.empty()) c["message"] = message;
    conditions.push_back(std::move(c));
  };
  const bool was_suspended = has_condition(job, "Suspended");
  if (suspended) {
    if (was_suspended) {
      for (const json& c : old["conditions"]) {
        if (c.value("type", "") == "Suspended") conditions.push_back(c);
      }
    } else {
      condition("Suspended", "True", "JobSuspended", "Job suspended");
    }
  } else if (was_suspended) {
    condition("Suspended", "False", "JobResumed", "Job resumed");
  }
  if (finished != nullptr && std::string(finished) == "Complete") {
    condition("Complete", "True", "", "");
    status["completionTime"] = now;
  } else if (finished != nullptr) {
    condition("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit");
  }
  status["conditions"] = std::move(conditions);
  if (status["conditions"].empty()) status.erase("conditions");
  if (status == old) return;
  json updated = job;
  updated["status"] = std::move(status);
  const std::string ns = text(job, "metadata", "namespace");
  const std::string name = text(job, "metadata", "name");
  // With the Job's resourceVersion: a Job changed since it was read is synced again.
  (void)objects.update(jobs_resource(), ns, name, std::move(updated), /*status_only=*/true);
}

void JobController::Impl::sync(const std::string& key) {
  const auto slash = key.find('/');
  const std::string ns = key.substr(0, slash), name = key.substr(slash + 1);
  const std::vector<ObjectPtr> pods = pods_named(ns, name);
  auto got = objects.get(jobs_resource(), ns, name);
  if (failed(got)) {
    collect_garbage(pods, "");  // the Job is gone: its pods go too (Background propagation)
    return;
  }
  const json& job = *std::get<ObjectPtr>(got);
  const std::string uid = text(job, "metadata", "uid");
  collect_garbage(pods, uid);  // pods of an earlier Job of the same name
  std::vector<ObjectPtr> owned;
  for (const ObjectPtr& pod : pods) {
    if (controller_uid(*pod, "Job") == uid) owned.push_back(pod);
  }
  Tracking& t = tracking[uid];
  Counts counts = count(job, owned, t);
  if (has_condition(job, "Complete") || has_condition(job, "Failed")) {
    for (const ObjectPtr& pod : counts.active) remove_pod(*pod, &t);
    return;
  }
  const json& spec = job["spec"];
  const long long parallelism = number(spec, "parallelism", 1);
  const long long completions = number(spec, "completions", -1);
  if (counts.failed > number(spec, "backoffLimit", 6)) {
    for (const ObjectPtr& pod : counts.active) remove_pod(*pod, &t);
    write_status(job, counts, t, "Failed");
    return;
  }
  const bool work_queue = completions < 0;
  if ((!work_queue && counts.succeeded >= completions) ||
      (work_queue && counts.succeeded > 0 && counts.active.empty())) {
    for (const ObjectPtr& pod : counts.active) remove_pod(*pod, &t);
    write_status(job, counts, t, "Complete");
    return;
  }
  long long wanted = work_queue ? (counts.succeeded > 0 ? static_cast<long long>(counts.active.size())
                                                        : parallelism)
                                : std::min(parallelism, completions - counts.succeeded);
  if (spec.value("suspend", false)) wanted = 0;
  const long long active = static_cast<long long>(counts.active.size());
  if (active > wanted) {
    // The excess goes, unbound pods and high indexes first (kube ranks not-ready pods first).
    std::vector<ObjectPtr> ranked = counts.active;
    std::sort(ranked.begin(), ranked.end(), [](const ObjectPtr& a, const ObjectPtr& b) {
      const bool a_bound = !text(*a, "spec", "nodeName").empty();
      const bool b_bound = !text(*b, "spec", "nodeName").empty();
      if (a_bound != b_bound) return !a_bound;
      return index_of(*a) > index_of(*b);
    });
    for (long long i = 0; i < active - wanted; ++i) remove_pod(*ranked[i], &t);
    counts.active.resize(static_cast<std::size_t>(wanted));
  } else if (active < wanted) {
    const double resume = t.last_failure + failure_backoff(counts.failed);
    if (counts.failed > 0 && clock.now() < resume) {
      requeue_at(resume, key);
    } else {
      create_pods(job, counts, static_cast<int>(wanted - active));
    }
  }
  write_status(job, counts, t, nullptr);
}

void JobController::Impl::loop() {
  std::unique_lock lock(mu);
  while (!stopping) {
    busy = true;
    const double now = clock.now();
    while (!delayed.empty() && delayed.begin()->first <= now) {
      queue.insert(delayed.begin()->second);
      delayed.erase(delayed.begin());
    }
    while (!queue.empty() && !stopping) {
      std::string key = *queue.begin();
      queue.erase(queue.begin());
      lock.unlock();
      sync(key);
      lock.lock();
    }
    busy = false;
    auto wake = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    if (!delayed.empty()) wake = std::min(wake, clock.wall_at(delayed.begin()->first));
    cv.wait_until(lock, wake, [&] { return stopping || !queue.empty() || woken; });
    woken = false;
  }
}

JobController::JobController(ApiObjects& objects, const SimClock& clock)
    : impl_(std::make_unique<Impl>(objects, clock)) {}

JobController::~JobController() {
  stop();
}

void JobController::start() {
  Impl& impl = *impl_;
  if (impl.thread.joinable()) return;
  impl.attachment.emplace(
      impl.objects, [&impl](const Change& change) { impl.on_change(change); }, impl.clock,
      [&impl] {
        std::lock_guard lock(impl.mu);
        impl.woken = true;
        impl.cv.notify_one();
      });
  impl.thread = std::thread([&impl] {
    become_cluster_thread("emu-jobs");
    impl.loop();
  });
}

void JobController::stop() {
  Impl& impl = *impl_;
  {
    std::lock_guard lock(impl.mu);
    impl.stopping = true;
    impl.cv.notify_all();
  }
  if (impl.thread.joinable()) impl.thread.join();
  impl.attachment.reset();
}

bool JobController::idle() const {
  std::lock_guard lock(impl_->mu);
  return !impl_->busy && impl_->queue.empty() &&
         (impl_->delayed.empty() || impl_->delayed.begin()->first > impl_->clock.now());
}

double JobController::next_wake() const {
  std::lock_guard lock(impl_->mu);
  return impl_->delayed.empty() ? std::numeric_limits<double>::infinity()
                                : impl_->delayed.begin()->first;
}

}  // namespace allox::emulator
