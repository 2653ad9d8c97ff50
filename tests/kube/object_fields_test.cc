// kube/object_fields.h: a Kubernetes object's members read in place, a missing one as empty.
#include "kube/object_fields.h"

#include <gtest/gtest.h>

namespace allox::kube {
namespace {

using nlohmann::json;

TEST(ObjectFieldsTest, PresentMembersAreReadInPlace) {
  const json pod = {{"metadata", {{"name", "train-gpu"}, {"labels", {{"team", "a"}}}}},
                    {"spec", {{"containers", json::array({{{"name", "c"}}})}}}};
  EXPECT_EQ(&pod["metadata"], &object_member(pod, "metadata"));
  EXPECT_EQ("train-gpu", string_member(object_member(pod, "metadata"), "name"));
  EXPECT_EQ(json({{"team", "a"}}), object_member(object_member(pod, "metadata"), "labels"));
  EXPECT_TRUE(member(object_member(pod, "spec"), "containers").is_array());
}

TEST(ObjectFieldsTest, MissingOrMistypedMembersReadAsEmpty) {
  // Not an object, or an object whose metadata is missing, null or not an object.
  const json cases[] = {json(),
                        json::array({1, 2}),
                        json(7),
                        json("metadata"),
                        json::object(),
                        json({{"metadata", nullptr}}),
                        json({{"metadata", "a string"}}),
                        json({{"metadata", json::array({{{"name", "x"}}})}})};
  for (const json& object : cases) {
    SCOPED_TRACE(object.dump());
    EXPECT_EQ(json::object(), object_member(object, "metadata"));
    EXPECT_EQ("", string_member(object_member(object, "metadata"), "name"));
    EXPECT_EQ(json::object(), object_member(object_member(object, "metadata"), "labels"));
  }
  EXPECT_EQ("", string_member(json({{"name", 42}}), "name"));
  EXPECT_EQ("", string_member(json({{"name", nullptr}}), "name"));
  EXPECT_TRUE(member(json(7), "spec").is_null());
  EXPECT_TRUE(member(json::object(), "spec").is_null());
  EXPECT_EQ(json("x"), member(json({{"spec", "x"}}), "spec"));
}

}  // namespace
}  // namespace allox::kube
