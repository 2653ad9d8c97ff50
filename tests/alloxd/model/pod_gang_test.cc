// alloxd/model/pod.h: allox.io/gang-size, a member of a gang of N pods.
#include <gtest/gtest.h>

#include "alloxd/config.h"
#include "alloxd/model/pod.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

TEST(PodGangTest, GangSizeIsAWholeNumberFromOneToSixtyFour) {
  struct Case {
    const char* value;
    int want;  // 0: an error naming the annotation
  };
  const Case cases[] = {
      {"1", 1},  {"4", 4},   {"64", 64},  {"0", 0}, {"65", 0},
      {"-2", 0}, {"2.5", 0}, {"four", 0}, {"", 0},
  };
  DeviceMapping mapping;
  mapping.resources = {{"nvidia.com/gpu", "gpu"}};
  for (const Case& c : cases) {
    auto member = read_job_variant(
        testing::make_pod("lab", "train-0", "nvidia.com/gpu",
                          {{"allox.io/job", "train"}, {"allox.io/gang-size", c.value}}),
        mapping);
    if (c.want == 0) {
      ASSERT_FALSE(member.ok()) << c.value;
      EXPECT_NE(std::string::npos, member.message().find("annotation allox.io/gang-size"))
          << c.value << ": " << member.message();
      continue;
    }
    ASSERT_TRUE(member.ok()) << c.value << ": " << member.message();
    EXPECT_EQ(c.want, member->gang) << c.value;
    EXPECT_EQ("lab/train", member->job_id) << "members share allox.io/job";
    EXPECT_EQ("train-0", member->pod.name) << "a member is its pod";
  }
}

TEST(PodGangTest, APodWithoutTheAnnotationIsAGangOfOne) {
  DeviceMapping mapping;
  mapping.resources = {{"nvidia.com/gpu", "gpu"}};
  auto pod = read_job_variant(testing::make_pod("lab", "p", "nvidia.com/gpu"), mapping);
  ASSERT_TRUE(pod.ok()) << pod.message();
  EXPECT_EQ(1, pod->gang);
}

}  // namespace
}  // namespace allox::extender
