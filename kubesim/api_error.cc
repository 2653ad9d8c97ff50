#include "kubesim/api_error.h"

namespace allox::emulator {

nlohmann::json ApiError::status() const {
  nlohmann::json out = {
      {"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
      {"status", "Failure"}, {"message", message}, {"reason", reason}};
  if (!name.empty() || !kind.empty() || !causes.empty()) {
    nlohmann::json details = nlohmann::json::object();
    if (!name.empty()) details["name"] = name;
    if (!group.empty()) details["group"] = group;
    if (!kind.empty()) details["kind"] = kind;
    if (!causes.empty()) {
      nlohmann::json list = nlohmann::json::array();
      for (const ApiCause& cause : causes) {
        list.push_back({{"reason", cause.reason}, {"message", cause.message}, {"field", cause.field}});
      }
      details["causes"] = std::move(list);
    }
    out["details"] = details;
  }
  out["code"] = code;
  return out;
}

ApiError not_found(const std::string& plural, const std::string& name) {
  return {404, "NotFound", plural + " \"" + name + "\" not found", name, plural};
}

ApiError already_exists(const std::string& plural, const std::string& name) {
  return {409, "AlreadyExists", plural + " \"" + name + "\" already exists", name, plural};
}

ApiError conflict(const std::string& plural, const std::string& name, const std::string& why) {
  return {409, "Conflict",
          "Operation cannot be fulfilled on " + plural + " \"" + name + "\": " + why, name, plural};
}

ApiError invalid(const std::string& kind, const std::string& name, const std::string& field,
                 const std::string& why, const std::string& group) {
  auto starts = [&](const char* prefix) { return why.rfind(prefix, 0) == 0; };
  const char* reason = starts("Required value")      ? "FieldValueRequired"
                       : starts("Forbidden")         ? "FieldValueForbidden"
                       : starts("Unsupported value") ? "FieldValueNotSupported"
                       : starts("Duplicate value")   ? "FieldValueDuplicate"
                                                     : "FieldValueInvalid";
  const std::string shown = group.empty() ? kind : kind + "." + group;
  ApiError error{422, "Invalid", shown + " \"" + name + "\" is invalid: " + field + ": " + why,
                 name, kind};
  error.group = group;
  error.causes.push_back({reason, why, field});
  return error;
}

ApiError bad_request(const std::string& message) {
  return {400, "BadRequest", message, "", ""};
}

ApiError too_old_resource_version(std::uint64_t asked, std::uint64_t oldest) {
  return {
      410, "Expired",
      "too old resource version: " + std::to_string(asked) + " (" + std::to_string(oldest) + ")",
      "", ""};
}

}  // namespace allox::emulator
