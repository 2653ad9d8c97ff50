// A Kubernetes API error as the API server reports it: an HTTP status code, a machine-readable
// reason and a message, rendered as a metav1.Status body
//   {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"x\" not
//    found","reason":"NotFound","details":{"name":"x","kind":"pods"},"code":404}
// Clients (client-go, alloxd's informer) switch on `code` and `reason`, so the fake must use the
// same pair the real kube-apiserver uses for each case. Thread-safe: plain values.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

namespace allox::emulator {

// One field's problem in a 422 (metav1.StatusCause): reason FieldValueRequired, ...Invalid,
// ...Forbidden, ...NotSupported; the field's path.
struct ApiCause {
  std::string reason, message, field;
};

struct ApiError {
  int code = 500;
  std::string reason;  // NotFound, AlreadyExists, Conflict, Invalid, BadRequest, Expired, ...
  std::string message;
  std::string name, kind;  // details, when known
  std::string group = {};               // details.group ("batch" for a Job), when not core
  std::vector<ApiCause> causes = {};    // details.causes of a 422

  nlohmann::json status() const;
};

ApiError not_found(const std::string& plural, const std::string& name);
ApiError already_exists(const std::string& plural, const std::string& name);
// 409 "Operation cannot be fulfilled on <plural> \"<name>\": <why>"
ApiError conflict(const std::string& plural, const std::string& name, const std::string& why);
// 422 "<Kind> \"<name>\" is invalid: <field>: <why>", with one cause naming the field (its
// reason read from how `why` begins: "Required value", "Forbidden", "Unsupported value", else
// FieldValueInvalid). `group`: the API group ("batch"), which the message's kind carries
// ("Job.batch") as kube-apiserver writes it.
ApiError invalid(const std::string& kind, const std::string& name, const std::string& field,
                 const std::string& why, const std::string& group = "");
ApiError bad_request(const std::string& message);
// 410 Expired: a watch or list from a resourceVersion the server no longer holds.
ApiError too_old_resource_version(std::uint64_t asked, std::uint64_t oldest);

// An object or an ApiError.
template <class T>
using ApiResult = std::variant<T, ApiError>;

template <class T>
bool failed(const ApiResult<T>& r) {
  return std::holds_alternative<ApiError>(r);
}

}  // namespace allox::emulator
