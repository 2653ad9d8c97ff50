#include "kubesim/kube_scheduler.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "core/log.h"
#include "core/thread_priority.h"
#include "extender_api/extender_client.h"
#include "kube/node_fit.h"
#include "kube/object_fields.h"
#include "kube/quantity.h"
#include "kubesim/attachment.h"
#include "kubesim/cluster_threads.h"
#include "kubesim/diagnosis.h"
#include "kubesim/event_broadcaster.h"
#include "kubesim/extender_client.h"
#include "kubesim/json_equal.h"
#include "kubesim/node_snapshot.h"

namespace allox::emulator {

using kube::member;
using kube::object_member;
using kube::string_member;
using nlohmann::json;

const char* scheduler_event_name(SchedulerEvent::Kind kind) {
  switch (kind) {
    case SchedulerEvent::Kind::kBound:
      return "bound";
    case SchedulerEvent::Kind::kUnschedulable:
      return "unschedulable";
    case SchedulerEvent::Kind::kMoved:
      return "moved";
    case SchedulerEvent::Kind::kPreempted:
      return "preempted";
    case SchedulerEvent::Kind::kBindFailed:
      return "bind failed";
    case SchedulerEvent::Kind::kError:
      return "error";
  }
  return "?";
}

namespace {

using Resources = std::map<std::string, double>;

Resources parse_resources(const json& map) {
  Resources out;
  if (!map.is_object()) return out;
  for (const auto& [name, quantity] : map.items()) {
    if (!quantity.is_string() && !quantity.is_number()) continue;
    auto value =
        kube::parse_quantity(quantity.is_string() ? quantity.get<std::string>() : quantity.dump());
    if (value) out[name] = *value;
  }
  return out;
}

// A container's requests, limits standing in for missing ones (the API server defaults them).
Resources container_requests(const json& container) {
  const json& resources = object_member(container, "resources");
  Resources requests = parse_resources(object_member(resources, "requests"));
  for (const auto& [name, value] : parse_resources(object_member(resources, "limits")))
    requests.try_emplace(name, value);
  return requests;
}

// Requests of a pod as the scheduler computes them: the sum over containers, at least the
// largest init container, plus spec.overhead and one "pods". (Sidecar init containers are off
// in v1.28: the API server drops their restartPolicy, so every init container runs alone.)
Resources pod_requests(const json& pod) {
  Resources sum;
  const json& spec = object_member(pod, "spec");
  for (const json& c : member(spec, "containers")) {
    for (const auto& [name, value] : container_requests(c)) sum[name] += value;
  }
  for (const json& c : member(spec, "initContainers")) {
    for (const auto& [name, value] : container_requests(c)) sum[name] = std::max(sum[name], value);
  }
  for (const auto& [name, value] : parse_resources(object_member(spec, "overhead")))
    sum[name] += value;
  sum["pods"] = 1;
  return sum;
}

// Every resource a pod names in requests or limits (extender interest).
std::set<std::string> named_resources(const json& pod) {
  std::set<std::string> out;
  const json& spec = object_member(pod, "spec");
  for (const char* list : {"containers", "initContainers"}) {
    for (const json& c : member(spec, list)) {
      const json& resources = object_member(c, "resources");
      for (const char* kind : {"requests", "limits"}) {
        for (const auto& [name, value] : object_member(resources, kind).items()) out.insert(name);
      }
    }
  }
  return out;
}

// Keys of an extender's answer are Go field names; Go's decoder matches them case-insensitively.
const json* find_key_ci(const json& object, const std::string& key) {
  if (!object.is_object()) return nullptr;
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (it.key().size() == key.size() &&
        std::equal(key.begin(), key.end(), it.key().begin(),
                   [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
      return &*it;
    }
  }
  return nullptr;
}

struct PodInfo {
  ObjectPtr object;
  std::string ns, name, uid, node, nominated, scheduler;
  ResourceAmounts requests;  // NodeSnapshot's ids, milli-units
  std::set<std::string> resource_names;
  // spec.nodeSelector, required node affinity and spec.tolerations
  kube::PodPlacement placement;
  int priority = 0;
  bool terminal = false, gated = false, deleting = false;
  bool assumed = false;  // bound by us, not yet seen bound in the store
};

PodInfo read_pod(const ObjectPtr& object, NodeSnapshot& snapshot) {
  PodInfo pod;
  pod.object = object;
  const json& meta = object_member(*object, "metadata");
  const json& spec = object_member(*object, "spec");
  const json& status = object_member(*object, "status");
  pod.ns = string_member(meta, "namespace");
  pod.name = string_member(meta, "name");
  pod.uid = string_member(meta, "uid");
  pod.node = string_member(spec, "nodeName");
  pod.nominated = string_member(status, "nominatedNodeName");
  pod.scheduler = string_member(spec, "schedulerName");
  pod.priority = spec.contains("priority") && spec["priority"].is_number_integer()
                     ? spec["priority"].get<int>()
                     : 0;
  const std::string phase = string_member(status, "phase");
  pod.terminal = phase == "Succeeded" || phase == "Failed";
  pod.gated = spec.contains("schedulingGates") && spec["schedulingGates"].is_array() &&
              !spec["schedulingGates"].empty();
  pod.deleting = meta.contains("deletionTimestamp");
  pod.requests = snapshot.amounts(pod_requests(*object));
  pod.resource_names = named_resources(*object);
  pod.placement = kube::PodPlacement(*object);
  return pod;
}

// kube-scheduler's isPodUpdated: anything but resourceVersion, generation, managedFields,
// finalizers and status changed.
// Compared in place: this runs for every change of every pending pod.
bool pod_updated(const json& before, const json& after) {
  if (!before.is_object() || !after.is_object()) return before != after;
  if (!equal_except(before, after, {"status", "metadata"})) return true;
  auto a = before.find("metadata"), b = after.find("metadata");
  if ((a == before.end()) != (b == after.end())) return true;
  return a != before.end() &&
         !equal_except(*a, *b, {"resourceVersion", "generation", "managedFields", "finalizers"});
}

std::set<std::string> ignored_by_extenders(const SchedulerConfiguration& config) {
  std::set<std::string> out;
  for (const ExtenderStanza& e : config.extenders)
    out.insert(e.ignored_by_scheduler.begin(), e.ignored_by_scheduler.end());
  return out;
}

// The back-off comes from the operator's KubeSchedulerConfiguration; the other timings are
// kube-scheduler's built-in constants (tests may shorten them).
QueueTimings timings_of(const KubeSchedulerOptions& options) {
  QueueTimings timings = options.timings;
  timings.initial_backoff = static_cast<double>(options.config.pod_initial_backoff_seconds);
  timings.max_backoff = static_cast<double>(options.config.pod_max_backoff_seconds);
  return timings;
}

}  // namespace

struct KubeScheduler::Impl {
  ApiObjects& objects;
  const SimClock& clock;
  KubeSchedulerOptions options;
  SchedulingQueue queue;
  std::vector<std::unique_ptr<extender::ExtenderClient>> clients;
  std::set<std::string> profiles;
  std::mt19937_64 rng;

  std::map<std::string, PodInfo> pods;  // namespace/name
  // Keys of pods with status.nominatedNodeName: nominated_on() runs for every node of every
  // attempt, so it must not walk all pods (at 5,000 nodes and 100,000 pods that was 5e8 steps).
  std::set<std::string> nominated_pods;
  NodeSnapshot nodes;
  std::size_t next_start_node = 0;

  mutable std::mutex changes_mu;
  std::condition_variable changes_cv;
  std::deque<Change> changes;
  bool stopping = false;
  // Guarded by changes_mu: the thread waits with nothing to try before next_due (simulated).
  bool waiting = false, woken = false;
  double next_due = 0;
  std::optional<Attachment> attachment;    // taken by start(), released by stop()
  std::optional<EventBroadcaster> events;  // with record_events, from start() to stop()
  std::thread thread;

  // The binding cycle (guarded by changes_mu): the scheduling thread queues an assumed pod's
  // bind and goes on with the next pod; binder threads run the binds, each with its own
  // extender connections, and hand the outcomes back to the scheduling thread.
  struct BindJob {
    std::string key;
    PodInfo pod;  // as assumed
    std::string host;
    std::string error;  // set by the binder; empty: bound
  };
  std::deque<BindJob> bind_jobs, bind_outcomes;
  std::size_t binds_in_flight = 0;  // queued, running, or finished and not yet handled
  std::condition_variable binders_cv;
  std::vector<std::thread> binders;

  mutable std::mutex stats_mu;
  SchedulerStats stats;
  KubeScheduler::QueueSizes sizes;

  Impl(ApiObjects& o, const SimClock& c, KubeSchedulerOptions opts)
      : objects(o),
        clock(c),
        options(std::move(opts)),
        queue(timings_of(options)),
        rng(options.seed),
        nodes(ignored_by_extenders(options.config)) {
    for (const std::string& name : options.config.scheduler_names) profiles.insert(name);
    for (const ExtenderStanza& e : options.config.extenders) {
      clients.push_back(
          std::make_unique<extender::ExtenderClient>(e.url_prefix, "", e.http_timeout));
    }
  }

  void emit(SchedulerEvent::Kind kind, const std::string& pod, const std::string& node,
            const std::string& message) {
    if (options.observer) options.observer({kind, clock.now(), pod, node, message});
  }

  // ---- cache --------------------------------------------------------------------------

  void release(const PodInfo& pod) {
    if (pod.node.empty()) return;
    nodes.remove_pod(pod.node, pod.ns + "/" + pod.name, pod.requests);
  }

  void occupy(const PodInfo& pod) {
    if (pod.node.empty()) return;
    nodes.add_pod(pod.node, pod.ns + "/" + pod.name, pod.priority, pod.requests);
  }

  void on_pod(const Change& change, double now) {
    const json& any = change.after ? *change.after : *change.before;
    const std::string key = string_member(object_member(any, "metadata"), "namespace") + "/" +
                            string_member(object_member(any, "metadata"), "name");
    auto existing = pods.find(key);
    const bool was_holding =
        existing != pods.end() && !existing->second.node.empty() && !existing->second.terminal;
    if (change.type == "DELETED") {
      if (existing != pods.end()) {
        release(existing->second);
        pods.erase(existing);
      }
      nominated_pods.erase(key);
      queue.remove(key);
      if (was_holding) moved(ClusterEvent::kAssignedPodDelete, now);
      return;
    }
    PodInfo pod = read_pod(change.after, nodes);
    if (pod.nominated.empty()) {
      nominated_pods.erase(key);
    } else {
      nominated_pods.insert(key);
    }
    if (!pod.node.empty()) {
      queue.remove(key);
      if (existing != pods.end()) release(existing->second);
      pods[key] = pod;
      if (!pod.terminal) {
        occupy(pods[key]);
      } else if (was_holding) {
        // A finished pod frees its node: kube-scheduler sees it as AssignedPodDelete.
        moved(ClusterEvent::kAssignedPodDelete, now);
      }
      return;
    }
    const bool ours = profiles.count(pod.scheduler) > 0;
    const bool updated =
        existing != pods.end() && change.before && pod_updated(*change.before, *change.after);
    if (existing != pods.end() && existing->second.assumed) {
      // Our bind is in flight: the pod keeps its assumed node (and the resources it holds there)
      // until the store shows it bound or the bind fails.
      pod.assumed = true;
      pod.node = existing->second.node;
    }
    pods[key] = pod;
    if (!ours || pod.terminal || pod.deleting) {
      queue.remove(key);
      return;
    }
    if (pod.assumed) return;  // our bind is in flight; the store has not caught up
    if (!queue.contains(key)) {
      queue.add(key, pod.priority, pod.gated, now);
    } else if (updated) {
      if (queue.update(key, pod.priority, pod.gated, now)) {
        emit(SchedulerEvent::Kind::kMoved, key, "", "PodUpdate");
      }
    }
  }

  void on_node(const Change& change, double now) {
    const json& any = change.after ? *change.after : *change.before;
    const std::string name = string_member(object_member(any, "metadata"), "name");
    if (change.type == "DELETED") {
      nodes.remove(name);
      return;
    }
    const bool labels_changed =
        change.before && object_member(object_member(*change.before, "metadata"), "labels") !=
                             object_member(object_member(*change.after, "metadata"), "labels");
    kube::NodeFacts facts = kube::node_facts(*change.after);
    const bool changed =
        nodes.upsert(
            name, change.after,
            parse_resources(object_member(object_member(*change.after, "status"), "allocatable")),
            facts.unschedulable, std::move(facts.taints)) ||
        change.type == "ADDED" || labels_changed;
    if (changed) {
      moved(change.type == "ADDED" ? ClusterEvent::kNodeAdd : ClusterEvent::kNodeUpdate, now);
    }
  }

  void moved(ClusterEvent event, double now) {
    for (const std::string& key : queue.move_all(event, now)) {
      emit(SchedulerEvent::Kind::kMoved, key, "", cluster_event_name(event));
    }
  }

  // The store's changes, then the binds that ended (a bind's own change usually comes first).
  void drain() {
    std::deque<Change> batch;
    std::deque<BindJob> ended;
    {
      std::lock_guard lock(changes_mu);
      batch.swap(changes);
      ended.swap(bind_outcomes);
    }
    const double now = clock.now();
    for (const Change& change : batch) {
      if (change.resource == &pods_resource()) on_pod(change, now);
      if (change.resource == &nodes_resource()) on_node(change, now);
    }
    for (const BindJob& job : ended) finish_bind(job);
    if (!ended.empty()) {
      std::lock_guard lock(changes_mu);
      binds_in_flight -= ended.size();
    }
  }

  // ---- status and events -------------------------------------------------------------

  void patch_status(const PodInfo& pod, json status) {
    (void)objects.patch(pods_resource(), pod.ns, pod.name, PatchType::kStrategicMerge,
                        json{{"status", std::move(status)}}.dump(), true);
  }

  // Handed to the events broadcaster (event_broadcaster.h): the cycle does not wait for the store.
  void record_event(const PodInfo& pod, const std::string& type, const std::string& reason,
                    const std::string& note) {
    if (!events) return;
    events->record({pod.ns, pod.name, pod.uid, type, reason, note, clock.now()});
  }

  // ---- filters -----------------------------------------------------------------------

  // The pods nominated to a node that count against `pod` there (kube-scheduler's
  // RunFilterPluginsWithNominatedPods): not bound, not finished, not the pod itself, and at
  // least as important. Handed to the snapshot for the coming filter pass; few pods are ever
  // nominated, so this is not a walk of all pods.
  void count_nominated_for(const PodInfo& pod, const std::string& self) {
    std::vector<NodeSnapshot::Nominated> counted;
    for (const std::string& key : nominated_pods) {
      auto found = pods.find(key);
      if (found == pods.end()) continue;
      const PodInfo& other = found->second;
      if (key == self || !other.node.empty() || other.terminal || other.priority < pod.priority)
        continue;
      counted.push_back({other.nominated, &other.requests});
    }
    nodes.set_nominated(counted);
  }

  bool interested(const ExtenderStanza& e, const PodInfo& pod) const {
    if (e.managed_resources.empty()) return true;
    for (const std::string& r : pod.resource_names)
      if (e.managed_resources.count(r)) return true;
    return false;
  }

  json extender_args(const ExtenderStanza& e, const PodInfo& pod,
                     const std::vector<std::string>& names) const {
    json body = {{"Pod", wire_object(*pod.object)}};
    if (e.node_cache_capable) {
      body["Nodes"] = nullptr;
      body["NodeNames"] = names;
    } else {
      json items = json::array();
      for (const std::string& name : names) items.push_back(wire_object(*nodes.find(name)->object));
      body["Nodes"] = {{"metadata", json::object()}, {"items", std::move(items)}};
      body["NodeNames"] = nullptr;
    }
    return body;
  }

  std::string extender_args_body(const ExtenderStanza& e, const PodInfo& pod,
                                 const std::vector<std::string>& names) const {
    if (e.node_cache_capable) return emulator::extender_args_body(*pod.object, names, nullptr);
    std::vector<const json*> objects;
    objects.reserve(names.size());
    for (const std::string& name : names) objects.push_back(nodes.find(name)->object.get());
    return emulator::extender_args_body(*pod.object, names, &objects);
  }

  Expected<extender::FilterResult> filter(std::size_t i, std::string body) {
    const ExtenderStanza& e = options.config.extenders[i];
    if (!options.filter_answer) return post_filter(*clients[i], e.filter_verb, std::move(body));
    auto text = options.filter_answer(i, body);
    if (!text) return text.error();
    return extender::parse_filter_result(*text);
  }

  // Extenders' /filter over `feasible`; false on an extender fault (error set).
  bool extenders_filter(const PodInfo& pod, std::vector<std::string>& feasible, Diagnosis& d,
                        std::string& error) {
    for (std::size_t i = 0; i < options.config.extenders.size(); ++i) {
      const ExtenderStanza& e = options.config.extenders[i];
      if (feasible.empty()) break;
      if (e.filter_verb.empty() || !interested(e, pod)) continue;
      const auto begin = std::chrono::steady_clock::now();
      auto answer = filter(i, extender_args_body(e, pod, feasible));
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
      {
        std::lock_guard lock(stats_mu);
        ++stats.filter_calls;
        stats.filter_seconds.push_back(seconds);
        stats.filter_nodes.push_back(feasible.size());
      }
      std::string fault = answer ? answer->error : answer.message();
      // The new feasible list is what the answer keeps, nothing else (HTTPExtender.Filter); a
      // node it leaves out and names in neither failed map is dropped with no status.
      Expected<std::vector<std::string>> kept =
          fault.empty() ? filter_kept(*answer, e.node_cache_capable, feasible, e.url_prefix)
                        : Expected<std::vector<std::string>>(std::vector<std::string>{});
      if (fault.empty() && !kept) fault = kept.message();
      if (!fault.empty()) {
        if (e.ignorable) continue;
        error = "extender " + e.url_prefix + " /" + e.filter_verb + ": " + fault;
        return false;
      }
      // The failed maps only feed the diagnosis, read when no node is left (the FitError and
      // preemption's choice of nodes).
      d.add_extender_failures(answer->failed_nodes, answer->failed_and_unresolvable_nodes);
      feasible = std::move(*kept);
    }
    return true;
  }

  std::size_t nodes_to_find(std::size_t all) const {
    int percentage = options.config.percentage_of_nodes_to_score;
    if (all < 100 || percentage >= 100) return all;
    if (percentage <= 0) {
      percentage = 50 - static_cast<int>(all / 125);
      if (percentage < 5) percentage = 5;
    }
    std::size_t n = all * static_cast<std::size_t>(percentage) / 100;
    return std::max<std::size_t>(n, 100);
  }

  // Nodes passing the in-tree filters; the others' reasons counted in d. `only`: evaluate just
  // this node (the nominated one), without moving the rotation.
  std::vector<std::string> find_fit(const PodInfo& pod, const std::string& key,
                                    const std::string& only, Diagnosis& d) {
    count_nominated_for(pod, key);
    std::vector<std::string> feasible;
    if (!only.empty()) {
      const std::size_t i = nodes.index_of(only);
      if (i == nodes.size()) return feasible;
      NodeSnapshot::Failures failures;
      if (nodes.fits(i, pod.requests, &failures, &pod.placement)) feasible.push_back(only);
      failures.flush(nodes, d);
      return feasible;
    }
    const std::size_t want = nodes_to_find(nodes.size());
    feasible.reserve(std::min(want, nodes.size()));
    const std::size_t processed =
        nodes.find_fit(pod.requests, next_start_node, want, feasible, d, &pod.placement);
    if (nodes.size() > 0) next_start_node = (next_start_node + processed) % nodes.size();
    return feasible;
  }

  // ---- preemption (DefaultPreemption + extenders' /preempt) ----------------------------

  // DefaultPreemption's PostFilter after a failed cycle. True with a node and its victims when
  // preemption found a place; else `message` is its status message, empty when it has none,
  // and `clear_nomination` says whether kube-scheduler clears the pod's nominatedNodeName
  // (it does when no node has candidates, not when the pod is not eligible).
  bool preempt(const PodInfo& pod, const std::string& key, const Diagnosis& d,
               std::string& node_out, std::vector<std::string>& victims_out, std::string& message,
               bool& clear_nomination) {
    clear_nomination = false;
    if (object_member(*pod.object, "spec").value("preemptionPolicy", "") == "Never") {
      message = "preemption: not eligible due to preemptionPolicy=Never.";
      return false;
    }
    if (const NodeSnapshot::Node* nominated = nodes.find(pod.nominated);
        nominated != nullptr && !d.unresolvable(nominated->name) &&
        !nodes.unresolvable(nodes.index_of(nominated->name), pod.placement)) {
      for (const auto& [other, priority] : nominated->pods) {
        auto found = pods.find(other);
        if (priority < pod.priority && found != pods.end() && found->second.deleting) {
          message = "preemption: not eligible due to a terminating pod on the nominated node.";
          return false;
        }
      }
    }
    (void)key;
    // The dry run on every node where preemption might help; each other node's status is
    // counted for the FitError kube-scheduler reports when no node has candidates.
    Diagnosis statuses;
    NodeSnapshot::Failures failures;
    std::map<std::string, std::vector<std::string>> candidates;  // node -> victim keys
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const NodeSnapshot::Node& node = nodes[i];
      // UnschedulableAndUnresolvable in the filters (NodeUnschedulable's, TaintToleration's and
      // NodeAffinity's rejections): no victim can change that.
      if (d.unresolvable(node.name) || nodes.unresolvable(i, pod.placement)) {
        statuses.add("Preemption is not helpful for scheduling");
        continue;
      }
      if (node.priorities.empty() || node.priorities.begin()->first >= pod.priority) {
        statuses.add("No preemption victims found for incoming pod");
        continue;
      }
      std::vector<std::string> lower;
      for (const auto& [p, priority] : node.pods)
        if (priority < pod.priority) lower.push_back(p);
      std::stable_sort(lower.begin(), lower.end(), [&](const std::string& a, const std::string& b) {
        return pods.at(a).priority > pods.at(b).priority;  // reprieve the important first
      });
      std::vector<const ResourceAmounts*> freed;
      for (const std::string& p : lower) freed.push_back(&pods.at(p).requests);
      // The filters' reasons, when even every lower-priority pod gone is not enough.
      if (!nodes.fits_without(i, pod.requests, freed, &failures)) continue;
      std::vector<std::string> victims;
      std::vector<const ResourceAmounts*> gone = freed;
      for (std::size_t v = 0; v < lower.size(); ++v) {
        // Reprieve lower[v] when the pod still fits with it back.
        auto back = std::find(gone.begin(), gone.end(), freed[v]);
        gone.erase(back);
        if (!nodes.fits_without(i, pod.requests, gone)) {
          gone.push_back(freed[v]);
          victims.push_back(lower[v]);
        }
      }
      if (victims.empty()) {
        statuses.add("expected at least one victim pod on node \"" + node.name + "\"");
        continue;
      }
      candidates[node.name] = victims;
    }
    failures.flush(nodes, statuses);
    if (candidates.empty()) {
      message = "preemption: " + statuses.message(nodes.size());
      clear_nomination = true;
      return false;
    }
    for (std::size_t i = 0; i < options.config.extenders.size(); ++i) {
      const ExtenderStanza& e = options.config.extenders[i];
      if (e.preempt_verb.empty() || !interested(e, pod)) continue;
      json meta = json::object(), full = json::object();
      for (const auto& [name, victims] : candidates) {
        json uids = json::array(), objects_list = json::array();
        for (const std::string& v : victims) {
          uids.push_back({{"UID", pods.at(v).uid}});
          objects_list.push_back(wire_object(*pods.at(v).object));
        }
        meta[name] = {{"Pods", uids}, {"NumPDBViolations", 0}};
        full[name] = {{"Pods", objects_list}, {"NumPDBViolations", 0}};
      }
      json body = {{"Pod", wire_object(*pod.object)},
                   {"NodeNameToVictims", e.node_cache_capable ? json(nullptr) : full},
                   {"NodeNameToMetaVictims", e.node_cache_capable ? meta : json(nullptr)}};
      {
        std::lock_guard lock(stats_mu);
        ++stats.preempt_calls;
      }
      auto answer = clients[i]->post("/" + e.preempt_verb, body);
      if (!answer) {
        if (e.ignorable) continue;
        message = "preemption: " + answer.message();
        return false;
      }
      const json* kept = find_key_ci(
          *answer, e.node_cache_capable ? "NodeNameToMetaVictims" : "NodeNameToVictims");
      std::map<std::string, std::vector<std::string>> next;
      if (kept != nullptr && kept->is_object()) {
        for (const auto& [name, v] : kept->items())
          if (candidates.count(name)) next[name] = candidates[name];
      }
      candidates = std::move(next);
      if (candidates.empty()) break;
    }
    if (candidates.empty()) {
      message = "preemption: no candidate node for preemption";
      return false;
    }
    // Fewest, least important victims; then the node name.
    auto cost = [&](const std::vector<std::string>& victims) {
      int top = std::numeric_limits<int>::min();
      long sum = 0;
      for (const std::string& v : victims) {
        top = std::max(top, pods.at(v).priority);
        sum += pods.at(v).priority;
      }
      return std::make_tuple(top, sum, victims.size());
    };
    auto best = std::min_element(candidates.begin(), candidates.end(),
                                 [&](auto& a, auto& b) { return cost(a.second) < cost(b.second); });
    node_out = best->first;
    victims_out = best->second;
    return true;
  }

  // ---- scoring and binding -----------------------------------------------------------

  std::string select_host(const PodInfo& pod, const std::vector<std::string>& feasible) {
    std::map<std::string, double> score;
    const ResourceId scored[] = {nodes.resource("cpu"), nodes.resource("memory")};
    for (const std::string& name : feasible) {
      const NodeSnapshot::Node& node = *nodes.find(name);
      double total = 0;
      int counted = 0;
      for (const ResourceId r : scored) {
        const auto alloc = static_cast<double>(node.allocatable_of(r));
        if (!node.declares(r) || alloc <= 0) continue;
        double req = 0;
        for (const ResourceAmount& a : pod.requests)
          if (a.resource == r) req = static_cast<double>(a.milli);
        total +=
            std::max(0.0, alloc - static_cast<double>(node.requested_of(r)) - req) * 100 / alloc;
        ++counted;
      }
      score[name] = counted > 0 ? total / counted : 0;
    }
    for (std::size_t i = 0; i < options.config.extenders.size(); ++i) {
      const ExtenderStanza& e = options.config.extenders[i];
      if (e.prioritize_verb.empty() || !interested(e, pod)) continue;
      {
        std::lock_guard lock(stats_mu);
        ++stats.prioritize_calls;
      }
      auto answer = clients[i]->post("/" + e.prioritize_verb, extender_args(e, pod, feasible));
      if (!answer || !answer->is_array()) continue;  // kube-scheduler ignores prioritize faults
      for (const json& entry : *answer) {
        const json* host = find_key_ci(entry, "Host");
        const json* value = find_key_ci(entry, "Score");
        if (host == nullptr || !host->is_string() || value == nullptr || !value->is_number())
          continue;
        auto it = score.find(host->get<std::string>());
        if (it != score.end()) it->second += value->get<double>() * e.weight * 10;
      }
    }
    std::string best;
    double best_score = -1;
    int ties = 0;
    for (const std::string& name : feasible) {
      const double s = score[name];
      if (s > best_score) {
        best = name;
        best_score = s;
        ties = 1;
      } else if (s == best_score && std::uniform_int_distribution<int>(0, ties++)(rng) == 0) {
        best = name;
      }
    }
    return best;
  }

  std::vector<std::unique_ptr<extender::ExtenderClient>> make_clients() const {
    std::vector<std::unique_ptr<extender::ExtenderClient>> out;
    for (const ExtenderStanza& e : options.config.extenders) {
      out.push_back(std::make_unique<extender::ExtenderClient>(e.url_prefix, "", e.http_timeout));
    }
    return out;
  }

  // Runs on a binder thread: reads only the job's copy of the pod and the configuration.
  bool bind(std::vector<std::unique_ptr<extender::ExtenderClient>>& own, const PodInfo& pod,
            const std::string& node, std::string& error) {
    for (std::size_t i = 0; i < options.config.extenders.size(); ++i) {
      const ExtenderStanza& e = options.config.extenders[i];
      if (e.bind_verb.empty() || !interested(e, pod)) continue;
      const auto begin = std::chrono::steady_clock::now();
      auto answer = own[i]->post(
          "/" + e.bind_verb,
          {{"PodName", pod.name}, {"PodNamespace", pod.ns}, {"PodUID", pod.uid}, {"Node", node}});
      {
        std::lock_guard lock(stats_mu);
        ++stats.bind_calls;
        stats.bind_seconds.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
      }
      if (!answer) {
        error = answer.message();
        return false;
      }
      if (const json* err = find_key_ci(*answer, "Error");
          err != nullptr && err->is_string() && !err->get<std::string>().empty()) {
        error = err->get<std::string>();
        return false;
      }
      return true;
    }
    json binding = {{"apiVersion", "v1"},
                    {"kind", "Binding"},
                    {"metadata", {{"name", pod.name}, {"namespace", pod.ns}, {"uid", pod.uid}}},
                    {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
    auto result = objects.bind(pod.ns, pod.name, binding);
    if (auto* e = std::get_if<ApiError>(&result)) {
      error = e->message;
      return false;
    }
    return true;
  }

  void schedule_one(const std::string& key) {
    auto it = pods.find(key);
    if (it == pods.end() || !it->second.node.empty() || it->second.gated) {
      queue.remove(key);
      return;
    }
    PodInfo& pod = it->second;
    {
      std::lock_guard lock(stats_mu);
      ++stats.attempts;
    }
    Diagnosis d;
    std::string error;
    std::vector<std::string> feasible;
    bool evaluated = false;
    if (!pod.nominated.empty() && nodes.find(pod.nominated) != nullptr) {
      // kube-scheduler's evaluateNominatedNode fills the cycle's diagnosis: the full pass below
      // evaluates this node again and its in-tree status replaces this one (so those counts are
      // dropped, the plugins kept), but what the extenders said about it stays and is added to.
      Diagnosis in_tree;
      feasible = find_fit(pod, key, pod.nominated, in_tree);
      d.plugins = in_tree.plugins;
      // A fault here is only logged by kube-scheduler, which goes on with every node.
      if (!feasible.empty() && extenders_filter(pod, feasible, d, error)) {
        evaluated = !feasible.empty();
      }
      error.clear();
    }
    if (!evaluated) {
      feasible = find_fit(pod, key, "", d);
      if (!extenders_filter(pod, feasible, d, error)) return fail(key, error);
    }
    const double now = clock.now();
    if (feasible.empty()) {
      std::string nominated_node, post_filter;
      std::vector<std::string> victims;
      bool clear_nomination = false;
      const bool preempted =
          preempt(pod, key, d, nominated_node, victims, post_filter, clear_nomination);
      // FitError.Error(): the filters' histogram, then the preemption's message.
      const std::string message = d.message(nodes.size(), post_filter);
      json status = {{"conditions", json::array({{{"type", "PodScheduled"},
                                                  {"status", "False"},
                                                  {"reason", "Unschedulable"},
                                                  {"message", message},
                                                  {"lastProbeTime", nullptr},
                                                  {"lastTransitionTime", rfc3339(now)}}})}};
      if (preempted) {
        std::string names;
        for (const std::string& v : victims) {
          names += (names.empty() ? "" : ", ") + v;
          const PodInfo& victim = pods.at(v);
          (void)objects.remove(pods_resource(), victim.ns, victim.name, json(nullptr));
        }
        status["nominatedNodeName"] = nominated_node;
        emit(SchedulerEvent::Kind::kPreempted, key, nominated_node, names);
      } else if (clear_nomination && !pod.nominated.empty()) {
        status["nominatedNodeName"] = nullptr;  // a strategic merge patch's null removes it
      }
      {
        std::lock_guard lock(stats_mu);
        ++stats.unschedulable;
      }
      const PodInfo copy = pod;
      queue.unschedulable(key, d.plugins, now);
      patch_status(copy, status);
      record_event(copy, "Warning", "FailedScheduling", message);
      emit(SchedulerEvent::Kind::kUnschedulable, key, "", message);
      return;
    }
    const std::string host = feasible.size() == 1 ? feasible.front() : select_host(pod, feasible);
    // Assume: the node's resources are taken before the bind completes, and the next pod is
    // scheduled while this one binds (kube-scheduler binds in a goroutine).
    pod.node = host;
    pod.assumed = true;
    occupy(pod);
    std::size_t in_flight = 0;
    {
      std::lock_guard lock(changes_mu);
      bind_jobs.push_back({key, pod, host, ""});
      in_flight = ++binds_in_flight;
      binders_cv.notify_one();
    }
    std::lock_guard lock(stats_mu);
    stats.max_binds_in_flight = std::max(stats.max_binds_in_flight, in_flight);
  }

  // A binder thread: one bind at a time, on its own connections.
  void binder() {
    auto own = make_clients();
    std::unique_lock lock(changes_mu);
    while (true) {
      binders_cv.wait(lock, [&] { return stopping || !bind_jobs.empty(); });
      if (stopping) return;
      BindJob job = std::move(bind_jobs.front());
      bind_jobs.pop_front();
      lock.unlock();
      std::string error;
      if (!bind(own, job.pod, job.host, error) && error.empty()) error = "bind failed";
      job.error = std::move(error);
      lock.lock();
      bind_outcomes.push_back(std::move(job));
      changes_cv.notify_one();
    }
  }

  // On the scheduling thread, as kube-scheduler's binding cycle ends: a bound pod leaves the
  // queue; a failed bind forgets the assumed pod (its resources return to the node, which is an
  // AssignedPodDelete for the other pods) and backs the pod off, to be scheduled again.
  void finish_bind(const BindJob& job) {
    const std::string& key = job.key;
    // The pod as the cache holds it now, if it is still the one bound (a pod deleted and
    // re-created under the same name meanwhile is another pod, with its own queue entry).
    auto again = pods.find(key);
    const bool same = again != pods.end() && again->second.uid == job.pod.uid;
    if (job.error.empty()) {
      if (same) queue.remove(key);
      {
        std::lock_guard lock(stats_mu);
        ++stats.bound;
      }
      record_event(job.pod, "Normal", "Scheduled",
                   "Successfully assigned " + key + " to " + job.host);
      emit(SchedulerEvent::Kind::kBound, key, job.host, "");
      return;
    }
    if (same && again->second.assumed) {
      release(again->second);
      again->second.node.clear();
      again->second.assumed = false;
    }
    {
      std::lock_guard lock(stats_mu);
      ++stats.bind_failures;
    }
    record_event(job.pod, "Warning", "FailedScheduling", "Binding rejected: " + job.error);
    emit(SchedulerEvent::Kind::kBindFailed, key, job.host, job.error);
    // kube-scheduler moves every pod but the forgotten one (which is in flight, not parked).
    moved(ClusterEvent::kAssignedPodDelete, clock.now());
    if (!same) return;
    if (again->second.node.empty() && !again->second.terminal && !again->second.deleting) {
      queue.failed(key, clock.now());  // back-off, then scheduled again
    } else {
      queue.remove(key);  // bound after all (the store says so), finished or going
    }
  }

  void fail(const std::string& key, const std::string& error) {
    {
      std::lock_guard lock(stats_mu);
      ++stats.errors;
    }
    queue.failed(key, clock.now());
    emit(SchedulerEvent::Kind::kError, key, "", error);
  }

  void loop() {
    while (true) {
      drain();
      {
        std::lock_guard lock(stats_mu);
        sizes = {queue.active(), queue.backoff(), queue.unschedulable_count(), queue.gated()};
      }
      const double now = clock.now();
      auto key = queue.pop(now);
      for (const std::string& timed_out : queue.take_timed_out()) {
        {
          std::lock_guard lock(stats_mu);
          ++stats.timeouts;
        }
        emit(SchedulerEvent::Kind::kMoved, timed_out, "", "UnschedulableTimeout");
      }
      if (key) {
        schedule_one(*key);
        std::lock_guard lock(changes_mu);
        if (stopping) return;
        continue;
      }
      const double due = queue.next_due(now);
      auto wake = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
      if (due < std::numeric_limits<double>::infinity()) wake = std::min(wake, clock.wall_at(due));
      {
        std::lock_guard lock(changes_mu);
        waiting = true;
        next_due = due;
      }
      if (options.on_idle) options.on_idle();  // without the lock: it may call idle()
      std::unique_lock lock(changes_mu);
      changes_cv.wait_until(lock, wake, [&] {
        return stopping || !changes.empty() || !bind_outcomes.empty() || woken;
      });
      waiting = woken = false;
      if (stopping) return;
    }
  }
};

KubeScheduler::KubeScheduler(ApiObjects& objects, const SimClock& clock,
                             KubeSchedulerOptions options)
    : impl_(std::make_unique<Impl>(objects, clock, std::move(options))) {}

KubeScheduler::~KubeScheduler() {
  stop();
}

void KubeScheduler::start() {
  Impl& impl = *impl_;
  if (impl.thread.joinable()) return;
  impl.attachment.emplace(
      impl.objects,
      [&impl](const Change& change) {
        if (change.resource != &pods_resource() && change.resource != &nodes_resource()) return;
        std::lock_guard lock(impl.changes_mu);
        impl.changes.push_back(change);
        impl.changes_cv.notify_one();
      },
      impl.clock,
      [&impl] {
        std::lock_guard lock(impl.changes_mu);
        impl.woken = true;
        impl.changes_cv.notify_one();
      });
  if (impl.options.record_events) impl.events.emplace(impl.objects, impl.options.on_idle);
  impl.thread = std::thread([&impl] {
    become_scheduling_thread("emu-scheduler");
    impl.loop();
  });
  for (int i = 0; i < std::max(1, impl.options.parallel_binds); ++i) {
    impl.binders.emplace_back([&impl] {
      become_cluster_thread("emu-binder");
      impl.binder();
    });
  }
}

bool KubeScheduler::idle() const {
  std::lock_guard lock(impl_->changes_mu);
  return impl_->waiting && impl_->changes.empty() && impl_->binds_in_flight == 0 &&
         impl_->next_due > impl_->clock.now() && (!impl_->events || impl_->events->idle());
}

double KubeScheduler::next_due() const {
  std::lock_guard lock(impl_->changes_mu);
  return impl_->waiting ? impl_->next_due : impl_->clock.now();
}

void KubeScheduler::stop() {
  Impl& impl = *impl_;
  {
    std::lock_guard lock(impl.changes_mu);
    impl.stopping = true;
    impl.changes_cv.notify_all();
    impl.binders_cv.notify_all();
  }
  if (impl.thread.joinable()) impl.thread.join();
  for (std::thread& binder : impl.binders) binder.join();
  impl.binders.clear();
  if (impl.events) {
    std::lock_guard lock(impl.stats_mu);
    impl.stats.events_dropped = impl.events->dropped();
  }
  impl.events.reset();  // what the cycle recorded is written first
  impl.attachment.reset();
}

SchedulerStats KubeScheduler::stats() const {
  std::lock_guard lock(impl_->stats_mu);
  SchedulerStats stats = impl_->stats;
  if (impl_->events) stats.events_dropped = impl_->events->dropped();
  return stats;
}

KubeScheduler::QueueSizes KubeScheduler::queue_sizes() const {
  std::lock_guard lock(impl_->stats_mu);
  return impl_->sizes;
}

}  // namespace allox::emulator
