#include "kubesim/api_error.h"

namespace allox::emulator {

nlohmann::json ApiError::status() const {
  nlohmann::json out = {
      {"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
      {"status", "Failure"}, {"message", message}, {"reason", reason}};
  if (!name.empty() || !kind.empty()) {
    nlohmann::json details = nlohmann::json::object();
    if (!name.empty()) details["name"] = name;
    if (!kind.empty()) details["kind"] = kind;
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
                 const std::string& why) {
  return {422, "Invalid", kind + " \"" + name + "\" is invalid: " + field + ": " + why, name, kind};
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
