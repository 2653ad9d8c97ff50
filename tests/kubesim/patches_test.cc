// kubesim/patches.h and selectors.h: the three patch types kube-apiserver accepts and
// the selector grammar, table-driven.
#include "kubesim/patches.h"

#include <gtest/gtest.h>

#include "kubesim/selectors.h"

namespace allox::emulator {
namespace {

using nlohmann::json;

TEST(PatchesTest, AppliesEachPatchType) {
  const json pod = json::parse(R"({
    "metadata": {"name": "p", "annotations": {"a": "1", "b": "2"}, "finalizers": ["x"]},
    "spec": {"schedulingGates": [{"name": "allox.io/queue"}, {"name": "other"}],
             "containers": [{"name": "main", "image": "v1"}, {"name": "side", "image": "s1"}]}})");
  struct Case {
    PatchType type;
    std::string body;
    std::string path;  // JSON pointer into the result
    json want;
  };
  const Case cases[] = {
      {PatchType::kMerge,
       R"({"metadata":{"annotations":{"a":null,"c":"3"}}})",
       "/metadata/annotations",
       {{"b", "2"}, {"c", "3"}}},
      {PatchType::kMerge, R"({"spec":{"schedulingGates":[]}})", "/spec/schedulingGates",
       json::array()},
      {PatchType::kJson, R"([{"op":"remove","path":"/spec/schedulingGates/0"}])",
       "/spec/schedulingGates", json::array({{{"name", "other"}}})},
      {PatchType::kStrategicMerge,
       R"({"spec":{"schedulingGates":[{"name":"allox.io/queue","$patch":"delete"}]}})",
       "/spec/schedulingGates", json::array({{{"name", "other"}}})},
      {PatchType::kStrategicMerge, R"({"spec":{"containers":[{"name":"main","image":"v2"}]}})",
       "/spec/containers",
       json::array({{{"name", "main"}, {"image", "v2"}}, {{"name", "side"}, {"image", "s1"}}})},
      {PatchType::kStrategicMerge, R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["x"]}})",
       "/metadata/finalizers", json::array()},
      {PatchType::kStrategicMerge,
       R"({"$setElementOrder/spec":[],"metadata":{"annotations":{"allox.io/nudge":"t"}}})",
       "/metadata/annotations/allox.io~1nudge", "t"},
  };
  for (const Case& c : cases) {
    auto result = apply_patch(pod, c.type, c.body);
    ASSERT_FALSE(failed(result)) << c.body << ": " << std::get<ApiError>(result).message;
    EXPECT_EQ(c.want, std::get<json>(result).at(json::json_pointer(c.path))) << c.body;
  }
}

TEST(PatchesTest, BadPatchesAreClientErrors) {
  const json pod = {{"spec", json::object()}};
  struct Case {
    PatchType type;
    std::string body;
    int code;
  };
  const Case cases[] = {
      {PatchType::kMerge, "{not json", 400},
      {PatchType::kJson, R"({"op":"add"})", 400},
      {PatchType::kJson, R"([{"op":"test","path":"/spec/x","value":1}])", 422},
      {PatchType::kJson, R"([{"op":"remove","path":"/spec/missing"}])", 422},
      {PatchType::kStrategicMerge, "[1]", 400},
  };
  for (const Case& c : cases) {
    auto result = apply_patch(pod, c.type, c.body);
    ASSERT_TRUE(failed(result)) << c.body;
    EXPECT_EQ(c.code, std::get<ApiError>(result).code) << c.body;
  }
  EXPECT_EQ(415, std::get<ApiError>(patch_type("application/apply-patch+yaml")).code);
  EXPECT_EQ(PatchType::kMerge,
            std::get<PatchType>(patch_type("application/merge-patch+json; charset=utf-8")));
}

// A `test` of null passes on an absent (or null) member and fails on one with a value, as in
// kube-apiserver's patch library; a failed test leaves the object as it was.
TEST(PatchesTest, ATestOfNullPassesOnlyWhereTheMemberIsAbsent) {
  const json gated = json::parse(R"({"spec":{"schedulingGates":[{"name":"allox.io/queue"}]}})");
  const std::string pin = R"([{"op":"test","path":"/spec/schedulingGates/0/name","value":"allox.io/queue"},
       {"op":"remove","path":"/spec/schedulingGates/0"},
       {"op":"test","path":"/spec/affinity","value":null},
       {"op":"add","path":"/spec/affinity","value":{"nodeAffinity":{}}}])";
  auto pinned = apply_patch(gated, PatchType::kJson, pin);
  ASSERT_FALSE(failed(pinned)) << std::get<ApiError>(pinned).message;
  EXPECT_EQ(json::object(), std::get<json>(pinned)["spec"]["affinity"]["nodeAffinity"]);
  EXPECT_TRUE(std::get<json>(pinned)["spec"]["schedulingGates"].empty());

  json with_null = gated;
  with_null["spec"]["affinity"] = nullptr;
  EXPECT_FALSE(failed(apply_patch(with_null, PatchType::kJson, pin)));

  // The owner wrote affinity after alloxd looked: the whole patch is refused, gate included.
  json owned = gated;
  owned["spec"]["affinity"] = json::parse(R"({"podAntiAffinity":{}})");
  auto refused = apply_patch(owned, PatchType::kJson, pin);
  ASSERT_TRUE(failed(refused));
  EXPECT_EQ(422, std::get<ApiError>(refused).code);
  // Only the member may be missing, not its parent.
  auto orphan = apply_patch(gated, PatchType::kJson,
                            R"([{"op":"test","path":"/spec/affinity/nodeAffinity","value":null}])");
  ASSERT_TRUE(failed(orphan));
  EXPECT_EQ(422, std::get<ApiError>(orphan).code);
}

TEST(SelectorsTest, FieldAndLabelSelectors) {
  const json pod =
      json::parse(R"({"metadata":{"name":"p","namespace":"lab","labels":{"app":"x","tier":"gpu"}},
                                   "spec":{"schedulerName":"allox-scheduler"},"status":{"phase":"Pending"}})");
  struct Case {
    std::string fields, labels;
    bool want;
  };
  const Case cases[] = {
      {"spec.schedulerName=allox-scheduler", "", true},
      {"spec.schedulerName==allox-scheduler,status.phase!=Succeeded", "", true},
      {"spec.nodeName=", "", true},
      {"spec.nodeName!=", "", false},
      {"", "app=x", true},
      {"", "app!=x", false},
      {"", "tier in (cpu,gpu)", true},
      {"", "tier notin (gpu)", false},
      {"", "app,!missing", true},
      {"metadata.namespace=other", "", false},
  };
  for (const Case& c : cases) {
    auto selector = Selector::parse("pods", c.fields, c.labels);
    ASSERT_FALSE(failed(selector)) << c.fields << " " << c.labels;
    EXPECT_EQ(c.want, std::get<Selector>(selector).matches(pod)) << c.fields << " " << c.labels;
  }
  auto bad = Selector::parse("pods", "spec.priority=1", "");
  ASSERT_TRUE(failed(bad));
  EXPECT_EQ("field label not supported: spec.priority", std::get<ApiError>(bad).message);
  EXPECT_TRUE(failed(Selector::parse("pods", "nonsense", "")));
}

}  // namespace
}  // namespace allox::emulator
