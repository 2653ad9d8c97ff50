#include "alloxd/verbs/admission.h"

#include <nlohmann/json.hpp>

#include "kube/pods.h"

namespace allox::extender {
namespace {

using nlohmann::json;

constexpr std::string_view kApiVersion = "admission.k8s.io/v1";

const json* field(const json& object, const char* name) {
  auto it = object.find(name);
  return it == object.end() ? nullptr : &*it;
}

}  // namespace

std::string base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    unsigned n = (static_cast<unsigned char>(bytes[i]) << 16) |
                 (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                 static_cast<unsigned char>(bytes[i + 2]);
    out += {kAlphabet[(n >> 18) & 63], kAlphabet[(n >> 12) & 63], kAlphabet[(n >> 6) & 63],
            kAlphabet[n & 63]};
  }
  if (i + 1 == bytes.size()) {
    unsigned n = static_cast<unsigned char>(bytes[i]) << 16;
    out += {kAlphabet[(n >> 18) & 63], kAlphabet[(n >> 12) & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    unsigned n = (static_cast<unsigned char>(bytes[i]) << 16) |
                 (static_cast<unsigned char>(bytes[i + 1]) << 8);
    out += {kAlphabet[(n >> 18) & 63], kAlphabet[(n >> 12) & 63], kAlphabet[(n >> 6) & 63], '='};
  }
  return out;
}

Expected<std::string> review_gate_admission(std::string_view review,
                                            const std::string& scheduler_name) {
  json body = json::parse(review, nullptr, false);
  if (!body.is_object()) return Error{"AdmissionReview: the body is not a JSON object"};
  const json* api_version = field(body, "apiVersion");
  if (api_version == nullptr || *api_version != kApiVersion) {
    return Error{"apiVersion: expected \"admission.k8s.io/v1\""};
  }
  const json* kind = field(body, "kind");
  if (kind == nullptr || *kind != "AdmissionReview") {
    return Error{"kind: expected \"AdmissionReview\""};
  }
  const json* request = field(body, "request");
  if (request == nullptr || !request->is_object()) return Error{"request: expected an object"};
  const json* uid = field(*request, "uid");
  if (uid == nullptr || !uid->is_string() || uid->get<std::string>().empty()) {
    return Error{"request.uid: expected a non-empty string"};
  }
  json response = {{"uid", *uid}, {"allowed", true}};
  const json* operation = field(*request, "operation");
  const json* object = field(*request, "object");
  const json* request_kind = field(*request, "kind");
  bool pod = request_kind != nullptr && request_kind->is_object() &&
             request_kind->value("kind", json("")) == "Pod";
  bool create = operation != nullptr && *operation == "CREATE";
  if (pod && create) {
    if (object == nullptr || !object->is_object()) {
      return Error{"request.object: expected the Pod being created"};
    }
    const json* spec = field(*object, "spec");
    if (spec != nullptr && !spec->is_object())
      return Error{"request.object.spec: expected an object"};
    const json* scheduler = spec != nullptr ? field(*spec, "schedulerName") : nullptr;
    if (scheduler != nullptr && scheduler->is_string() && *scheduler == scheduler_name) {
      json patch = kube::add_gate_patch(*object, kube::kQueueGate);
      if (!patch.empty()) {
        response["patchType"] = "JSONPatch";
        response["patch"] = base64(patch.dump());
      }
    }
  }
  return json{{"apiVersion", kApiVersion}, {"kind", "AdmissionReview"}, {"response", response}}
      .dump();
}

}  // namespace allox::extender
