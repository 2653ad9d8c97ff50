#include "kubesim/fake_kubelet.h"

#include <condition_variable>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "kubesim/attachment.h"
#include "kubesim/cluster_threads.h"
#include "core/thread_priority.h"

namespace allox::emulator {

using nlohmann::json;

namespace {

// object[section][key] as a string; "" when either is missing or not of that type.
std::string text_at(const json& object, const char* section, const char* key) {
  auto part = object.find(section);
  if (part == object.end() || !part->is_object()) return "";
  auto value = part->find(key);
  return value != part->end() && value->is_string() ? value->get<std::string>() : "";
}

}  // namespace

struct FakeKubelet::Impl {
  ApiObjects& objects;
  const SimClock& clock;
  RunSeconds run_seconds;
  ExitCode exit_code;
  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<std::string, std::string>> started;  // bound pods to start (ns, name)
  std::set<std::string> seen;                               // ns/name of pods already started
  std::multimap<double, std::pair<std::string, std::string>> finishing;
  bool stopping = false;
  bool busy = false;   // between taking work off the queues and writing its status
  bool woken = false;  // the clock jumped: look at `finishing` again
  std::optional<Attachment> attachment;  // taken by start(), released by stop()
  std::thread thread;

  Impl(ApiObjects& o, const SimClock& c, RunSeconds r, ExitCode e)
      : objects(o), clock(c), run_seconds(std::move(r)), exit_code(std::move(e)) {}

  void on_change(const Change& change) {
    if (change.resource != &pods_resource() || !change.after) return;
    // Called under the store's lock for every change: read in place, copy only the names.
    const json& pod = *change.after;
    if (text_at(pod, "spec", "nodeName").empty() || text_at(pod, "status", "phase") != "Pending")
      return;
    std::string ns = text_at(pod, "metadata", "namespace"), name = text_at(pod, "metadata", "name");
    std::lock_guard lock(mu);
    if (!seen.insert(ns + "/" + name).second) return;
    started.emplace_back(ns, name);
    cv.notify_one();
  }

  void start_pod(const std::string& ns, const std::string& name) {
    auto current = objects.get(pods_resource(), ns, name);
    if (failed(current)) return;
    const json& pod = *std::get<ObjectPtr>(current);
    const double now = clock.now();
    json container = {{"name", "main"},
                      {"ready", true},
                      {"restartCount", 0},
                      {"started", true},
                      {"state", {{"running", {{"startedAt", rfc3339(now)}}}}}};
    json status = {{"phase", "Running"},
                   {"startTime", rfc3339(now)},
                   {"containerStatuses", json::array({container})}};
    (void)objects.patch(pods_resource(), ns, name, PatchType::kMerge,
                        json{{"status", status}}.dump(), true);
    auto seconds = run_seconds(pod);
    if (!seconds) return;
    std::lock_guard lock(mu);
    finishing.emplace(now + *seconds, std::make_pair(ns, name));
  }

  void finish_pod(const std::string& ns, const std::string& name) {
    const double now = clock.now();
    int code = 0;
    if (exit_code) {
      auto current = objects.get(pods_resource(), ns, name);
      if (failed(current)) return;  // deleted meanwhile
      code = exit_code(*std::get<ObjectPtr>(current));
    }
    json container = {{"name", "main"},
                      {"ready", false},
                      {"restartCount", 0},
                      {"started", false},
                      {"state",
                       {{"terminated",
                         {{"exitCode", code},
                          {"reason", code == 0 ? "Completed" : "Error"},
                          {"finishedAt", rfc3339(now)}}}}}};
    json status = {{"phase", code == 0 ? "Succeeded" : "Failed"},
                   {"containerStatuses", json::array({container})}};
    (void)objects.patch(pods_resource(), ns, name, PatchType::kMerge,
                        json{{"status", status}}.dump(), true);
  }

  void loop() {
    std::unique_lock lock(mu);
    while (!stopping) {
      busy = true;
      while (!started.empty()) {
        auto [ns, name] = started.front();
        started.pop_front();
        lock.unlock();
        start_pod(ns, name);
        lock.lock();
      }
      const double now = clock.now();
      while (!finishing.empty() && finishing.begin()->first <= now) {
        auto [ns, name] = finishing.begin()->second;
        finishing.erase(finishing.begin());
        lock.unlock();
        finish_pod(ns, name);
        lock.lock();
      }
      busy = false;
      auto wake = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
      if (!finishing.empty()) wake = std::min(wake, clock.wall_at(finishing.begin()->first));
      cv.wait_until(lock, wake, [&] { return stopping || !started.empty() || woken; });
      woken = false;
    }
  }
};

FakeKubelet::FakeKubelet(ApiObjects& objects, const SimClock& clock, RunSeconds run_seconds,
                         ExitCode exit_code)
    : impl_(std::make_unique<Impl>(objects, clock, std::move(run_seconds), std::move(exit_code))) {}

FakeKubelet::~FakeKubelet() {
  stop();
}

void FakeKubelet::start() {
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
    become_cluster_thread("emu-kubelets");
    impl.loop();
  });
}

bool FakeKubelet::idle() const {
  std::lock_guard lock(impl_->mu);
  return !impl_->busy && impl_->started.empty() &&
         (impl_->finishing.empty() || impl_->finishing.begin()->first > impl_->clock.now());
}

double FakeKubelet::next_finish() const {
  std::lock_guard lock(impl_->mu);
  return impl_->finishing.empty() ? std::numeric_limits<double>::infinity()
                                  : impl_->finishing.begin()->first;
}

void FakeKubelet::stop() {
  Impl& impl = *impl_;
  {
    std::lock_guard lock(impl.mu);
    impl.stopping = true;
    impl.cv.notify_all();
  }
  if (impl.thread.joinable()) impl.thread.join();
  impl.attachment.reset();
}

}  // namespace allox::emulator
