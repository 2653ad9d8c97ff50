#include "extender/kube_scheduler_emulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <nlohmann/json.hpp>
#include <queue>
#include <sstream>
#include <thread>

#include "extender/extender_client.h"
#include "extender/pod.h"

namespace allox::extender {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct PendingPod {
  std::size_t job = 0;
  DeviceType device;
  std::string name;
  int attempts = 0;
  Clock::time_point retry_at;
};

struct Completion {
  double at = 0;
  std::size_t job = 0;
  bool operator>(const Completion& other) const { return at > other.at; }
};

std::string format_seconds(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

json pod_json(const ReplayJob& job, const PendingPod& pod, const ReplayOptions& options) {
  json annotations = {
      {"allox.io/job", job.id}, {"allox.io/user", job.user}, {"allox.io/device", pod.device}};
  for (const auto& [device, seconds] : job.estimate) {
    annotations["allox.io/time." + device] = format_seconds(seconds);
  }
  json requests = json::object();
  const auto resource = options.resource_of.find(pod.device);
  if (resource != options.resource_of.end()) {
    requests[resource->second] = "1";
  } else {
    requests["cpu"] = format_seconds(options.cpu_cores);
  }
  return {{"metadata",
           {{"name", pod.name},
            {"namespace", options.pod_namespace},
            {"uid", "uid-" + pod.name},
            {"annotations", annotations}}},
          {"spec",
           {{"schedulerName", "allox-scheduler"},
            {"containers",
             json::array({{{"name", "main"}, {"resources", {{"requests", requests}}}}})}}},
          {"status", {{"phase", "Pending"}}}};
}

std::vector<std::string> string_list(const json& value) {
  std::vector<std::string> out;
  if (value.is_array()) {
    for (const json& item : value) {
      if (item.is_string()) out.push_back(item.get<std::string>());
    }
  }
  return out;
}

class Replay {
 public:
  Replay(const std::vector<ReplayJob>& jobs, const ReplayOptions& options)
      : jobs_(jobs), options_(options), client_(options.server, options.admin_token) {
    summary_.jobs.resize(jobs.size());
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      summary_.jobs[i].id = jobs[i].id;
      summary_.jobs[i].user = jobs[i].user;
      summary_.jobs[i].arrival = jobs[i].arrival;
      arrival_order_.push_back(i);
    }
    std::stable_sort(
        arrival_order_.begin(), arrival_order_.end(),
        [&](std::size_t a, std::size_t b) { return jobs[a].arrival < jobs[b].arrival; });
  }

  Expected<ReplaySummary> run() {
    start_ = Clock::now();
    while (done_ < jobs_.size()) {
      if (options_.stop != nullptr && options_.stop->load()) {
        summary_.interrupted = true;
        break;
      }
      const double now = simulated_now();
      if (auto status = complete_due(now); !status) return status.error();
      admit_due(now);
      if (auto status = schedule_active(now); !status) return status.error();
      wait_for_next_event();
    }
    summary_.simulated_s = simulated_now();
    summary_.wall_s = std::chrono::duration<double>(Clock::now() - start_).count();
    return summary_;
  }

 private:
  double simulated_now() const {
    return std::chrono::duration<double>(Clock::now() - start_).count() * options_.speedup;
  }
  Clock::time_point wall_at(double simulated) const {
    return start_ + std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double>(simulated / options_.speedup));
  }

  void emit(ReplayEvent::Kind kind, std::size_t job, double at) {
    if (!options_.on_event) return;
    ReplayEvent event;
    event.kind = kind;
    event.at = at;
    event.job = jobs_[job].id;
    event.user = jobs_[job].user;
    event.node = summary_.jobs[job].node;
    event.device = summary_.jobs[job].device;
    event.queued = static_cast<int>(queued_);
    event.running = static_cast<int>(completions_.size());
    event.done = static_cast<int>(done_);
    options_.on_event(event);
  }

  Status complete_due(double now) {
    bool cluster_changed = false;
    while (!completions_.empty() && completions_.top().at <= now) {
      const Completion completion = completions_.top();
      completions_.pop();
      // alloxd names the job within its pods' namespace (extender/pod.h).
      const std::string id = job_id_in_namespace(options_.pod_namespace, jobs_[completion.job].id);
      auto answer = client_.post("/v1/jobs/" + path_segment(id) + "/done", json::object(), true);
      if (!answer) return answer.error();
      summary_.jobs[completion.job].finish = completion.at;
      ++done_;
      cluster_changed = true;
      emit(ReplayEvent::Kind::kDone, completion.job, completion.at);
    }
    // A freed machine is a cluster event: parked pods are worth trying again at once.
    if (cluster_changed) {
      for (PendingPod& pod : parked_) {
        pod.retry_at = Clock::now();
        active_.push_back(std::move(pod));
      }
      parked_.clear();
    }
    return OkStatus();
  }

  void admit_due(double now) {
    while (next_arrival_ < arrival_order_.size() &&
           jobs_[arrival_order_[next_arrival_]].arrival <= now) {
      const std::size_t job = arrival_order_[next_arrival_++];
      for (const auto& [device, seconds] : jobs_[job].true_time) {
        PendingPod pod;
        pod.job = job;
        pod.device = device;
        pod.name = jobs_[job].id + "-" + device;
        active_.push_back(std::move(pod));
      }
      ++queued_;
      emit(ReplayEvent::Kind::kArrived, job, jobs_[job].arrival);
    }
  }

  Status schedule_active(double now) {
    std::deque<PendingPod> batch;
    batch.swap(active_);
    // Parked pods whose back-off expired rejoin the queue, behind the fresh ones.
    const Clock::time_point wall_now = Clock::now();
    for (auto it = parked_.begin(); it != parked_.end();) {
      if (it->retry_at <= wall_now) {
        batch.push_back(std::move(*it));
        it = parked_.erase(it);
      } else {
        ++it;
      }
    }
    for (PendingPod& pod : batch) {
      if (!summary_.jobs[pod.job].node.empty()) continue;  // a sibling variant was bound
      auto bound = schedule_one(pod, now);
      if (!bound) return bound.error();
      if (!*bound) park(std::move(pod));
    }
    return OkStatus();
  }

  void park(PendingPod pod) {
    pod.attempts++;
    const double backoff =
        std::min(options_.max_backoff_wall_s, 0.05 * std::pow(2.0, pod.attempts - 1));
    pod.retry_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(backoff));
    parked_.push_back(std::move(pod));
  }

  // Filter, prioritize, bind. True when the pod was bound.
  Expected<bool> schedule_one(const PendingPod& pod, double now) {
    const json pod_body = pod_json(jobs_[pod.job], pod, options_);
    ++summary_.filter_calls;
    auto filtered = client_.post(
        "/filter", {{"Pod", pod_body}, {"Nodes", nullptr}, {"NodeNames", options_.nodes}});
    if (!filtered) return filtered.error();
    const std::vector<std::string> feasible = string_list((*filtered)["NodeNames"]);
    if (feasible.empty()) return false;

    ++summary_.prioritize_calls;
    auto scores = client_.post("/prioritize",
                               {{"Pod", pod_body}, {"Nodes", nullptr}, {"NodeNames", feasible}});
    if (!scores) return scores.error();
    std::string best = feasible.front();
    long best_score = -1;
    if (scores->is_array()) {
      for (const json& entry : *scores) {
        const long score = entry.value("Score", 0L);
        const std::string host = entry.value("Host", "");
        if (score > best_score &&
            std::find(feasible.begin(), feasible.end(), host) != feasible.end()) {
          best = host;
          best_score = score;
        }
      }
    }

    ++summary_.bind_calls;
    auto bound = client_.post("/bind", {{"PodName", pod.name},
                                        {"PodNamespace", options_.pod_namespace},
                                        {"PodUID", "uid-" + pod.name},
                                        {"Node", best}});
    if (!bound) return bound.error();
    if (!bound->value("Error", std::string()).empty()) {
      ++summary_.bind_failures;
      emit(ReplayEvent::Kind::kBindFailed, pod.job, now);
      return false;
    }
    ReplayedJob& replayed = summary_.jobs[pod.job];
    replayed.node = best;
    replayed.device = pod.device;
    replayed.start = now;
    completions_.push({now + jobs_[pod.job].true_time.at(pod.device), pod.job});
    --queued_;
    emit(ReplayEvent::Kind::kBound, pod.job, now);
    return true;
  }

  void wait_for_next_event() {
    Clock::time_point next = Clock::now() + std::chrono::milliseconds(100);
    if (next_arrival_ < arrival_order_.size()) {
      next = std::min(next, wall_at(jobs_[arrival_order_[next_arrival_]].arrival));
    }
    if (!completions_.empty()) next = std::min(next, wall_at(completions_.top().at));
    for (const PendingPod& pod : parked_) next = std::min(next, pod.retry_at);
    if (!active_.empty()) return;
    std::this_thread::sleep_until(next);
  }

  const std::vector<ReplayJob>& jobs_;
  const ReplayOptions& options_;
  ExtenderClient client_;
  ReplaySummary summary_;
  std::vector<std::size_t> arrival_order_;
  std::size_t next_arrival_ = 0;
  std::deque<PendingPod> active_;
  std::vector<PendingPod> parked_;
  std::priority_queue<Completion, std::vector<Completion>, std::greater<>> completions_;
  std::size_t queued_ = 0, done_ = 0;
  Clock::time_point start_;
};

}  // namespace

Expected<ReplaySummary> replay_as_kube_scheduler(const std::vector<ReplayJob>& jobs,
                                                 const ReplayOptions& options) {
  for (const ReplayJob& job : jobs) {
    if (job.true_time.empty()) return Error{"job \"" + job.id + "\" can run on no device"};
  }
  if (options.nodes.empty()) return Error{"replay: no nodes to schedule onto"};
  if (!(options.speedup > 0)) return Error{"replay: speedup must be positive"};
  return Replay(jobs, options).run();
}

}  // namespace allox::extender
