#include "kube/object_fields.h"

namespace allox::kube {

using nlohmann::json;

const json& member(const json& object, const char* key) {
  static const json none;
  if (!object.is_object()) return none;
  auto it = object.find(key);
  return it == object.end() ? none : *it;
}

const json& object_member(const json& object, const char* key) {
  static const json empty = json::object();
  const json& value = member(object, key);
  return value.is_object() ? value : empty;
}

std::string string_member(const json& object, const char* key) {
  const json& value = member(object, key);
  return value.is_string() ? value.get<std::string>() : std::string();
}

}  // namespace allox::kube
