// Reading a Kubernetes object's JSON in place, where a missing member is the same as an empty
// one (as the API server's own defaulting treats it): no copies, no exceptions, no allocation
// beyond the string returned.
//
//   member(o, "spec")         o's member, or null when o is not an object or has no such member
//   object_member(o, "spec")  that member when it is an object, else an empty object
//   string_member(o, "name")  that member when it is a string, else ""
//
// The readers chain: string_member(object_member(pod, "metadata"), "name") is "" for a pod
// without metadata, with metadata that is not an object, or without a name.
//
// Thread-safe: pure functions over const values.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace allox::kube {

const nlohmann::json& member(const nlohmann::json& object, const char* key);
const nlohmann::json& object_member(const nlohmann::json& object, const char* key);
std::string string_member(const nlohmann::json& object, const char* key);

}  // namespace allox::kube
