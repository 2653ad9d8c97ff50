// The gate admission webhook (alloxd/verbs/admission.h) on arbitrary bytes. Nothing may throw or
// crash. An accepted review is answered with an AdmissionReview v1 that allows the object, echoes
// request.uid, and, when it patches, carries a base64 JSONPatch that decodes to an array of
// operations on /spec/schedulingGates: the webhook may delay a pod, never deny or rewrite it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "alloxd/verbs/admission.h"

namespace {

using nlohmann::json;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_admission: accepted review breaks: %s\n", what);
  std::abort();
}

// The inverse of extender::base64, strict: anything but canonical padding fails the target.
std::string decode_base64(std::string_view text) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  if (text.size() % 4 != 0) fail("patch length is not a multiple of 4");
  std::string out;
  unsigned bits = 0;
  int count = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '=') {
      if (i + 2 < text.size()) fail("padding inside the patch");
      break;
    }
    auto value = kAlphabet.find(text[i]);
    if (value == std::string_view::npos) fail("patch is not base64");
    bits = (bits << 6) | static_cast<unsigned>(value);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xff));
    }
  }
  return out;
}

void check_answer(const json& request, const std::string& answer) {
  json review = json::parse(answer, nullptr, false);
  if (!review.is_object()) fail("answer is not a JSON object");
  if (review.value("apiVersion", "") != "admission.k8s.io/v1") fail("answer apiVersion");
  if (review.value("kind", "") != "AdmissionReview") fail("answer kind");
  const json& response = review["response"];
  if (!response.is_object()) fail("no response object");
  if (response.value("allowed", false) != true) fail("the webhook denied an object");
  if (response["uid"] != request["uid"]) fail("response.uid is not request.uid");
  if (!response.contains("patch")) return;
  if (response.value("patchType", "") != "JSONPatch") fail("patch without patchType JSONPatch");
  if (!response["patch"].is_string()) fail("patch is not a string");
  json patch = json::parse(decode_base64(response["patch"].get<std::string>()), nullptr, false);
  if (!patch.is_array() || patch.empty()) fail("patch is not a non-empty JSONPatch array");
  for (const json& operation : patch) {
    if (!operation.is_object() || !operation.contains("path") || !operation["path"].is_string())
      fail("patch operation without a path");
    if (operation["path"].get<std::string>().rfind("/spec/schedulingGates", 0) != 0)
      fail("patch touches something other than spec.schedulingGates");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto answer = allox::extender::review_gate_admission(text, "allox-scheduler");
  if (!answer) {
    if (answer.error().message.empty()) fail("an error without a message");
    return 0;
  }
  json body = json::parse(text, nullptr, false);
  if (!body.is_object() || !body.contains("request")) fail("accepted a body that is no review");
  check_answer(body["request"], *answer);
  return 0;
}
