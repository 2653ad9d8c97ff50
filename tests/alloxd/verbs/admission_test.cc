// alloxd/verbs/admission.h: the gate webhook's AdmissionReview answers, and its refusals.
#include "alloxd/verbs/admission.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace allox::extender {
namespace {

using nlohmann::json;

json review(const json& pod, const std::string& operation = "CREATE") {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
            {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
            {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
            {"namespace", "lab"},
            {"operation", operation},
            {"object", pod}}}};
}

json pod_for(const std::string& scheduler) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"generateName", "train-"}, {"namespace", "lab"}}},
          {"spec", {{"schedulerName", scheduler}, {"containers", json::array()}}}};
}

std::string unbase64(const std::string& text) {
  static const std::string alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    buffer = (buffer << 6) | static_cast<unsigned>(alphabet.find(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xff));
    }
  }
  return out;
}

TEST(AdmissionTest, AlloxPodsGetTheGateAsABase64JsonPatch) {
  auto answer = review_gate_admission(review(pod_for("allox-scheduler")).dump(), "allox-scheduler");
  ASSERT_TRUE(answer.ok()) << answer.message();
  json out = json::parse(*answer);
  EXPECT_EQ("admission.k8s.io/v1", out["apiVersion"]);
  EXPECT_EQ("AdmissionReview", out["kind"]);
  EXPECT_EQ("705ab4f5-6393-11e8-b7cc-42010a800002", out["response"]["uid"]);
  EXPECT_EQ(true, out["response"]["allowed"]);
  EXPECT_EQ("JSONPatch", out["response"]["patchType"]);
  EXPECT_EQ(
      json::parse(
          R"([{"op":"add","path":"/spec/schedulingGates","value":[{"name":"allox.io/queue"}]}])"),
      json::parse(unbase64(out["response"]["patch"])));
}

TEST(AdmissionTest, OtherPodsAndOperationsPassUnchanged) {
  for (const json& r :
       {review(pod_for("default-scheduler")), review(pod_for("allox-scheduler"), "UPDATE")}) {
    auto answer = review_gate_admission(r.dump(), "allox-scheduler");
    ASSERT_TRUE(answer.ok()) << answer.message();
    json out = json::parse(*answer);
    EXPECT_EQ(true, out["response"]["allowed"]);
    EXPECT_FALSE(out["response"].contains("patch"));
  }
  json gated = pod_for("allox-scheduler");
  gated["spec"]["schedulingGates"] = json::array({{{"name", "allox.io/queue"}}});
  json out = json::parse(*review_gate_admission(review(gated).dump(), "allox-scheduler"));
  EXPECT_FALSE(out["response"].contains("patch"));  // already gated: nothing to add
}

TEST(AdmissionTest, MalformedReviewsAreErrorsNamingTheField) {
  struct Case {
    std::string body, want;
  };
  json no_uid = review(pod_for("allox-scheduler"));
  no_uid["request"].erase("uid");
  json bad_version = review(pod_for("allox-scheduler"));
  bad_version["apiVersion"] = "admission.k8s.io/v1beta1";
  json no_object = review(pod_for("allox-scheduler"));
  no_object["request"].erase("object");
  json bad_spec = review(pod_for("allox-scheduler"));
  bad_spec["request"]["object"]["spec"] = "x";
  std::vector<Case> cases = {
      {"not json", "AdmissionReview: the body is not a JSON object"},
      {"[]", "AdmissionReview: the body is not a JSON object"},
      {bad_version.dump(), "apiVersion: expected \"admission.k8s.io/v1\""},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"Pod"})",
       "kind: expected \"AdmissionReview\""},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})",
       "request: expected an object"},
      {no_uid.dump(), "request.uid: expected a non-empty string"},
      {no_object.dump(), "request.object: expected the Pod being created"},
      {bad_spec.dump(), "request.object.spec: expected an object"},
  };
  for (const Case& c : cases) {
    auto answer = review_gate_admission(c.body, "allox-scheduler");
    ASSERT_FALSE(answer.ok()) << c.body;
    EXPECT_EQ(c.want, answer.message()) << c.body;
  }
}

TEST(AdmissionTest, Base64MatchesRfc4648) {
  EXPECT_EQ("", base64(""));
  EXPECT_EQ("Zg==", base64("f"));
  EXPECT_EQ("Zm8=", base64("fo"));
  EXPECT_EQ("Zm9v", base64("foo"));
  EXPECT_EQ("Zm9vYmFy", base64("foobar"));
}

}  // namespace
}  // namespace allox::extender
