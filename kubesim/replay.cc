#include "kubesim/replay.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <set>
#include <sstream>
#include <variant>

#include "kube/object_fields.h"
#include "kubesim/fake_kubelet.h"

namespace allox::emulator {

using kube::object_member;
using kube::string_member;
using nlohmann::json;

const char* replay_event_name(ReplayEvent::Kind kind) {
  switch (kind) {
    case ReplayEvent::Kind::kArrived:
      return "arrived";
    case ReplayEvent::Kind::kBound:
      return "bound";
    case ReplayEvent::Kind::kDone:
      return "done";
    case ReplayEvent::Kind::kDeleted:
      return "deleted";
    case ReplayEvent::Kind::kGateRemoved:
      return "ungated";
    case ReplayEvent::Kind::kUnschedulable:
      return "parked";
    case ReplayEvent::Kind::kRetried:
      return "retried";
    case ReplayEvent::Kind::kBindFailed:
      return "bind failed";
  }
  return "?";
}

double quantile(std::vector<double> samples, double q) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(samples.size())));
  return samples[std::min(samples.size() - 1, rank == 0 ? 0 : rank - 1)];
}

namespace {

std::string number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

std::map<std::string, std::string> node_allocatable(const std::map<DeviceType, int>& machines,
                                                    const ReplayOptions& options) {
  std::map<std::string, std::string> out;
  double cores = 0;
  for (const auto& [device, count] : machines) {
    auto resource = options.resource_of.find(device);
    if (resource != options.resource_of.end()) {
      out[resource->second] = std::to_string(count);
      cores += count * options.gpu_pod_cores;
    } else {
      cores += count * options.cpu_cores;
    }
  }
  out["cpu"] = number(cores);
  out["memory"] = "1024Gi";
  out["pods"] = "110";
  return out;
}

std::map<std::string, std::string> node_labels(const std::map<DeviceType, int>& machines,
                                               const ReplayOptions& options) {
  std::map<std::string, std::string> out;
  for (const auto& [device, count] : machines) {
    if (auto label = options.label_of.find(device); label != options.label_of.end() && count > 0) {
      out[label->second.first] = label->second.second;
    }
  }
  return out;
}

namespace {

// pinned: the pod names its device (allox.io/device); otherwise it runs on any type of the
// device's resource that alloxd picks (ReplayJob::any_model).
json pod_for(const ReplayJob& job, const DeviceType& device, const ReplayOptions& options,
             bool pinned = true, int member = -1) {
  json annotations = {{"allox.io/job", job.id}, {"allox.io/user", job.user}};
  if (job.gang > 1) annotations["allox.io/gang-size"] = std::to_string(job.gang);
  if (pinned) annotations["allox.io/device"] = device;
  for (const auto& [d, seconds] : job.estimate) annotations["allox.io/time." + d] = number(seconds);
  json requests, limits = json::object();
  auto units_of = job.units.find(device);
  const int units = units_of == job.units.end() ? 1 : units_of->second;
  auto resource = options.resource_of.find(device);
  if (resource != options.resource_of.end()) {
    requests = {{"cpu", number(options.gpu_pod_cores * units)},
                {"memory", "1Gi"},
                {resource->second, std::to_string(units)}};
    limits[resource->second] = std::to_string(units);
  } else {
    requests = {{"cpu", number(options.cpu_cores * units)}, {"memory", "4Gi"}};
  }
  json spec = {
      {"schedulerName", options.scheduler_name},
      {"restartPolicy", "Never"},
      {"terminationGracePeriodSeconds", 0},
      {"containers", json::array({{{"name", "main"},
                                   {"image", "registry.invalid/train:latest"},
                                   {"resources", {{"requests", requests}, {"limits", limits}}}}})}};
  if (options.gated) spec["schedulingGates"] = json::array({{{"name", "allox.io/queue"}}});
  if (job.pod_spec.is_object()) {
    for (const auto& [key, value] : job.pod_spec.items()) spec[key] = value;
  }
  std::string name = job.id + "-" + (pinned ? device : "any-" + resource->second);
  if (member >= 0) name += "-" + std::to_string(member);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '-';
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", options.pod_namespace},
            {"labels", {{"app.kubernetes.io/managed-by", "allox-replay"}}},
            {"annotations", annotations}}},
          {"spec", spec}};
}

class Replay {
 public:
  Replay(ApiObjects& objects, SimClock& clock, const std::vector<ReplayJob>& jobs,
         const ReplayOptions& options)
      : objects_(objects), clock_(clock), jobs_(jobs), options_(options) {
    summary_.jobs.resize(jobs.size());
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      summary_.jobs[i].id = jobs[i].id;
      summary_.jobs[i].user = jobs[i].user;
      summary_.jobs[i].arrival = jobs[i].arrival;
      order_.push_back(i);
      index_[jobs[i].id] = i;
    }
    std::stable_sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) {
      return jobs[a].arrival < jobs[b].arrival;
    });
  }

  Expected<ReplaySummary> run() {
    start_ = clock_.now();
    // The nodes' labels, for the type an unpinned pod runs as (type_on); nodes are in place
    // before a replay starts.
    for (const ObjectPtr& node : objects_.objects(nodes_resource())) {
      auto& labels = node_labels_[string_member(object_member(*node, "metadata"), "name")];
      for (const auto& [key, value] :
           object_member(object_member(*node, "metadata"), "labels").items()) {
        if (value.is_string()) labels[key] = value.get<std::string>();
      }
    }
    const auto wall_start = std::chrono::steady_clock::now();
    FakeKubelet kubelet(objects_, clock_, [this](const json& pod) -> std::optional<double> {
      const json& annotations = object_member(object_member(pod, "metadata"), "annotations");
      auto job = index_.find(string_member(annotations, "allox.io/job"));
      if (job == index_.end()) return std::nullopt;
      auto t = jobs_[job->second].true_time.find(job_of(pod).value_or(std::pair(0, "")).second);
      if (t == jobs_[job->second].true_time.end()) return std::nullopt;
      return t->second;
    });
    KubeSchedulerOptions scheduler_options;
    scheduler_options.config = options_.scheduler;
    scheduler_options.record_events = options_.record_events;
    scheduler_options.observer = [this](const SchedulerEvent& event) { post(event); };
    KubeScheduler scheduler(objects_, clock_, scheduler_options);
    subscription_ = objects_.subscribe([this](const Change& change) {
      if (change.resource != &pods_resource()) return;
      post(Timed{change, clock_.now()});  // at: as the store publishes it
    });
    kubelet.start();
    scheduler.start();
    Status status = loop(kubelet, scheduler);
    scheduler.stop();
    kubelet.stop();
    objects_.unsubscribe(subscription_);
    summary_.scheduler = scheduler.stats();
    summary_.simulated_s = clock_.now() - start_;
    summary_.wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    for (const ObjectPtr& pod : objects_.objects(pods_resource())) {
      const json& meta = (*pod)["metadata"];
      if (meta.value("namespace", "") != options_.pod_namespace) continue;
      if ((*pod)["spec"].value("nodeName", "").empty()) {
        summary_.left_pending.push_back(meta.value("namespace", "") + "/" + meta.value("name", ""));
      }
    }
    for (std::size_t i = 0; i < summary_.jobs.size(); ++i) {
      const ReplayedJob& job = summary_.jobs[i];
      if (job.runs > std::max(1, jobs_[i].gang)) summary_.ran_twice.push_back(job.id);
    }
    if (!status) return status.error();
    return summary_;
  }

 private:
  struct Timed {
    Change change;
    double at = 0;  // simulated Unix seconds
  };
  using Item = std::variant<Timed, SchedulerEvent>;

  // The replay's bookkeeping needs every change, not each one at once: items wait in the inbox
  // until the loop's next look (kPoll at most), or wake it when kWakeBatch have gathered. A
  // wake-up per change cost a futex call under the store's lock plus a context switch, for
  // ~16 changes per bound job.
  static constexpr std::size_t kWakeBatch = 1024;
  static constexpr std::chrono::milliseconds kPoll{10};

  void post(Item item) {
    std::lock_guard lock(mu_);
    inbox_.push_back(std::move(item));
    if (inbox_.size() == kWakeBatch) cv_.notify_one();
  }

  double elapsed() const { return clock_.now() - start_; }

  void emit(ReplayEvent event) {
    if (!options_.on_event) return;
    event.at = elapsed();
    event.queued = static_cast<int>(arrived_ - bound_jobs_);
    event.running = static_cast<int>(bound_jobs_ - done_);
    event.done = static_cast<int>(done_);
    options_.on_event(event);
  }

  // The job and device of a pod of this replay, from its annotations.
  std::optional<std::pair<std::size_t, DeviceType>> job_of(const json& pod) const {
    // Called for every change of every pod: read in place (no copy of the metadata).
    const json& meta = object_member(pod, "metadata");
    if (string_member(meta, "namespace") != options_.pod_namespace) return std::nullopt;
    const json& annotations = object_member(meta, "annotations");
    auto it = index_.find(string_member(annotations, "allox.io/job"));
    if (it == index_.end()) return std::nullopt;
    DeviceType device = string_member(annotations, "allox.io/device");
    if (device.empty())
      device = type_on(string_member(object_member(pod, "spec"), "nodeName"), jobs_[it->second]);
    return std::make_pair(it->second, device);
  }

  // The type an unpinned pod of `job` runs as on `node`: the model its labels name, else the
  // plain type among the job's ("" while unbound).
  DeviceType type_on(const std::string& node, const ReplayJob& job) const {
    if (node.empty()) return "";
    auto labels = node_labels_.find(node);
    for (const auto& [type, label] : options_.label_of) {
      if (labels != node_labels_.end() && job.true_time.count(type)) {
        auto value = labels->second.find(label.first);
        if (value != labels->second.end() && value->second == label.second) return type;
      }
    }
    for (const auto& [type, seconds] : job.true_time) {
      if (options_.resource_of.count(type) && !options_.label_of.count(type)) return type;
    }
    return "";
  }

  void on_change(const Change& change, double at) {
    const json& now_pod = change.after ? *change.after : *change.before;
    auto owner = job_of(now_pod);
    if (!owner) return;
    const auto [job, device] = *owner;
    ReplayedJob& replayed = summary_.jobs[job];
    const std::string pod_name = now_pod["metadata"].value("name", "");
    auto node_of = [](const ObjectPtr& pod) {
      return pod ? (*pod)["spec"].value("nodeName", "") : std::string();
    };
    auto phase_of = [](const ObjectPtr& pod) {
      return pod ? (*pod)["status"].value("phase", "") : std::string();
    };
    auto gated = [](const ObjectPtr& pod) {
      return pod && (*pod)["spec"].contains("schedulingGates");
    };
    ReplayEvent event;
    event.job = jobs_[job].id;
    event.user = jobs_[job].user;
    event.pod = pod_name;
    event.device = device;
    if (change.type == "DELETED") {
      if (node_of(change.before).empty()) {
        event.kind = ReplayEvent::Kind::kDeleted;
        emit(event);
      }
      return;
    }
    if (gated(change.before) && !gated(change.after)) {
      event.kind = ReplayEvent::Kind::kGateRemoved;
      emit(event);
    }
    const std::string node = node_of(change.after);
    if (!node.empty() && node_of(change.before).empty()) {
      replayed.runs++;
      if (replayed.runs == 1) {
        replayed.node = node;
        replayed.device = device;
        replayed.pod = pod_name;
        replayed.start = elapsed();
        ++bound_jobs_;
      }
      auto& freed = freed_[{node, device}];
      if (!freed.empty()) {
        summary_.completion_to_bind.push_back(at - freed.front());
        freed.pop_front();
      }
      event.kind = ReplayEvent::Kind::kBound;
      event.node = node;
      emit(event);
    }
    const std::string phase = phase_of(change.after);
    if ((phase == "Succeeded" || phase == "Failed") && phase != phase_of(change.before)) {
      const bool whole =
          jobs_[job].gang > 1 ? ++members_done_[job] == jobs_[job].gang : replayed.pod == pod_name;
      if (replayed.finish == 0 && whole) {
        replayed.finish = elapsed();
        ++done_;
      }
      if (arrived_ > bound_jobs_) freed_[{node, device}].push_back(at);
      event.kind = ReplayEvent::Kind::kDone;
      event.node = node;
      emit(event);
    }
  }

  void on_scheduler(const SchedulerEvent& s) {
    const auto slash = s.pod.find('/');
    auto pod = objects_.get(pods_resource(), s.pod.substr(0, slash), s.pod.substr(slash + 1));
    ReplayEvent event;
    event.pod = s.pod.substr(slash + 1);
    event.node = s.node;
    event.detail = s.message;
    if (!failed(pod)) {
      auto owner = job_of(*std::get<ObjectPtr>(pod));
      if (owner) {
        event.job = jobs_[owner->first].id;
        event.user = jobs_[owner->first].user;
        event.device = owner->second;
      }
    }
    switch (s.kind) {
      case SchedulerEvent::Kind::kUnschedulable:
        event.kind = ReplayEvent::Kind::kUnschedulable;
        break;
      case SchedulerEvent::Kind::kMoved:
        event.kind = ReplayEvent::Kind::kRetried;
        break;
      case SchedulerEvent::Kind::kBindFailed:
      case SchedulerEvent::Kind::kError:
        event.kind = ReplayEvent::Kind::kBindFailed;
        break;
      default:
        return;
    }
    emit(event);
  }

  // Stepped clocks: everything is quiet, nothing changed the store meanwhile; the clock jumps
  // to the next event. False when something is still in flight.
  bool step(const FakeKubelet& kubelet, const KubeScheduler& scheduler, std::size_t next) {
    const std::uint64_t version = objects_.resource_version();
    {
      std::lock_guard lock(mu_);
      if (!inbox_.empty()) return false;
    }
    if (!kubelet.idle() || !scheduler.idle()) return false;
    if (options_.quiet && !options_.quiet()) return false;
    if (objects_.resource_version() != version) return false;
    double due = std::min(kubelet.next_finish(), scheduler.next_due());
    if (next < order_.size()) due = std::min(due, start_ + jobs_[order_[next]].arrival);
    if (options_.max_simulated_s > 0) due = std::min(due, start_ + options_.max_simulated_s + 1);
    if (due == std::numeric_limits<double>::infinity()) return false;
    if (options_.on_quiet) options_.on_quiet(elapsed());
    if (options_.starts_planned_on) {
      for (auto& [machine, freed] : freed_) {
        // Binds take the oldest completion first; the newest beyond the planned starts go.
        const auto planned = static_cast<std::size_t>(
            std::max(0, options_.starts_planned_on(machine.first, machine.second)));
        while (freed.size() > planned) {
          freed.pop_back();
          ++summary_.left_idle;
        }
      }
    }
    const double skipped = clock_.advance_to(due);
    if (skipped > 0) {
      ++summary_.jumps;
      summary_.skipped_s += skipped;
    }
    return true;
  }

  Status loop(const FakeKubelet& kubelet, const KubeScheduler& scheduler) {
    std::size_t next = 0;
    while (done_ < jobs_.size()) {
      if (options_.stop != nullptr && options_.stop->load()) {
        summary_.interrupted = true;
        return OkStatus();
      }
      if (options_.max_simulated_s > 0 && elapsed() > options_.max_simulated_s) {
        std::string waiting;
        for (const ReplayedJob& job : summary_.jobs) {
          if (job.finish == 0 && job.arrival <= elapsed()) waiting += " " + job.id;
        }
        return Error{"replay: not finished after " + number(options_.max_simulated_s) +
                     " simulated seconds; unfinished jobs:" + waiting};
      }
      while (next < order_.size() && jobs_[order_[next]].arrival <= elapsed()) {
        const ReplayJob& job = jobs_[order_[next++]];
        std::set<std::string> resources;  // any_model: the resources with a pod already
        for (const auto& [device, seconds] : job.true_time) {
          auto resource = options_.resource_of.find(device);
          const bool any = job.any_model && resource != options_.resource_of.end();
          if (any && !resources.insert(resource->second).second) continue;
          for (int member = 0; member < std::max(1, job.gang); ++member) {
            auto created =
                objects_.create(pods_resource(), options_.pod_namespace,
                                pod_for(job, device, options_, !any, job.gang > 1 ? member : -1));
            if (auto* error = std::get_if<ApiError>(&created)) {
              return Error{"creating a pod for job " + job.id + ": " + error->message};
            }
          }
        }
        ++arrived_;
        ReplayEvent event;
        event.kind = ReplayEvent::Kind::kArrived;
        event.job = job.id;
        event.user = job.user;
        emit(event);
      }
      std::deque<Item> batch;
      {
        std::unique_lock lock(mu_);
        // A stepped clock moves only when this thread sees everything quiet: look often.
        auto wake = std::chrono::steady_clock::now() +
                    (clock_.stepped() ? std::chrono::milliseconds(1) : kPoll);
        if (next < order_.size())
          wake = std::min(wake, clock_.wall_at(start_ + jobs_[order_[next]].arrival));
        cv_.wait_until(lock, wake, [&] { return !inbox_.empty(); });
        batch.swap(inbox_);
      }
      if (batch.empty() && clock_.stepped()) (void)step(kubelet, scheduler, next);
      for (const Item& item : batch) {
        if (const auto* timed = std::get_if<Timed>(&item)) {
          on_change(timed->change, timed->at);
        } else {
          on_scheduler(std::get<SchedulerEvent>(item));
        }
      }
    }
    return OkStatus();
  }

  ApiObjects& objects_;
  SimClock& clock_;
  const std::vector<ReplayJob>& jobs_;
  const ReplayOptions& options_;
  ReplaySummary summary_;
  std::vector<std::size_t> order_;
  std::map<std::string, std::size_t> index_;
  double start_ = 0;
  std::size_t arrived_ = 0, bound_jobs_ = 0, done_ = 0;
  std::map<std::size_t, int> members_done_;  // a gang's members ended, by job
  std::map<std::pair<std::string, DeviceType>, std::deque<double>> freed_;
  std::map<std::string, std::map<std::string, std::string>> node_labels_;  // node -> labels
  int subscription_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> inbox_;
};

}  // namespace

Expected<ReplaySummary> replay_jobs(ApiObjects& objects, SimClock& clock,
                                    const std::vector<ReplayJob>& jobs,
                                    const ReplayOptions& options) {
  for (const ReplayJob& job : jobs) {
    if (job.true_time.empty()) return Error{"job \"" + job.id + "\" can run on no device"};
  }
  return Replay(objects, clock, jobs, options).run();
}

}  // namespace allox::emulator
