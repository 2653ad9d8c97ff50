#include "kubesim/api_objects.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "kube/object_fields.h"
#include "kubesim/job_objects.h"
#include "kubesim/json_equal.h"

namespace allox::emulator {

using kube::object_member;
using kube::string_member;
using nlohmann::json;

const ResourceType& pods_resource() {
  static const ResourceType type{"pods", "Pod", "v1", true};
  return type;
}
const ResourceType& nodes_resource() {
  static const ResourceType type{"nodes", "Node", "v1", false};
  return type;
}
const ResourceType& events_resource() {
  static const ResourceType type{"events", "Event", "v1", true};
  return type;
}
const ResourceType& events_v1_resource() {
  static const ResourceType type{"events", "Event", "events.k8s.io/v1", true};
  return type;
}
const ResourceType& leases_resource() {
  static const ResourceType type{"leases", "Lease", "coordination.k8s.io/v1", true};
  return type;
}

const ResourceType& jobs_resource() {
  static const ResourceType type{"jobs", "Job", "batch/v1", true};
  return type;
}

const ResourceType* find_resource(const std::string& api_version, const std::string& plural) {
  for (const ResourceType* type : {&pods_resource(), &nodes_resource(), &events_resource(),
                                   &events_v1_resource(), &leases_resource(), &jobs_resource()}) {
    if (type->api_version == api_version && type->plural == plural) return type;
  }
  return nullptr;
}

std::string WatchEvent::line() const {
  if (!raw.empty()) return raw + "\n";
  // The bytes of {"type":..,"object":..} dumped as one value (keys in byte order), written
  // around the stored object's own dump: the event is not built as a copy of the object.
  std::string out = "{\"object\":";
  out += object ? object->dump() : "null";
  out += ",\"type\":";
  out += json(type).dump();
  out += "}\n";
  return out;
}

namespace {

// Plural as error messages name it ("pods", "leases.coordination.k8s.io").
std::string qualified_plural(const ResourceType& type) {
  auto slash = type.api_version.find('/');
  if (slash == std::string::npos) return type.plural;
  return type.plural + "." + type.api_version.substr(0, slash);
}

std::string type_key(const ResourceType& type) {
  return type.api_version + "/" + type.plural;
}

std::string object_key(const ResourceType& type, const std::string& ns, const std::string& name) {
  return type.namespaced ? ns + "/" + name : name;
}

bool is_terminal(const json& pod) {
  std::string phase = string_member(object_member(pod, "status"), "phase");
  return phase == "Succeeded" || phase == "Failed";
}

// Whether an update keeps the parts of a pod spec it may not change (ValidatePodUpdate in
// v1.28, simplified to what clients of allox touch): all but container images,
// activeDeadlineSeconds, tolerations, and gates; on a pod gated before the update
// (`directives`: mutable pod scheduling directives, on by default since 1.27) also
// spec.nodeSelector and spec.affinity.nodeAffinity, whose changes scheduling_directive_error
// judges. Compared in place: no copy of either spec.
bool same_frozen_spec(const json& before, const json& after, bool directives) {
  if (!before.is_object() || !after.is_object()) return before == after;
  if (directives) {
    // ValidatePodUpdate's munging: the rest of spec.affinity (pod (anti-)affinity) stays frozen,
    // and an affinity holding nothing else reads as none.
    static const json none = json::object();
    auto a = before.find("affinity"), b = after.find("affinity");
    const json& old_affinity = a == before.end() || a->is_null() ? none : *a;
    const json& new_affinity = b == after.end() || b->is_null() ? none : *b;
    if (!equal_except(old_affinity, new_affinity, {"nodeAffinity"})) return false;
  }
  auto images_aside = [](const json& a, const json& b) {
    if (!a.is_array() || !b.is_array()) return a == b;
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      // An element that is not an object keeps its image key: equal_except compares it whole.
      if (!equal_except(a[i], b[i], {"image"})) return false;
    }
    return true;
  };
  if (directives ? !equal_except(before, after,
                                 {"schedulingGates", "activeDeadlineSeconds", "tolerations",
                                  "containers", "initContainers", "nodeSelector", "affinity"})
                 : !equal_except(before, after,
                                 {"schedulingGates", "activeDeadlineSeconds", "tolerations",
                                  "containers", "initContainers"})) {
    return false;
  }
  for (const char* list : {"containers", "initContainers"}) {
    auto a = before.find(list), b = after.find(list);
    if ((a == before.end()) != (b == after.end())) return false;
    if (a != before.end() && !images_aside(*a, *b)) return false;
  }
  return true;
}

// ValidatePodUpdate's checks of the scheduling directives a gated pod may change (v1.28,
// validateNodeSelectorMutation and validateNodeAffinityMutation): spec.nodeSelector may only
// gain keys; required node affinity may be set when it had no terms, else each term may only
// gain requirements (the list keeps its length and every term its requirements, in order).
// Preferred terms may change freely. The message is kube-apiserver's, with the value rendered
// as JSON where Go prints its own syntax. std::nullopt when the change is allowed.
std::optional<ApiError> scheduling_directive_error(const std::string& name, const json& before,
                                                   const json& after) {
  const json& old_selector = object_member(before, "nodeSelector");
  const json& new_selector = object_member(after, "nodeSelector");
  for (auto it = old_selector.begin(); it != old_selector.end(); ++it) {
    auto kept = new_selector.find(it.key());
    if (kept == new_selector.end() || *kept != *it) {
      return invalid("Pod", name, "spec.nodeSelector",
                     "Invalid value: " + new_selector.dump() +
                         ": only additions to spec.nodeSelector are allowed (no mutations or "
                         "deletions)");
    }
  }
  auto terms_of = [](const json& spec) -> const json& {
    static const json none = json::array();
    const json& required =
        object_member(object_member(object_member(spec, "affinity"), "nodeAffinity"),
                      "requiredDuringSchedulingIgnoredDuringExecution");
    auto terms = required.find("nodeSelectorTerms");
    return terms != required.end() && terms->is_array() ? *terms : none;
  };
  const json& old_terms = terms_of(before);
  if (old_terms.empty()) return std::nullopt;
  const json& new_terms = terms_of(after);
  const std::string path =
      "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
      "nodeSelectorTerms";
  if (old_terms.size() != new_terms.size()) {
    return invalid("Pod", name, path,
                   "Invalid value: " + new_terms.dump() +
                       ": no additions/deletions to non-empty NodeSelectorTerms list are allowed");
  }
  for (std::size_t i = 0; i < old_terms.size(); ++i) {
    for (const char* list : {"matchExpressions", "matchFields"}) {
      static const json none = json::array();
      auto o = old_terms[i].is_object() ? old_terms[i].find(list) : old_terms[i].end();
      auto n = new_terms[i].is_object() ? new_terms[i].find(list) : new_terms[i].end();
      const json& old_list = o != old_terms[i].end() && o->is_array() ? *o : none;
      const json& new_list = n != new_terms[i].end() && n->is_array() ? *n : none;
      bool prefix = old_list.size() <= new_list.size();
      for (std::size_t k = 0; prefix && k < old_list.size(); ++k)
        prefix = old_list[k] == new_list[k];
      if (!prefix) {
        return invalid("Pod", name, path + "[" + std::to_string(i) + "]",
                       "Invalid value: " + new_terms[i].dump() +
                           ": only additions are allowed (no mutations or deletions)");
      }
    }
  }
  return std::nullopt;
}

std::set<std::string> gate_names(const json& pod) {
  std::set<std::string> names;
  const json& spec = object_member(pod, "spec");
  auto gates = spec.find("schedulingGates");
  if (gates != spec.end() && gates->is_array()) {
    for (const json& gate : *gates) {
      if (gate.is_object()) names.insert(string_member(gate, "name"));
    }
  }
  return names;
}

// kube-apiserver's applySchedulingGatedCondition (pkg/registry/core/pod/strategy.go, since 1.27):
// a pod created with scheduling gates is stored with PodScheduled=False/SchedulingGated unless it
// already names a PodScheduled condition. The scheduler writes nothing for a gated pod: its
// SchedulingGates PreEnqueue plugin parks the pod without a cycle.
void mark_scheduling_gated(json& status, double now) {
  json& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = json::array();
  for (const json& condition : conditions)
    if (condition.is_object() && string_member(condition, "type") == "PodScheduled") return;
  conditions.push_back({{"type", "PodScheduled"},
                        {"status", "False"},
                        {"reason", "SchedulingGated"},
                        {"message", "Scheduling is blocked due to non-empty scheduling gates"},
                        {"lastProbeTime", nullptr},
                        {"lastTransitionTime", rfc3339(now)}});
}

}  // namespace

struct ApiObjects::State {
  struct Record {
    std::uint64_t rv = 0;
    const ResourceType* type = nullptr;
    std::string event;
    ObjectPtr object, previous;
  };

  Clock clock;
  mutable std::mutex mu;
  std::uint64_t rv = 1;
  std::uint64_t oldest = 1;  // history holds every record with rv > oldest
  std::uint64_t uid_counter = 0;
  std::map<std::string, std::map<std::string, ObjectPtr>> objects;  // type_key -> key -> object
  std::deque<Record> history;
  std::size_t history_limit = 2'000'000;
  std::vector<std::weak_ptr<WatchStream::State>> streams;
  std::map<int, std::function<void(const Change&)>> subscribers;
  int next_subscriber = 1;
  std::uint64_t bookmark_generation = 0;
  Admission admission;

  double now() const {
    if (clock) return clock();
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  std::string next_uid() {
    char buffer[48];
    ++uid_counter;
    std::snprintf(buffer, sizeof buffer, "%08llx-0000-4000-8000-%012llx",
                  static_cast<unsigned long long>(uid_counter & 0xffffffffULL),
                  static_cast<unsigned long long>(uid_counter));
    return buffer;
  }

  // Stores `object` (already carrying its new resourceVersion) and records the change.
  // Must hold mu.
  void commit(const ResourceType& type, const std::string& key, const std::string& event,
              ObjectPtr object, ObjectPtr previous) {
    auto& table = objects[type_key(type)];
    if (event == "DELETED") {
      table.erase(key);
    } else {
      table[key] = object;
    }
    history.push_back({rv, &type, event, object, previous});
    if (history.size() > history_limit) {
      oldest = history.front().rv;
      history.pop_front();
    }
    Change change{&type, event, event == "ADDED" ? nullptr : previous,
                  event == "DELETED" ? nullptr : object, rv};
    if (event == "DELETED") change.before = object;
    for (auto& [id, subscriber] : subscribers) subscriber(change);
    wake_watches(&type);
  }

  // Wakes the watch streams of `type` (every stream when null) waiting in next(). Only the
  // streams a change may concern are woken: a thread woken for nothing costs a context switch
  // each, and the API server serves a watch per thread. Must hold mu.
  void wake_watches(const ResourceType* type);

  // A copy of `object` stamped with the next resourceVersion. Must hold mu.
  json stamped(json object) {
    ++rv;
    object["metadata"]["resourceVersion"] = std::to_string(rv);
    return object;
  }

  // Replaces a stored object with `change(current)`, which runs without the lock (a pod's copy
  // and patch no longer hold every other writer and the watches up). Its result, an error
  // included, is kept only if the object is still the version it read; otherwise it runs again
  // on the newer one: each write applies to the latest version, in one order, as
  // kube-apiserver's GuaranteedUpdate retries against etcd. Must not hold mu.
  template <class Change>
  ApiResult<ObjectPtr> modify(const ResourceType& type, const std::string& key,
                              const std::string& name, Change&& change) {
    while (true) {
      ObjectPtr old;
      {
        std::lock_guard lock(mu);
        old = find(type, key);
      }
      if (!old) return not_found(qualified_plural(type), name);
      ApiResult<json> changed = change(*old);
      std::lock_guard lock(mu);
      if (find(type, key) != old) continue;  // written meanwhile: again, on the new version
      if (auto* error = std::get_if<ApiError>(&changed)) return *error;
      auto stored = std::make_shared<const json>(stamped(std::move(std::get<json>(changed))));
      commit(type, key, "MODIFIED", stored, old);
      return ObjectPtr(stored);
    }
  }

  ObjectPtr find(const ResourceType& type, const std::string& key) const {
    auto table = objects.find(type_key(type));
    if (table == objects.end()) return nullptr;
    auto it = table->second.find(key);
    return it == table->second.end() ? nullptr : it->second;
  }
};

struct WatchStream::State {
  std::shared_ptr<ApiObjects::State> store;
  std::condition_variable wake;  // with store->mu: a change of its type, or an end
  WatchRequest request;
  std::uint64_t position = 0;  // every record with rv <= position has been considered
  std::deque<WatchEvent> pending;
  std::uint64_t bookmarks_seen = 0;
  bool closed = false, broken = false;
};

void ApiObjects::State::wake_watches(const ResourceType* type) {
  for (const auto& weak : streams) {
    auto stream = weak.lock();
    if (stream && (type == nullptr || stream->request.resource == type)) stream->wake.notify_all();
  }
}

ApiObjects::ApiObjects(Clock clock) : state_(std::make_shared<State>()) {
  state_->clock = std::move(clock);
}

ApiObjects::~ApiObjects() {
  std::lock_guard lock(state_->mu);
  for (auto& weak : state_->streams) {
    if (auto stream = weak.lock()) stream->closed = true;
  }
  state_->subscribers.clear();
  state_->wake_watches(nullptr);
}

double ApiObjects::now() const {
  return state_->now();
}

std::uint64_t ApiObjects::resource_version() const {
  std::lock_guard lock(state_->mu);
  return state_->rv;
}

void ApiObjects::set_admission(Admission admission) {
  std::lock_guard lock(state_->mu);
  state_->admission = std::move(admission);
}

int ApiObjects::subscribe(std::function<void(const Change&)> subscriber, bool replay_existing) {
  std::lock_guard lock(state_->mu);
  if (replay_existing) {
    for (const auto& [type_name, table] : state_->objects) {
      for (const auto& [key, object] : table) {
        const ResourceType* type = find_resource(object->value("apiVersion", ""),
                                                 type_name.substr(type_name.rfind('/') + 1));
        subscriber({type, "ADDED", nullptr, object, state_->rv});
      }
    }
  }
  int id = state_->next_subscriber++;
  state_->subscribers[id] = std::move(subscriber);
  return id;
}

void ApiObjects::unsubscribe(int id) {
  std::lock_guard lock(state_->mu);
  state_->subscribers.erase(id);
}

std::vector<ObjectPtr> ApiObjects::objects(const ResourceType& type) const {
  std::lock_guard lock(state_->mu);
  std::vector<ObjectPtr> out;
  auto table = state_->objects.find(type_key(type));
  if (table == state_->objects.end()) return out;
  for (const auto& [key, object] : table->second) out.push_back(object);
  return out;
}

ApiResult<ObjectPtr> ApiObjects::create(const ResourceType& type, const std::string& ns,
                                        json object) {
  if (!object.is_object()) return bad_request("the request body is not a JSON object");
  if (!object.contains("metadata") || !object["metadata"].is_object())
    object["metadata"] = json::object();
  json& metadata = object["metadata"];
  const std::string body_ns = string_member(metadata, "namespace");
  if (type.namespaced && !body_ns.empty() && body_ns != ns) {
    return bad_request(
        "the namespace of the provided object does not match the namespace sent on the request");
  }
  // EnsureObjectNamespaceMatchesRequestNamespace: the request's namespace is the object's
  // before admission sees it (a webhook's namespaceSelector reads it).
  if (type.namespaced) metadata["namespace"] = ns;
  std::string name = string_member(metadata, "name");
  const std::string generate = string_member(metadata, "generateName");
  if (name.empty() && generate.empty()) {
    return invalid(type.kind, "", "metadata.name",
                   "Required value: name or generateName is required");
  }
  if (type.kind == "Job") {
    auto prepared = prepare_new_job(std::move(object));
    if (auto* error = std::get_if<ApiError>(&prepared)) return *error;
    object = std::move(std::get<json>(prepared));
  }
  if (type.kind == "Pod") {
    const json spec = object.value("spec", json::object());
    if (!spec.contains("containers") || !spec["containers"].is_array() ||
        spec["containers"].empty()) {
      return invalid("Pod", name, "spec.containers", "Required value");
    }
    // Admission runs before validation of gates, as in kube-apiserver (mutating, then validate).
    Admission admission;
    {
      std::lock_guard lock(state_->mu);
      admission = state_->admission;
    }
    if (admission) {
      auto admitted = admission(object);
      if (auto* error = std::get_if<ApiError>(&admitted)) return *error;
      object = std::move(std::get<json>(admitted));
    }
    const json& admitted_spec = object["spec"];
    if (!gate_names(object).empty() && !string_member(admitted_spec, "nodeName").empty()) {
      return invalid("Pod", name, "spec.nodeName",
                     "Forbidden: cannot be set until all schedulingGates have been cleared");
    }
  }
  std::lock_guard lock(state_->mu);
  json& meta = object["metadata"];
  if (name.empty()) {
    static const char* alphabet = "bcdfghjklmnpqrstvwxz2456789";
    std::uint64_t seed = state_->uid_counter * 2654435761ULL + state_->rv;
    name = generate;
    for (int i = 0; i < 5; ++i) {
      name.push_back(alphabet[seed % 27]);
      seed /= 27;
    }
    meta["name"] = name;
  }
  const std::string key = object_key(type, ns, name);
  if (state_->find(type, key)) return already_exists(qualified_plural(type), name);
  if (type.namespaced) meta["namespace"] = ns;
  meta["uid"] = state_->next_uid();
  meta["creationTimestamp"] = rfc3339(state_->now());
  object["kind"] = type.kind;
  object["apiVersion"] = type.api_version;
  if (type.kind == "Job") complete_new_job(object);
  if (type.kind == "Pod") {
    json& spec = object["spec"];
    if (!spec.contains("schedulerName")) spec["schedulerName"] = "default-scheduler";
    if (!spec.contains("priority")) spec["priority"] = 0;
    // v1.28's SidecarContainers gate is off by default, and the API server then drops an init
    // container's restartPolicy (dropDisabledFields): every init container runs alone.
    if (auto inits = spec.find("initContainers"); inits != spec.end() && inits->is_array()) {
      for (json& init : *inits) {
        if (init.is_object()) init.erase("restartPolicy");
      }
    }
    if (spec.contains("schedulingGates") && spec["schedulingGates"].empty())
      spec.erase("schedulingGates");
    if (!object.contains("status") || !object["status"].is_object())
      object["status"] = json::object();
    object["status"]["phase"] = "Pending";
    if (spec.contains("schedulingGates")) mark_scheduling_gated(object["status"], state_->now());
  }
  auto stored = std::make_shared<const json>(state_->stamped(std::move(object)));
  state_->commit(type, key, "ADDED", stored, nullptr);
  return ObjectPtr(stored);
}

ApiResult<ObjectPtr> ApiObjects::get(const ResourceType& type, const std::string& ns,
                                     const std::string& name) const {
  std::lock_guard lock(state_->mu);
  if (auto found = state_->find(type, object_key(type, ns, name))) return found;
  return not_found(qualified_plural(type), name);
}

namespace {

// Checks and completes an updated object against the stored one (kube-apiserver's update
// strategy for the types served). Returns the object to store, or the error to answer.
ApiResult<json> prepare_update(const ResourceType& type, const json& old, json updated,
                               bool status_only) {
  const std::string name = string_member(object_member(old, "metadata"), "name");
  if (!updated.is_object()) return bad_request("the request body is not a JSON object");
  const std::string current_rv = string_member(object_member(old, "metadata"), "resourceVersion");
  const json& new_meta = object_member(updated, "metadata");
  if (new_meta.contains("resourceVersion") && !new_meta["resourceVersion"].is_null()) {
    std::string asked = new_meta["resourceVersion"].is_string()
                            ? new_meta["resourceVersion"].get<std::string>()
                            : new_meta["resourceVersion"].dump();
    if (!asked.empty() && asked != current_rv) {
      return conflict(qualified_plural(type), name,
                      "the object has been modified; please apply your changes to the latest "
                      "version and try again");
    }
  }
  const std::string new_name = string_member(new_meta, "name");
  if (!new_name.empty() && new_name != name) {
    return bad_request("the name of the object (" + new_name +
                       ") does not match the name on the URL (" + name + ")");
  }
  if (status_only) {
    // The stored object with the update's .status ({} when it has none). Built from the update
    // (for a patch, already a copy of the stored object) by putting back every other member
    // that differs from the stored one: equal members are not copied again.
    json out = std::move(updated);
    auto status = out.find("status");
    json new_status = status != out.end() ? std::move(*status) : json::object();
    for (auto it = out.begin(); it != out.end();) {
      it = old.contains(it.key()) ? std::next(it) : out.erase(it);
    }
    for (auto it = old.begin(); it != old.end(); ++it) {
      if (it.key() == "status") continue;
      auto mine = out.find(it.key());
      if (mine == out.end() || *mine != *it) out[it.key()] = *it;
    }
    out["status"] = std::move(new_status);
    return out;
  }
  json out = std::move(updated);
  // Identity and bookkeeping stay the server's.
  if (!out.contains("metadata") || !out["metadata"].is_object()) out["metadata"] = json::object();
  json& meta = out["metadata"];
  const json& old_meta = object_member(old, "metadata");
  for (const char* key : {"name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                          "deletionGracePeriodSeconds"}) {
    auto kept = old_meta.find(key);
    if (kept != old_meta.end()) {
      auto mine = meta.find(key);
      if (mine == meta.end() || *mine != *kept) meta[key] = *kept;
    } else {
      meta.erase(key);
    }
  }
  out["kind"] = type.kind;
  out["apiVersion"] = type.api_version;
  if (type.kind == "Job") {
    if (auto error = job_update_error(old, out)) return *error;
    if (auto kept = old.find("status"); kept != old.end()) {  // only via /status
      auto mine = out.find("status");
      if (mine == out.end() || *mine != *kept) out["status"] = *kept;
    }
  }
  if (type.kind == "Pod") {
    // Status changes only via /status: the stored one is kept (copied only when it differs).
    if (auto kept = old.find("status"); kept != old.end()) {
      auto mine = out.find("status");
      if (mine == out.end() || *mine != *kept) out["status"] = *kept;
    }
    json& spec = out["spec"];
    if (!spec.is_object()) return invalid("Pod", name, "spec", "Required value");
    if (spec.contains("schedulingGates") &&
        (spec["schedulingGates"].is_null() || spec["schedulingGates"].empty())) {
      spec.erase("schedulingGates");
    }
    std::set<std::string> before = gate_names(old), after = gate_names(out);
    for (const std::string& gate : after) {
      if (before.count(gate) == 0) {
        return invalid(
            "Pod", name, "spec.schedulingGates",
            "Forbidden: only deletion is allowed, but found new scheduling gate '" + gate + "'");
      }
    }
    static const json no_spec = json::object();
    auto old_spec = old.find("spec");
    const json& before_spec = old_spec != old.end() ? *old_spec : no_spec;
    // Gated before this update (the update may remove the last gate in the same write).
    const bool directives = !before.empty();
    if (directives) {
      if (auto error = scheduling_directive_error(name, before_spec, spec)) return *error;
    }
    if (!same_frozen_spec(before_spec, spec, directives)) {
      return invalid("Pod", name, "spec",
                     "Forbidden: pod updates may not change fields other than "
                     "`spec.containers[*].image`,`spec.initContainers[*].image`,"
                     "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
                     "existing tolerations),`spec.schedulingGates` (only deletion)");
    }
  }
  return out;
}

}  // namespace

ApiResult<ObjectPtr> ApiObjects::update(const ResourceType& type, const std::string& ns,
                                        const std::string& name, json object, bool status_only) {
  std::lock_guard lock(state_->mu);
  const std::string key = object_key(type, ns, name);
  ObjectPtr old = state_->find(type, key);
  if (!old) return not_found(qualified_plural(type), name);
  auto prepared = prepare_update(type, *old, std::move(object), status_only);
  if (auto* error = std::get_if<ApiError>(&prepared)) return *error;
  auto stored = std::make_shared<const json>(state_->stamped(std::move(std::get<json>(prepared))));
  state_->commit(type, key, "MODIFIED", stored, old);
  return ObjectPtr(stored);
}

ApiResult<ObjectPtr> ApiObjects::patch(const ResourceType& type, const std::string& ns,
                                       const std::string& name, PatchType patch_type,
                                       const std::string& body, bool status_only) {
  const std::string key = object_key(type, ns, name);
  return state_->modify(type, key, name, [&](const json& old) -> ApiResult<json> {
    auto patched = apply_patch(old, patch_type, body);
    if (auto* error = std::get_if<ApiError>(&patched)) return *error;
    return prepare_update(type, old, std::move(std::get<json>(patched)), status_only);
  });
}

ApiResult<ObjectPtr> ApiObjects::remove(const ResourceType& type, const std::string& ns,
                                        const std::string& name, const json& options) {
  auto propagation = propagation_of(options, type.kind == "Job");
  if (auto* error = std::get_if<ApiError>(&propagation)) return *error;
  std::lock_guard lock(state_->mu);
  const std::string key = object_key(type, ns, name);
  ObjectPtr old = state_->find(type, key);
  if (!old) return not_found(qualified_plural(type), name);
  if (options.is_object() && options.contains("preconditions") &&
      options["preconditions"].is_object()) {
    const json& pre = options["preconditions"];
    const std::string uid = string_member(pre, "uid");
    const std::string actual_uid = string_member(object_member(*old, "metadata"), "uid");
    if (!uid.empty() && uid != actual_uid) {
      return conflict(qualified_plural(type), name,
                      "Precondition failed: UID in precondition: " + uid +
                          ", UID in object meta: " + actual_uid);
    }
    const std::string rv = string_member(pre, "resourceVersion");
    const std::string actual_rv = string_member(object_member(*old, "metadata"), "resourceVersion");
    if (!rv.empty() && rv != actual_rv) {
      return conflict(qualified_plural(type), name,
                      "Precondition failed: ResourceVersion in precondition: " + rv +
                          ", ResourceVersion in object meta: " + actual_rv);
    }
  }
  if (type.kind == "Job") {
    const Propagation policy = std::get<Propagation>(propagation);
    if (policy != Propagation::kBackground) {
      settle_dependents(ns, string_member(object_member(*old, "metadata"), "uid"), policy);
    }
  }
  return remove_locked(type, key, old, options);
}

// Must hold mu. The object goes: a bound running pod first gets its deletionTimestamp
// (MODIFIED), as a kubelet would be given its grace period; then it is DELETED at once (the
// fake has no kubelet to wait for).
ApiResult<ObjectPtr> ApiObjects::remove_locked(const ResourceType& type, const std::string& key,
                                               ObjectPtr old, const json& options) {
  ObjectPtr last = old;
  const bool graceful =
      type.kind == "Pod" && !string_member(object_member(*old, "spec"), "nodeName").empty() &&
      !is_terminal(*old) && !(options.is_object() && options.value("gracePeriodSeconds", -1) == 0);
  if (graceful && !object_member(*old, "metadata").contains("deletionTimestamp")) {
    json marked = *old;
    marked["metadata"]["deletionTimestamp"] = rfc3339(state_->now());
    marked["metadata"]["deletionGracePeriodSeconds"] = 30;
    last = std::make_shared<const json>(state_->stamped(std::move(marked)));
    state_->commit(type, key, "MODIFIED", last, old);
  }
  auto gone = std::make_shared<const json>(state_->stamped(*last));
  state_->commit(type, key, "DELETED", gone, last);
  return ObjectPtr(gone);
}

// Must hold mu. What the garbage collector does to a Job's pods before the Job goes: Orphan
// takes the Job's ownerReference off each (they stay, owned by nobody); Foreground deletes them.
void ApiObjects::settle_dependents(const std::string& ns, const std::string& owner_uid,
                                   Propagation policy) {
  std::vector<std::pair<std::string, ObjectPtr>> owned;
  auto table = state_->objects.find(type_key(pods_resource()));
  if (table == state_->objects.end()) return;
  for (const auto& [key, pod] : table->second) {
    if (string_member(object_member(*pod, "metadata"), "namespace") == ns &&
        controlled_by(*pod, owner_uid)) {
      owned.emplace_back(key, pod);
    }
  }
  for (const auto& [key, pod] : owned) {
    if (policy == Propagation::kForeground) {
      (void)remove_locked(pods_resource(), key, pod, json(nullptr));
      continue;
    }
    json orphan = *pod;
    json& refs = orphan["metadata"]["ownerReferences"];
    json kept = json::array();
    for (const json& ref : refs) {
      if (string_member(ref, "uid") != owner_uid) kept.push_back(ref);
    }
    if (kept.empty()) {
      orphan["metadata"].erase("ownerReferences");
    } else {
      refs = std::move(kept);
    }
    auto stored = std::make_shared<const json>(state_->stamped(std::move(orphan)));
    state_->commit(pods_resource(), key, "MODIFIED", stored, pod);
  }
}

ApiResult<json> ApiObjects::bind(const std::string& ns, const std::string& name,
                                 const json& binding) {
  const ResourceType& type = pods_resource();
  if (!binding.is_object()) return bad_request("the Binding is not a JSON object");
  const json target = binding.value("target", json::object());
  const std::string node = target.is_object() ? string_member(target, "name") : "";
  if (node.empty()) return invalid("Binding", name, "target.name", "Required value");
  const std::string body_name = string_member(object_member(binding, "metadata"), "name");
  if (!body_name.empty() && body_name != name) {
    return bad_request("the name of the Binding (" + body_name +
                       ") does not match the pod on the URL (" + name + ")");
  }
  // kube-apiserver's BindingREST turns every refusal into 409 Conflict on pods/binding.
  auto refuse = [&](const std::string& why) { return conflict("pods/binding", name, why); };
  const std::string uid = string_member(object_member(binding, "metadata"), "uid");
  auto bound = state_->modify(
      type, object_key(type, ns, name), name, [&](const json& old) -> ApiResult<json> {
        const std::string actual_uid = string_member(object_member(old, "metadata"), "uid");
        if (!uid.empty() && uid != actual_uid) {
          return refuse("Precondition failed: UID in precondition: " + uid +
                        ", UID in object meta: " + actual_uid);
        }
        if (object_member(old, "metadata").contains("deletionTimestamp")) {
          return refuse("pod " + name + " is being deleted, cannot be assigned to a host");
        }
        const std::string on = string_member(object_member(old, "spec"), "nodeName");
        if (!on.empty())
          return refuse("pod " + name + " is already assigned to node \"" + on + "\"");
        if (!gate_names(old).empty()) {
          return refuse("pod " + name + " has non-empty .spec.schedulingGates");
        }
        json pod = old;
        pod["spec"]["nodeName"] = node;
        json& status = pod["status"];
        json& conditions = status["conditions"];  // a missing list: null, which push_back makes one
        json scheduled = {{"type", "PodScheduled"},
                          {"status", "True"},
                          {"lastProbeTime", nullptr},
                          {"lastTransitionTime", rfc3339(state_->now())}};
        auto it = std::find_if(conditions.begin(), conditions.end(),
                               [](const json& c) { return c.value("type", "") == "PodScheduled"; });
        if (it != conditions.end()) {
          *it = std::move(scheduled);
        } else {
          conditions.push_back(std::move(scheduled));
        }
        return pod;
      });
  if (auto* error = std::get_if<ApiError>(&bound)) return *error;
  return json{{"kind", "Status"},
              {"apiVersion", "v1"},
              {"metadata", json::object()},
              {"status", "Success"},
              {"code", 201}};
}

ApiResult<json> ApiObjects::list(const ListRequest& request) const {
  const ResourceType& type = *request.resource;
  std::lock_guard lock(state_->mu);
  json items = json::array();
  std::string start_after;
  if (!request.continue_token.empty()) {
    // Our continue token is "<key>"; anything else is the 400 kube-apiserver answers.
    start_after = request.continue_token;
  }
  std::size_t remaining = 0;
  std::string last_key;
  auto table = state_->objects.find(type_key(type));
  if (table != state_->objects.end()) {
    for (auto it = start_after.empty() ? table->second.begin()
                                       : table->second.upper_bound(start_after);
         it != table->second.end(); ++it) {
      const json& object = *it->second;
      if (type.namespaced && !request.namespace_name.empty() &&
          string_member(object_member(object, "metadata"), "namespace") != request.namespace_name) {
        continue;
      }
      if (!request.selector.matches(object)) continue;
      if (request.limit > 0 && items.size() >= request.limit) {
        ++remaining;
        continue;
      }
      json item = object;
      item.erase("kind");  // items of a typed list carry no kind or apiVersion
      item.erase("apiVersion");
      items.push_back(std::move(item));
      last_key = it->first;
    }
  }
  json metadata = {{"resourceVersion", std::to_string(state_->rv)}};
  if (remaining > 0) {
    metadata["continue"] = last_key;
    metadata["remainingItemCount"] = remaining;
  }
  return json{{"kind", type.kind + "List"},
              {"apiVersion", type.api_version},
              {"metadata", metadata},
              {"items", std::move(items)}};
}

ApiResult<std::shared_ptr<WatchStream>> ApiObjects::watch(const WatchRequest& request) {
  auto stream = std::make_shared<WatchStream>();
  stream->state_ = std::make_shared<WatchStream::State>();
  WatchStream::State& s = *stream->state_;
  s.store = state_;
  s.request = request;
  std::lock_guard lock(state_->mu);
  const std::string& rv = request.resource_version;
  if (rv.empty() || rv == "0") {
    auto table = state_->objects.find(type_key(*request.resource));
    if (table != state_->objects.end()) {
      for (const auto& [key, object] : table->second) {
        if (request.resource->namespaced && !request.namespace_name.empty() &&
            string_member(object_member(*object, "metadata"), "namespace") !=
                request.namespace_name) {
          continue;
        }
        if (request.selector.matches(*object)) s.pending.push_back({"ADDED", object, ""});
      }
    }
    s.position = state_->rv;
  } else {
    std::uint64_t from = 0;
    try {
      std::size_t used = 0;
      from = std::stoull(rv, &used);
      if (used != rv.size()) throw std::invalid_argument(rv);
    } catch (const std::exception&) {
      return bad_request("invalid resourceVersion \"" + rv + "\": not a number");
    }
    if (from < state_->oldest) {
      ApiError gone = too_old_resource_version(from, state_->oldest + 1);
      s.pending.push_back({"ERROR", std::make_shared<const json>(gone.status()), ""});
      s.position = state_->rv;
      s.closed = true;  // after the ERROR event
    } else {
      s.position = from;
    }
  }
  s.bookmarks_seen = state_->bookmark_generation;
  // Forget streams that ended (commit walks the list for every change).
  state_->streams.erase(std::remove_if(state_->streams.begin(), state_->streams.end(),
                                       [](const auto& weak) { return weak.expired(); }),
                        state_->streams.end());
  state_->streams.push_back(stream->state_);
  return stream;
}

WatchStream::~WatchStream() {
  close();
}

void WatchStream::close() {
  if (!state_) return;
  std::lock_guard lock(state_->store->mu);
  state_->closed = true;
  state_->pending.clear();
  state_->wake.notify_all();
}

bool WatchStream::broken() const {
  std::lock_guard lock(state_->store->mu);
  return state_->broken;
}

WatchStream::Next WatchStream::next(WatchEvent& event, std::chrono::milliseconds wait) {
  State& s = *state_;
  ApiObjects::State& store = *s.store;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::unique_lock lock(store.mu);
  while (true) {
    if (s.broken) return Next::kClosed;
    if (!s.pending.empty()) {
      event = std::move(s.pending.front());
      s.pending.pop_front();
      return Next::kEvent;
    }
    if (s.closed) return Next::kClosed;
    if (s.position < store.oldest) {
      // Compacted while this watcher lagged: the client must re-list.
      ApiError gone = too_old_resource_version(s.position, store.oldest + 1);
      event = {"ERROR", std::make_shared<const json>(gone.status()), ""};
      s.closed = true;
      return Next::kEvent;
    }
    while (s.position < store.rv) {
      const auto& front = store.history.front();
      const auto& record = store.history[s.position + 1 - front.rv];
      s.position = record.rv;
      if (record.type != s.request.resource) continue;
      const json& object = *record.object;
      if (s.request.resource->namespaced && !s.request.namespace_name.empty() &&
          string_member(object_member(object, "metadata"), "namespace") !=
              s.request.namespace_name) {
        continue;
      }
      const Selector& selector = s.request.selector;
      const bool now_matches = record.event != "DELETED" && selector.matches(object);
      const bool matched = record.event == "ADDED"     ? false
                           : record.event == "DELETED" ? selector.matches(*record.previous)
                                                       : selector.matches(*record.previous);
      if (record.event == "DELETED") {
        if (matched || selector.matches(object)) {
          event = {"DELETED", record.object, ""};
          return Next::kEvent;
        }
        continue;
      }
      if (now_matches && matched) {
        event = {"MODIFIED", record.object, ""};
        return Next::kEvent;
      }
      if (now_matches) {
        event = {"ADDED", record.object, ""};
        return Next::kEvent;
      }
      if (matched) {
        // Stopped matching: DELETED with the previous state at the new resourceVersion.
        json last = *record.previous;
        last["metadata"]["resourceVersion"] = std::to_string(record.rv);
        event = {"DELETED", std::make_shared<const json>(std::move(last)), ""};
        return Next::kEvent;
      }
    }
    if (s.request.allow_bookmarks && s.bookmarks_seen < store.bookmark_generation) {
      s.bookmarks_seen = store.bookmark_generation;
      json bookmark = {{"kind", s.request.resource->kind},
                       {"apiVersion", s.request.resource->api_version},
                       {"metadata", {{"resourceVersion", std::to_string(store.rv)}}}};
      event = {"BOOKMARK", std::make_shared<const json>(std::move(bookmark)), ""};
      return Next::kEvent;
    }
    if (wait.count() <= 0) return Next::kTimeout;  // nothing waiting: answer without a wait
    if (s.wake.wait_until(lock, deadline) == std::cv_status::timeout) {
      if (!s.pending.empty() || s.position < store.rv || s.broken || s.closed) continue;
      return Next::kTimeout;
    }
  }
}

void ApiObjects::compact() {
  std::lock_guard lock(state_->mu);
  state_->history.clear();
  state_->oldest = state_->rv;
  state_->wake_watches(nullptr);
}

void ApiObjects::break_watches() {
  std::lock_guard lock(state_->mu);
  for (auto& weak : state_->streams) {
    if (auto stream = weak.lock()) {
      stream->broken = true;
      stream->wake.notify_all();
    }
  }
  state_->streams.clear();
}

void ApiObjects::inject_watch_line(const std::string& line) {
  std::lock_guard lock(state_->mu);
  for (auto& weak : state_->streams) {
    if (auto stream = weak.lock()) stream->pending.push_back({"", nullptr, line});
  }
  state_->wake_watches(nullptr);
}

void ApiObjects::send_bookmarks() {
  std::lock_guard lock(state_->mu);
  ++state_->bookmark_generation;
  // Forget streams that ended.
  state_->streams.erase(std::remove_if(state_->streams.begin(), state_->streams.end(),
                                       [](const auto& weak) { return weak.expired(); }),
                        state_->streams.end());
  state_->wake_watches(nullptr);
}

}  // namespace allox::emulator
