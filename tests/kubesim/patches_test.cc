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
