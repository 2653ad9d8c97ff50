#include "kube/pods.h"

namespace allox::kube {
namespace {

using nlohmann::json;

std::string pod_path(const ObjectRef& pod) {
  return "/api/v1/namespaces/" + escape(pod.namespace_name) + "/pods/" + escape(pod.name);
}

std::string describe(const ObjectRef& pod) {
  return pod.namespace_name + "/" + pod.name;
}

}  // namespace

std::vector<std::string> scheduling_gates(const json& pod) {
  std::vector<std::string> gates;
  if (!pod.is_object()) return gates;
  auto spec = pod.find("spec");
  if (spec == pod.end() || !spec->is_object()) return gates;
  auto list = spec->find("schedulingGates");
  if (list == spec->end() || !list->is_array()) return gates;
  for (const json& gate : *list) {
    if (gate.is_object() && gate.contains("name") && gate["name"].is_string()) {
      gates.push_back(gate["name"].get<std::string>());
    }
  }
  return gates;
}

AffinityRoom affinity_room(const json& pod) {
  auto present = [](const json& object, const char* key) -> const json* {
    if (!object.is_object()) return nullptr;
    auto it = object.find(key);
    return it == object.end() || it->is_null() ? nullptr : &*it;
  };
  const json* spec = present(pod, "spec");
  const json* affinity = spec != nullptr ? present(*spec, "affinity") : nullptr;
  if (affinity == nullptr) return AffinityRoom::kNoAffinity;
  const json* node = present(*affinity, "nodeAffinity");
  if (node == nullptr) return AffinityRoom::kNoNodeAffinity;
  // An empty required selector (no terms) is refused by the API server on creation; treated as
  // the owner's own all the same, never overwritten.
  return present(*node, "requiredDuringSchedulingIgnoredDuringExecution") == nullptr
             ? AffinityRoom::kNoRequired
             : AffinityRoom::kRequired;
}

std::string pinned_node(const json& pod) {
  const json* at = &pod;
  for (const char* key : {"spec", "affinity", "nodeAffinity",
                          "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"}) {
    if (!at->is_object()) return "";
    auto it = at->find(key);
    if (it == at->end()) return "";
    at = &*it;
  }
  auto only = [](const json& list) -> const json* {
    return list.is_array() && list.size() == 1 && list[0].is_object() ? &list[0] : nullptr;
  };
  const json* term = only(*at);
  if (term == nullptr || term->size() != 1 || !term->contains("matchFields")) return "";
  const json* field = only((*term)["matchFields"]);
  if (field == nullptr || field->value("key", json()) != "metadata.name" ||
      field->value("operator", json()) != "In") {
    return "";
  }
  const json values = field->value("values", json());
  if (!values.is_array() || values.size() != 1 || !values[0].is_string()) return "";
  return values[0].get<std::string>();
}

Expected<json> remove_gate_patch(const std::vector<std::string>& gates, std::string_view gate,
                                 const NodePin& pin) {
  for (std::size_t i = 0; i < gates.size(); ++i) {
    if (gates[i] != gate) continue;
    std::string at = "/spec/schedulingGates/" + std::to_string(i);
    json patch = json::array({{{"op", "test"}, {"path", at + "/name"}, {"value", gate}},
                              {{"op", "remove"}, {"path", at}}});
    if (pin.node.empty() || pin.room == AffinityRoom::kRequired) return patch;
    // Each `add` creates only what the pod lacked when seen, so the rest of its affinity
    // (pod affinity, preferred terms) stays as written.
    json required = {
        {"nodeSelectorTerms",
         json::array({{{"matchFields", json::array({{{"key", "metadata.name"},
                                                     {"operator", "In"},
                                                     {"values", json::array({pin.node})}}})}}})}};
    std::string path;
    json value;
    switch (pin.room) {
      case AffinityRoom::kNoAffinity:
        path = "/spec/affinity";
        value = {{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", required}}}};
        break;
      case AffinityRoom::kNoNodeAffinity:
        path = "/spec/affinity/nodeAffinity";
        value = {{"requiredDuringSchedulingIgnoredDuringExecution", required}};
        break;
      case AffinityRoom::kNoRequired:
        path = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution";
        value = required;
        break;
      case AffinityRoom::kRequired:
        return patch;
    }
    // An `add` onto a member that exists replaces it: were the owner to write affinity between
    // our look and this patch, it would be lost. kube-apiserver's JSON Patch passes a `test` of
    // null on a member that is absent (or null) and fails it on one that has a value, so the
    // patch is refused whole (422) and the retry reads the room again.
    patch.push_back({{"op", "test"}, {"path", path}, {"value", nullptr}});
    patch.push_back({{"op", "add"}, {"path", path}, {"value", value}});
    return patch;
  }
  return Error{"the pod has no scheduling gate " + std::string(gate)};
}

json add_gate_patch(const json& pod, std::string_view gate) {
  std::vector<std::string> gates = scheduling_gates(pod);
  for (const std::string& g : gates) {
    if (g == gate) return json::array();
  }
  bool has_list = pod.is_object() && pod.contains("spec") && pod["spec"].is_object() &&
                  pod["spec"].contains("schedulingGates") &&
                  pod["spec"]["schedulingGates"].is_array();
  if (has_list) {
    return json::array(
        {{{"op", "add"}, {"path", "/spec/schedulingGates/-"}, {"value", {{"name", gate}}}}});
  }
  return json::array({{{"op", "add"},
                       {"path", "/spec/schedulingGates"},
                       {"value", json::array({{{"name", gate}}})}}});
}

Status remove_gate(KubeClient& client, const ObjectRef& pod, const std::vector<std::string>& gates,
                   std::string_view gate, const NodePin& pin) {
  auto patch = remove_gate_patch(gates, gate, pin);
  if (!patch) return OkStatus();  // already gone
  auto reply = client.call("PATCH", pod_path(pod), patch->dump(), "application/json-patch+json");
  if (!reply) return reply.error();
  if (reply->status == 422) {
    // The gates changed since they were seen: most often an earlier ungate of the same pod
    // already won while the watch lagged (at 100,000 pods every such retry failed five times
    // and held up the one action worker). Look at the pod as it is now, once: the gate's index
    // and the affinity's room are read again (the pin is kept; the pod's own terms, if it
    // gained some meanwhile, are still never overwritten).
    auto now = client.call("GET", pod_path(pod));
    if (!now) return now.error();
    if (now->status == 404) return OkStatus();
    if (now->status == 200) {
      const json seen = json::parse(now->body, nullptr, false);
      auto fresh = remove_gate_patch(scheduling_gates(seen), gate, {pin.node, affinity_room(seen)});
      if (!fresh) return OkStatus();  // removed by the earlier call
      reply = client.call("PATCH", pod_path(pod), fresh->dump(), "application/json-patch+json");
      if (!reply) return reply.error();
    }
  }
  if (reply->status == 200 || reply->status == 404) return OkStatus();
  return Error{"removing gate " + std::string(gate) + " from " + describe(pod) +
               ": API server answered " + std::to_string(reply->status) + ": " +
               reply->body.substr(0, 200)};
}

Status nudge(KubeClient& client, const ObjectRef& pod, const std::string& value) {
  json patch = {{"metadata", {{"annotations", {{std::string(kNudgeAnnotation), value}}}}}};
  auto reply = client.call("PATCH", pod_path(pod), patch.dump(), "application/merge-patch+json");
  if (!reply) return reply.error();
  if (reply->status == 200 || reply->status == 404) return OkStatus();
  return Error{"annotating " + describe(pod) + ": API server answered " +
               std::to_string(reply->status)};
}

Expected<DeleteOutcome> delete_pod(KubeClient& client, const ObjectRef& pod,
                                   const std::string& resource_version) {
  json options = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (!pod.uid.empty()) options["preconditions"]["uid"] = pod.uid;
  if (!resource_version.empty()) options["preconditions"]["resourceVersion"] = resource_version;
  auto reply = client.call("DELETE", pod_path(pod), options.dump());
  if (!reply) return reply.error();
  if (reply->status == 200 || reply->status == 202) return DeleteOutcome::kDeleted;
  if (reply->status == 404) return DeleteOutcome::kGone;
  // 409: a precondition failed: the pod changed since it was seen (its resourceVersion), or
  // the name now belongs to a new pod (its uid). Not ours to delete as it is now.
  if (reply->status == 409) return DeleteOutcome::kRefused;
  return Error{"deleting " + describe(pod) + ": API server answered " +
               std::to_string(reply->status)};
}

}  // namespace allox::kube
