#include "kubesim/patches.h"

#include <algorithm>
#include <map>

namespace allox::emulator {
namespace {

using nlohmann::json;

// Merge keys of the lists allox and its clients touch (patchMergeKey in k8s.io/api).
const std::map<std::string, std::string>& merge_keys() {
  static const std::map<std::string, std::string> keys = {
      {"containers", "name"},     {"initContainers", "name"},    {"env", "name"},
      {"volumes", "name"},        {"schedulingGates", "name"},   {"conditions", "type"},
      {"ownerReferences", "uid"}, {"volumeMounts", "mountPath"}, {"imagePullSecrets", "name"},
      {"ports", "containerPort"}};
  return keys;
}

// Lists of scalars that merge as sets instead of being replaced.
bool merges_primitives(const std::string& field) {
  return field == "finalizers";
}

void strategic_merge(json& target, const json& patch);

json merge_list(const std::string& field, const json& target, const json& patch) {
  auto key_it = merge_keys().find(field);
  if (key_it == merge_keys().end()) {
    if (merges_primitives(field) && target.is_array()) {
      json out = target;
      for (const json& v : patch)
        if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
      return out;
    }
    return patch;  // no merge key: the list is replaced
  }
  const std::string& key = key_it->second;
  // `[{"$patch":"replace"}, ...]` replaces the whole list.
  for (const json& item : patch) {
    if (item.is_object() && item.value("$patch", "") == "replace") {
      json out = json::array();
      for (const json& other : patch)
        if (!(other.is_object() && other.contains("$patch"))) out.push_back(other);
      return out;
    }
  }
  json out = target.is_array() ? target : json::array();
  for (const json& item : patch) {
    if (!item.is_object() || !item.contains(key)) {
      out.push_back(item);
      continue;
    }
    auto same = std::find_if(out.begin(), out.end(), [&](const json& existing) {
      return existing.is_object() && existing.contains(key) && existing[key] == item[key];
    });
    if (item.value("$patch", "") == "delete") {
      if (same != out.end()) out.erase(same);
      continue;
    }
    if (same == out.end()) {
      json fresh = json::object();
      strategic_merge(fresh, item);
      out.push_back(fresh);
    } else {
      strategic_merge(*same, item);
    }
  }
  return out;
}

void strategic_merge(json& target, const json& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = json::object();
  if (patch.value("$patch", "") == "replace") {
    json replaced = patch;
    replaced.erase("$patch");
    target = replaced;
    return;
  }
  if (patch.value("$patch", "") == "delete") {
    target = json::object();
    return;
  }
  for (const auto& [key, value] : patch.items()) {
    if (key == "$patch" || key == "$retainKeys" || key.rfind("$setElementOrder/", 0) == 0) continue;
    if (key.rfind("$deleteFromPrimitiveList/", 0) == 0) {
      const std::string field = key.substr(std::string("$deleteFromPrimitiveList/").size());
      if (target.contains(field) && target[field].is_array() && value.is_array()) {
        json& list = target[field];
        for (const json& v : value)
          list.erase(std::remove(list.begin(), list.end(), v), list.end());
      }
      continue;
    }
    if (value.is_null()) {
      target.erase(key);
    } else if (value.is_array()) {
      target[key] = merge_list(key, target.contains(key) ? target[key] : json(), value);
    } else if (value.is_object()) {
      json& child = target[key];
      strategic_merge(child, value);
    } else {
      target[key] = value;
    }
  }
}

// RFC 6902 as kube-apiserver's patch library (evanphx/json-patch) applies it, where it differs
// from nlohmann's: a `test` whose value is null passes on an object's member that is absent or
// null (RFC 6902 leaves a test of a missing member undefined; nlohmann fails it); a missing
// parent still fails it. Operations apply in
// order to a copy, so a failing one leaves the target as it was (the caller answers 422).
json apply_json_patch(const json& target, const json& patch) {
  json out = target;
  for (const json& op : patch) {
    const bool test_absent = op.is_object() && op.contains("op") && op["op"] == "test" &&
                             op.contains("value") && op["value"].is_null() &&
                             op.contains("path") && op["path"].is_string();
    if (test_absent) {
      const json::json_pointer at(op["path"].get<std::string>());
      // Only the member may be missing: a missing parent fails the test, as there.
      if (!at.empty() && out.contains(at.parent_pointer()) &&
          out.at(at.parent_pointer()).is_object() &&
          (!out.contains(at) || out.at(at).is_null())) {
        continue;
      }
    }
    out = out.patch(json::array({op}));
  }
  return out;
}

}  // namespace

ApiResult<PatchType> patch_type(const std::string& content_type) {
  std::string type = content_type.substr(0, content_type.find(';'));
  type.erase(std::remove(type.begin(), type.end(), ' '), type.end());
  if (type == "application/merge-patch+json") return PatchType::kMerge;
  if (type == "application/json-patch+json") return PatchType::kJson;
  if (type == "application/strategic-merge-patch+json") return PatchType::kStrategicMerge;
  return ApiError{415, "UnsupportedMediaType",
                  "the body of the request was in an unknown format - accepted media types "
                  "include: application/json-patch+json, application/merge-patch+json, "
                  "application/strategic-merge-patch+json (got \"" +
                      content_type + "\")",
                  "", ""};
}

ApiResult<json> apply_patch(const json& target, PatchType type, const std::string& body) {
  json patch = json::parse(body, nullptr, false);
  if (patch.is_discarded()) return bad_request("the patch body is not JSON");
  try {
    switch (type) {
      case PatchType::kMerge: {
        if (!patch.is_object()) return bad_request("a merge patch must be a JSON object");
        json out = target;
        out.merge_patch(patch);
        return out;
      }
      case PatchType::kJson:
        if (!patch.is_array()) return bad_request("a JSON patch must be an array of operations");
        return apply_json_patch(target, patch);
      case PatchType::kStrategicMerge: {
        if (!patch.is_object()) return bad_request("a strategic merge patch must be a JSON object");
        json out = target;
        strategic_merge(out, patch);
        return out;
      }
    }
  } catch (const json::exception& e) {
    // kube-apiserver answers a JSON patch that does not apply (a failed test, a missing path)
    // with 422 and the patch library's message.
    return ApiError{422, "Invalid", std::string("the patch could not be applied: ") + e.what(), "",
                    ""};
  }
  return bad_request("unknown patch type");
}

}  // namespace allox::emulator
