#include "alloxd/cache/cluster_feed.h"

#include <atomic>
#include <cstdint>
#include <set>

#include "alloxd/cache/pod_handler.h"
#include "alloxd/control/cluster_api.h"  // node_inventory
#include "core/log.h"
#include "core/thread_priority.h"
#include "kube/jobs.h"
#include "kube/pods.h"

namespace allox::extender {
namespace feed {

std::string key_of(const std::string& namespace_name, const std::string& name) {
  return namespace_name + "/" + name;
}

std::string string_at(const nlohmann::json& object, const char* a, const char* b) {
  if (!object.is_object()) return "";
  auto outer = object.find(a);
  if (outer == object.end() || !outer->is_object()) return "";
  auto inner = outer->find(b);
  return inner != outer->end() && inner->is_string() ? inner->get<std::string>() : "";
}

}  // namespace feed

namespace {

using namespace feed;
using nlohmann::json;

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
  observed.pinned_node = kube::pinned_node(pod);
  observed.node_name = string_at(pod, "spec", "nodeName");
  observed.phase = string_at(pod, "status", "phase");
  observed.resource_version = string_at(pod, "metadata", "resourceVersion");
  observed.turned_away = turned_away(pod);
  observed.owner_job = job_owner(pod);
  const json* metadata = pod.is_object() && pod.contains("metadata") ? &pod["metadata"] : nullptr;
  if (metadata != nullptr && metadata->is_object()) {
    observed.nudge =
        string_at(*metadata, "annotations", std::string(kube::kNudgeAnnotation).c_str());
    auto deletion = metadata->find("deletionTimestamp");
    observed.deleting = deletion != metadata->end() && !deletion->is_null();
  }
  return observed;
}

kube::FieldSet observed_pod_fields() {
  return kube::FieldSet::only({
      // pod_identity, job_owner, the nudge, the deletion, the watch's own version
      "metadata.name", "metadata.namespace", "metadata.uid", "metadata.annotations",
      "metadata.ownerReferences", "metadata.resourceVersion", "metadata.deletionTimestamp",
      // ours(); read_job_variant (requests, and pod_device_types' selector and affinity);
      // scheduling_gates, affinity_room, pinned_node; the bind
      "spec.schedulerName", "spec.containers.resources", "spec.initContainers.resources",
      "spec.initContainers.restartPolicy", "spec.overhead", "spec.nodeSelector", "spec.affinity",
      "spec.schedulingGates", "spec.nodeName",
      // read_job_variant's placement (where the pod may go)
      "spec.tolerations",
      // phase, turned_away
      "status.phase", "status.conditions"});
}

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
    if (!inventory) {
      // A node that no longer reads (relabelled into two GPU models) offers nothing until fixed.
      log_warn("cluster feed: node left out of the inventory", {{"error", inventory.message()}});
      if (nodes_.erase(string_at(node, "metadata", "name")) > 0) publish();
      return;
    }
    auto it = nodes_.find(inventory->name);
    if (it != nodes_.end() && it->second == *inventory) return;  // status churn
    const std::string was_closed = it != nodes_.end() ? it->second.closed : "";
    if (inventory->closed != was_closed) {
      if (inventory->closed.empty()) {
        log_info("cluster feed: node open to new jobs again", {{"node", inventory->name}});
      } else {
        log_info("cluster feed: node takes no new job",
                 {{"node", inventory->name}, {"why", inventory->closed}});
      }
    }
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
    : job_handler_(std::make_unique<JobHandler>()),
      pod_handler_(
          std::make_unique<PodHandler>(planner, config, *job_handler_, std::move(on_change))),
      each_event_alone_(std::make_unique<EachEventAlone>(*pod_handler_)),
      node_handler_(std::make_unique<NodeHandler>(planner, config, [this] { start_jobs(); })) {
  job_handler_->set_on_change(
      [this](const std::string& job_key) { pod_handler_->job_seen(job_key); });
  job_handler_->set_on_listed([this] { start_pods(); });  // a no-op after the first call
  kube::InformerOptions pods;
  pods.path = "/api/v1/pods";
  if (!config.scheduler_name.empty()) {  // empty: every pod is allox's (config.h)
    pods.selector = "fieldSelector=" + kube::escape("spec.schedulerName=" + config.scheduler_name);
  }
  pods.fields = observed_pod_fields();
  // The watch's threads never answer a request: alloxd's background class.
  pods.on_thread_start = [] { become_background_thread("allox-informer"); };
  kube::InformerOptions nodes;
  nodes.path = "/api/v1/nodes";
  nodes.on_thread_start = pods.on_thread_start;
  kube::InformerOptions jobs;
  jobs.path = kube::kJobsPath;
  jobs.on_thread_start = pods.on_thread_start;
  jobs.on_list_failed = [this](const Status&) {
    if (!jobs_unlisted_.exchange(true)) {
      log_warn("cluster feed: batch/v1 Jobs cannot be listed; the pods are watched without them "
               "(a Job's pods wait until its Job is read)",
               {{"path", kube::kJobsPath}});
    }
    start_pods();
  };
  if (metrics != nullptr) {
    for (const auto& [options, kind] : {std::pair{&pods, Metrics::Collection::kPods},
                                         std::pair{&nodes, Metrics::Collection::kNodes}}) {
      const Metrics::Collection collection = kind;  // a lambda captures a variable, not a binding
      options->on_list = [metrics, collection] { metrics->record_list(collection); };
      options->on_watch_end = [metrics, collection](const char* why) {
        metrics->record_watch_end(collection, why);
      };
    }
  }
  pod_informer_ = std::make_unique<kube::Informer>(client, pods, *pod_handler_);
  node_informer_ = std::make_unique<kube::Informer>(client, nodes, *node_handler_);
  job_informer_ = std::make_unique<kube::Informer>(client, jobs, *job_handler_);
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

void ClusterFeed::start_jobs() {
  std::lock_guard lock(start_mu_);
  if (stopped_ || jobs_started_) return;
  jobs_started_ = true;
  job_informer_->start();
}

void ClusterFeed::start_pods() {
  std::lock_guard lock(start_mu_);
  if (stopped_ || pods_started_ || (!job_handler_->synced() && !jobs_unlisted_.load())) return;
  pods_started_ = true;
  pod_informer_->start();
}

void ClusterFeed::stop() {
  {
    std::lock_guard lock(start_mu_);
    stopped_ = true;
  }
  pod_informer_->stop();
  job_informer_->stop();
  node_informer_->stop();
  std::lock_guard lock(start_mu_);
  pods_started_ = false;
  jobs_started_ = false;
}

bool ClusterFeed::synced() const {
  return pod_handler_->synced() && node_handler_->synced() &&
         (job_handler_->synced() || jobs_unlisted_.load());
}

bool ClusterFeed::busy() const {
  return pod_handler_->busy() || node_handler_->busy();
}

void ClusterFeed::relist() {
  pod_informer_->relist();
  job_informer_->relist();
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

kube::InformerHandler& ClusterFeed::job_handler() {
  return *job_handler_;
}

}  // namespace allox::extender
