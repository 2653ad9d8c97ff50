#include "alloxd/cache/cluster_feed.h"

#include <atomic>
#include <cstdint>
#include <set>

#include "core/log.h"
#include "alloxd/control/cluster_api.h"  // node_inventory
#include "kube/pods.h"
#include "core/thread_priority.h"

namespace allox::extender {
namespace {

using nlohmann::json;

std::string key_of(const std::string& namespace_name, const std::string& name) {
  return namespace_name + "/" + name;
}

std::string string_at(const json& object, const char* a, const char* b) {
  if (!object.is_object()) return "";
  auto outer = object.find(a);
  if (outer == object.end() || !outer->is_object()) return "";
  auto inner = outer->find(b);
  return inner != outer->end() && inner->is_string() ? inner->get<std::string>() : "";
}

// The feed runs on the informer's thread: a change it cannot record has no caller to go back
// to, so it is logged (the next list or event tries again).
template <class T>
void log_unless_ok(const Expected<T>& outcome, std::string_view event, const JobVariant& variant) {
  if (outcome) return;
  log_warn(event, {{"job", variant.job_id},
                   {"pod", key_of(variant.pod.namespace_name, variant.pod.name)},
                   {"error", outcome.message()}});
}

}  // namespace

// kube-scheduler's FitError status (handleSchedulingFailure): PodScheduled=False, Unschedulable.
bool turned_away(const json& pod) {
  auto status = pod.find("status");
  if (status == pod.end() || !status->is_object()) return false;
  auto conditions = status->find("conditions");
  if (conditions == status->end() || !conditions->is_array()) return false;
  for (const json& c : *conditions) {
    if (c.is_object() && c.value("type", json()) == "PodScheduled" &&
        c.value("status", json()) == "False" && c.value("reason", json()) == "Unschedulable") {
      return true;
    }
  }
  return false;
}

Expected<ObservedPod> observe_pod(const json& pod, const DeviceMapping& devices,
                                  const Tenancy& tenancy) {
  auto identity = pod_identity(pod);
  if (!identity) return identity.error();
  ObservedPod observed;
  observed.ref = {identity->namespace_name, identity->name, identity->uid};
  auto variant = read_job_variant(pod, devices, tenancy);
  if (variant) {
    observed.variant = std::move(*variant);
  } else {
    observed.read_error = variant.message();
  }
  observed.gates = kube::scheduling_gates(pod);
  observed.affinity_room = kube::affinity_room(pod);
  observed.node_name = string_at(pod, "spec", "nodeName");
  observed.phase = string_at(pod, "status", "phase");
  observed.resource_version = string_at(pod, "metadata", "resourceVersion");
  observed.turned_away = turned_away(pod);
  const json* metadata = pod.is_object() && pod.contains("metadata") ? &pod["metadata"] : nullptr;
  if (metadata != nullptr && metadata->is_object()) {
    observed.nudge =
        string_at(*metadata, "annotations", std::string(kube::kNudgeAnnotation).c_str());
    auto deletion = metadata->find("deletionTimestamp");
    observed.deleting = deletion != metadata->end() && !deletion->is_null();
  }
  return observed;
}

// Counts a handler call in flight: the feed is busy from the moment it records what it saw
// until the planner has the change and the controller was told (ClusterFeed::busy).
class Handling {
 public:
  explicit Handling(std::atomic<int>& count) : count_(count) { ++count_; }
  ~Handling() { --count_; }
  Handling(const Handling&) = delete;
  Handling& operator=(const Handling&) = delete;

 private:
  std::atomic<int>& count_;
};

class ClusterFeed::PodHandler final : public kube::InformerHandler {
 public:
  PodHandler(Planner& planner, const ExtenderConfig& config, std::function<void()> on_change)
      : planner_(planner), config_(config), on_change_(std::move(on_change)) {}

  void on_replace(const std::vector<json>& objects) override {
    Handling handling(handling_);
    std::map<std::string, ObservedPod> seen;
    std::vector<PodPlacement> placements;
    for (const json& object : objects) {
      auto pod = ours(object);
      if (!pod) continue;
      placements.push_back({{pod->ref.name, pod->ref.namespace_name, pod->ref.uid},
                            true,
                            pod->node_name,
                            pod->phase});
      if (!pod->deleting) seen[key_of(pod->ref.namespace_name, pod->ref.name)] = *pod;
    }
    flush_pending();  // what the last watch saw comes before this list
    // Binds in doubt (intents a crash left behind) are settled from this full list first: a
    // pod with spec.nodeName was bound, one without (or absent) was not.
    planner_.reconcile_binds(placements, /*complete=*/true);
    std::vector<ObservedPod> gone;
    {
      std::lock_guard lock(mu_);
      for (const auto& [key, pod] : pods_) {
        if (!seen.count(key)) gone.push_back(pod);
      }
    }
    for (const ObservedPod& pod : gone) forget(pod);
    for (const auto& [key, pod] : seen) apply(pod);
    flush_pending();
    synced_.store(true);
    if (on_change_) on_change_();
  }

  void on_upsert(const json& object) override {
    Handling handling(handling_);
    if (auto pod = ours(object); pod && !pod->deleting) {
      apply(*pod);
    } else if (auto identity = pod_identity(object)) {
      // Being deleted, or no longer ours: gone, if we knew it.
      forget_if_known(identity->namespace_name, identity->name);
    }
    notify_unless_pending();
  }

  void on_delete(const json& object) override {
    Handling handling(handling_);
    auto identity = pod_identity(object);
    if (!identity) return;
    forget_if_known(identity->namespace_name, identity->name);
    notify_unless_pending();
  }

  void on_caught_up() override {
    Handling handling(handling_);
    if (flush_pending() && on_change_) on_change_();
  }

  // The controller is told once the planner has what the watch showed: with a burst pending,
  // that is when on_caught_up records it.
  void notify_unless_pending() {
    if (on_change_ && !pending_work_.load()) on_change_();
  }

  // forget() runs outside mu_: it calls into the planner, which must not wait on the feed.
  void forget_if_known(const std::string& namespace_name, const std::string& name) {
    std::optional<ObservedPod> known;
    {
      std::lock_guard lock(mu_);
      auto it = pods_.find(key_of(namespace_name, name));
      if (it != pods_.end()) known = it->second;
    }
    if (known) forget(*known);
  }

  bool synced() const { return synced_.load(); }
  bool busy() const { return handling_.load() > 0 || pending_work_.load(); }
  std::map<std::string, ObservedPod> pods() const {
    std::lock_guard lock(mu_);
    return pods_;
  }
  std::vector<std::string> sync_pods(PodMirror& mirror, std::vector<std::string>* changed) {
    std::lock_guard lock(mu_);
    std::vector<std::string> gone;
    if (mirror.generation == 0 || mirror.generation != generation_) {
      for (const auto& [key, pod] : mirror.pods) {
        if (!pods_.count(key)) gone.push_back(key);
      }
      mirror.pods = pods_;
      if (changed != nullptr) {
        for (const auto& [key, pod] : pods_) changed->push_back(key);
      }
    } else {
      for (const std::string& key : dirty_) {
        if (auto it = pods_.find(key); it != pods_.end()) {
          mirror.pods.insert_or_assign(key, it->second);
          if (changed != nullptr) changed->push_back(key);
        } else if (mirror.pods.erase(key) > 0) {
          gone.push_back(key);
        }
      }
    }
    dirty_.clear();
    mirror.generation = ++generation_;
    return gone;
  }
  std::optional<std::string> watched_job(const std::string& key) const {
    std::lock_guard lock(mu_);
    auto it = pods_.find(key);
    if (it == pods_.end()) return std::nullopt;
    return it->second.variant ? it->second.variant->job_id : std::string();
  }

 private:
  std::optional<ObservedPod> ours(const json& object) const {
    if (!config_.scheduler_name.empty() &&
        string_at(object, "spec", "schedulerName") != config_.scheduler_name) {
      return std::nullopt;  // another scheduler's pod (the field selector should have kept it out)
    }
    auto pod = observe_pod(object, config_.devices, config_.tenancy);
    if (!pod) return std::nullopt;
    return *pod;
  }

  // Where the pod's job stands in the book, as far as this pod is concerned.
  enum class Standing { kUnknown, kWaiting, kRunsAsThisPod, kRunsAsAnother, kDone };
  Standing standing(const ObservedPod& pod) const {
    if (!pod.variant) return Standing::kUnknown;
    return planner_.read([&](const JobBook& book) {
      const BookJob* job = book.job(pod.variant->job_id);
      if (job == nullptr) return Standing::kUnknown;
      switch (job->record.phase) {
        case JobPhase::kQueued:
          return Standing::kWaiting;
        case JobPhase::kRunning:
          return job->record.pod_namespace == pod.ref.namespace_name &&
                         job->record.pod_name == pod.ref.name
                     ? Standing::kRunsAsThisPod
                     : Standing::kRunsAsAnother;
        case JobPhase::kDone:
        case JobPhase::kRemoved:  // an admin removed it: its pods are refused, never run
          return Standing::kDone;
      }
      return Standing::kUnknown;
    });
  }

  void apply(const ObservedPod& pod) {
    std::string key = key_of(pod.ref.namespace_name, pod.ref.name);
    {
      std::lock_guard lock(mu_);
      pods_[key] = pod;
      mark_dirty(key);
    }
    if (!pod.variant) return;
    const JobVariant& variant = *pod.variant;
    // A pod whose registration is pending is read from the book only once the book has it.
    if (pending_keys_.count(key) > 0) flush_pending();
    Standing now = standing(pod);
    if (pod.phase == "Succeeded" || pod.phase == "Failed") {
      // The book does not show a pending completion yet: the set keeps it to one.
      if (now == Standing::kRunsAsThisPod &&
          pending_completion_jobs_.insert(variant.job_id).second) {
        pending_completions_.push_back(variant);
        pending_work_.store(true);
      }
      return;
    }
    if (!pod.node_name.empty()) {
      // Bound (by our /bind, or before a restart): the job runs there.
      if (now == Standing::kUnknown || now == Standing::kWaiting) {
        flush_pending();  // the start may take a machine a pending completion frees
        auto registered = planner_.register_variant(variant, Durability::kWritten);
        log_unless_ok(registered, "could not record a bound pod", variant);
        if (registered) {
          log_unless_ok(planner_.record_start(variant, pod.node_name, -1, Durability::kWritten),
                        "could not record a start", variant);
        }
      }
      return;
    }
    // Waiting for a decision: a variant of its job. A late variant of a job that already runs
    // or ran stays out of the book; the controller deletes it.
    if (now == Standing::kUnknown || now == Standing::kWaiting) {
      pending_.push_back(variant);
      pending_keys_.insert(std::move(key));
      pending_work_.store(true);
    }
  }

  // What the watch showed since the last call, recorded in bursts: the waiting pods registered
  // in one store transaction, then the ended jobs completed in another (a burst of pods costs
  // one commit and one hold of the planner's writers' lock, not one each). They touch different
  // jobs (a pod is waiting or its job runs), so registering first keeps the watch's order where
  // it matters. True when there was anything.
  bool flush_pending() {
    if (pending_.empty() && pending_completions_.empty()) return false;
    std::vector<JobVariant> batch;
    batch.swap(pending_);
    pending_keys_.clear();
    std::vector<JobVariant> ended;
    ended.swap(pending_completions_);
    pending_completion_jobs_.clear();
    if (!batch.empty()) {
      const std::vector<Status> outcomes = planner_.register_variants(batch, Durability::kWritten);
      for (std::size_t i = 0; i < batch.size(); ++i) {
        log_unless_ok(outcomes[i], "could not record a pod", batch[i]);
      }
    }
    if (!ended.empty()) {
      std::vector<std::string> ids;
      ids.reserve(ended.size());
      for (const JobVariant& variant : ended) ids.push_back(variant.job_id);
      const std::vector<Status> outcomes = planner_.complete_all(ids, Durability::kWritten);
      for (std::size_t i = 0; i < ended.size(); ++i) {
        log_unless_ok(outcomes[i], "could not record a completion", ended[i]);
      }
    }
    pending_work_.store(false);
    return true;
  }

  void forget(const ObservedPod& pod) {
    {
      std::lock_guard lock(mu_);
      std::string key = key_of(pod.ref.namespace_name, pod.ref.name);
      pods_.erase(key);
      mark_dirty(std::move(key));
    }
    if (!pod.variant) return;
    // A deleted pod's registration may be pending: the book must have it to forget it.
    const std::string key = key_of(pod.ref.namespace_name, pod.ref.name);
    if (pending_keys_.count(key) > 0) flush_pending();
    Standing now = standing(pod);
    if (now == Standing::kRunsAsThisPod) {
      if (pending_completion_jobs_.insert(pod.variant->job_id).second) {
        pending_completions_.push_back(*pod.variant);
        pending_work_.store(true);
      }
    } else if (now == Standing::kWaiting) {
      flush_pending();  // its other variants' registrations and the ends before it come first
      log_unless_ok(planner_.remove_variant(pod.variant->pod), "could not forget a deleted pod",
                    *pod.variant);
    }
  }

  // Under mu_. With no mirror syncing (a replica that does not lead), the keys would pile up:
  // past a bound the next sync copies everything instead.
  void mark_dirty(std::string key) {
    if (dirty_.size() > 2 * pods_.size() + 1024) {
      dirty_.clear();
      ++generation_;  // no mirror is current: each one's next sync is a full copy
    }
    dirty_.insert(std::move(key));
  }

  Planner& planner_;
  const ExtenderConfig& config_;
  std::function<void()> on_change_;
  mutable std::mutex mu_;
  std::map<std::string, ObservedPod> pods_;
  std::set<std::string> dirty_;   // keys written or erased since the last sync_pods
  std::uint64_t generation_ = 0;  // bumped by every sync_pods: the mirror it brought up to date
  std::atomic<bool> synced_{false};
  std::atomic<int> handling_{0};
  // Waiting pods whose registration is pending and jobs whose end is (informer thread only),
  // until flush_pending.
  std::vector<JobVariant> pending_;
  std::set<std::string> pending_keys_;
  std::vector<JobVariant> pending_completions_;
  std::set<std::string> pending_completion_jobs_;
  std::atomic<bool> pending_work_{false};  // either is not empty: the feed is busy
};

class ClusterFeed::NodeHandler final : public kube::InformerHandler {
 public:
  NodeHandler(Planner& planner, const ExtenderConfig& config, std::function<void()> on_listed)
      : planner_(planner), config_(config), on_listed_(std::move(on_listed)) {}

  void on_replace(const std::vector<json>& objects) override {
    Handling handling(handling_);
    {
      std::lock_guard lock(mu_);
      nodes_.clear();
      for (const json& node : objects) {
        if (auto inventory = node_inventory(node, config_.devices)) {
          nodes_[inventory->name] = *inventory;
        }
      }
      publish();
      synced_.store(true);
    }
    if (on_listed_) on_listed_();
  }
  void on_upsert(const json& node) override {
    Handling handling(handling_);
    std::lock_guard lock(mu_);
    auto inventory = node_inventory(node, config_.devices);
    if (!inventory) return;
    auto it = nodes_.find(inventory->name);
    if (it != nodes_.end() && it->second.machines == inventory->machines) return;  // status churn
    nodes_[inventory->name] = *inventory;
    publish();
  }
  void on_delete(const json& node) override {
    Handling handling(handling_);
    std::lock_guard lock(mu_);
    if (nodes_.erase(string_at(node, "metadata", "name")) > 0) publish();
  }
  bool synced() const { return synced_.load(); }
  bool busy() const { return handling_.load() > 0; }

 private:
  void publish() {
    std::vector<NodeInventory> nodes;
    nodes.reserve(nodes_.size());
    for (const auto& [name, node] : nodes_) nodes.push_back(node);
    planner_.set_inventory(nodes);
  }

  Planner& planner_;
  const ExtenderConfig& config_;
  std::function<void()> on_listed_;
  std::mutex mu_;
  std::map<std::string, NodeInventory> nodes_;
  std::atomic<bool> synced_{false};
  std::atomic<int> handling_{0};
};

class ClusterFeed::EachEventAlone final : public kube::InformerHandler {
 public:
  explicit EachEventAlone(kube::InformerHandler& inner) : inner_(inner) {}
  void on_replace(const std::vector<json>& objects) override { inner_.on_replace(objects); }
  void on_upsert(const json& object) override {
    inner_.on_upsert(object);
    inner_.on_caught_up();
  }
  void on_delete(const json& object) override {
    inner_.on_delete(object);
    inner_.on_caught_up();
  }
  void on_caught_up() override { inner_.on_caught_up(); }

 private:
  kube::InformerHandler& inner_;
};

ClusterFeed::ClusterFeed(kube::KubeClient& client, Planner& planner, const ExtenderConfig& config,
                         std::function<void()> on_change, Metrics* metrics)
    : pod_handler_(std::make_unique<PodHandler>(planner, config, std::move(on_change))),
      each_event_alone_(std::make_unique<EachEventAlone>(*pod_handler_)),
      node_handler_(std::make_unique<NodeHandler>(planner, config, [this] { start_pods(); })) {
  kube::InformerOptions pods;
  pods.path = "/api/v1/pods";
  if (!config.scheduler_name.empty()) {  // empty: every pod is allox's (config.h)
    pods.selector = "fieldSelector=" + kube::escape("spec.schedulerName=" + config.scheduler_name);
  }
  // The watch's threads never answer a request: alloxd's background class.
  pods.on_thread_start = [] { become_background_thread("allox-informer"); };
  kube::InformerOptions nodes;
  nodes.path = "/api/v1/nodes";
  nodes.on_thread_start = pods.on_thread_start;
  if (metrics != nullptr) {
    for (auto [options, collection] : {std::pair{&pods, Metrics::Collection::kPods},
                                       std::pair{&nodes, Metrics::Collection::kNodes}}) {
      options->on_list = [metrics, collection] { metrics->record_list(collection); };
      options->on_watch_end = [metrics, collection](const char* why) {
        metrics->record_watch_end(collection, why);
      };
    }
  }
  pod_informer_ = std::make_unique<kube::Informer>(client, pods, *pod_handler_);
  node_informer_ = std::make_unique<kube::Informer>(client, nodes, *node_handler_);
}

ClusterFeed::~ClusterFeed() {
  stop();
}

void ClusterFeed::start() {
  {
    std::lock_guard lock(start_mu_);
    stopped_ = false;
  }
  node_informer_->start();  // the pods follow once the nodes are listed (start_pods)
}

void ClusterFeed::start_pods() {
  std::lock_guard lock(start_mu_);
  if (stopped_ || pods_started_) return;
  pods_started_ = true;
  pod_informer_->start();
}

void ClusterFeed::stop() {
  {
    std::lock_guard lock(start_mu_);
    stopped_ = true;
  }
  pod_informer_->stop();
  node_informer_->stop();
  std::lock_guard lock(start_mu_);
  pods_started_ = false;
}

bool ClusterFeed::synced() const {
  return pod_handler_->synced() && node_handler_->synced();
}

bool ClusterFeed::busy() const {
  return pod_handler_->busy() || node_handler_->busy();
}

void ClusterFeed::relist() {
  pod_informer_->relist();
  node_informer_->relist();
}

std::map<std::string, ObservedPod> ClusterFeed::pods() const {
  return pod_handler_->pods();
}

std::vector<std::string> ClusterFeed::sync_pods(PodMirror& mirror,
                                                std::vector<std::string>* changed) {
  return pod_handler_->sync_pods(mirror, changed);
}

std::optional<std::string> ClusterFeed::watched_job(const std::string& namespace_name,
                                                    const std::string& name) const {
  return pod_handler_->watched_job(key_of(namespace_name, name));
}

kube::InformerHandler& ClusterFeed::pod_handler() {
  return *each_event_alone_;
}

kube::InformerHandler& ClusterFeed::pod_watch_handler() {
  return *pod_handler_;
}

kube::InformerHandler& ClusterFeed::node_handler() {
  return *node_handler_;
}

}  // namespace allox::extender
