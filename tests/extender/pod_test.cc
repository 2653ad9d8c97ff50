// extender/pod.h: quantities, the allox.io annotations and device inference.
#include "extender/pod.h"

#include <gtest/gtest.h>

#include "extender/config.h"
#include "tests/extender/test_support.h"

namespace allox::extender {
namespace {

TEST(PodTest, QuantitiesUseKubernetesSuffixes) {
  struct Case {
    const char* text;
    double want;
  };
  const Case cases[] = {{"8", 8},      {"500m", 0.5}, {"1k", 1000},    {"32Gi", 32.0 * (1 << 30)},
                        {"1e3", 1000}, {"2.5", 2.5},  {"1Mi", 1048576}};
  for (const Case& c : cases) {
    auto q = parse_quantity(c.text);
    ASSERT_TRUE(q.ok()) << c.text << ": " << q.message();
    EXPECT_DOUBLE_EQ(c.want, *q) << c.text;
  }
  for (const char* bad : {"", "abc", "-1", "1x", "Gi", "1.2.3"}) {
    EXPECT_FALSE(parse_quantity(bad).ok()) << bad;
  }
}

TEST(PodTest, DefaultsComeFromTheNamespaceNameAndResources) {
  DeviceMapping mapping;
  mapping.resources = {{"nvidia.com/gpu", "gpu"}};
  auto gpu = read_job_variant(testing::make_pod("team-a", "train", "nvidia.com/gpu"), mapping);
  ASSERT_TRUE(gpu.ok()) << gpu.message();
  EXPECT_EQ("team-a/train", gpu->job_id);
  EXPECT_EQ("team-a", gpu->user);
  EXPECT_EQ("gpu", gpu->device);
  EXPECT_EQ("uid-train", gpu->pod.uid);
  auto cpu = read_job_variant(testing::make_pod("team-a", "train", "cpu"), mapping);
  ASSERT_TRUE(cpu.ok()) << cpu.message();
  EXPECT_EQ("cpu", cpu->device);
}

TEST(PodTest, AnnotationsOverrideDefaults) {
  DeviceMapping mapping;
  auto v = read_job_variant(testing::make_pod("ns", "p-gpu", "nvidia.com/gpu",
                                              {{"allox.io/job", "resnet"},
                                               {"allox.io/user", "alice"},
                                               {"allox.io/device", "v100"},
                                               {"allox.io/iterations", "1000"},
                                               {"allox.io/time.v100", "120"},
                                               {"allox.io/time.cpu", "900.5"},
                                               {"example.com/other", "ignored"}}),
                            mapping);
  ASSERT_TRUE(v.ok()) << v.message();
  EXPECT_EQ("ns/resnet", v->job_id);
  EXPECT_EQ("ns", v->user) << "allox.io/user is read only where the tenancy rules allow it";
  EXPECT_EQ("v100", v->device);
  EXPECT_EQ(1000, v->iterations.value());
  EXPECT_DOUBLE_EQ(120, v->time_hints.at("v100"));
  EXPECT_DOUBLE_EQ(900.5, v->time_hints.at("cpu"));
}

TEST(PodTest, AJobIdAlwaysLivesInThePodsNamespace) {
  struct Case {
    const char* namespace_name;
    const char* annotation;  // nullptr: none
    const char* want;
  };
  const Case cases[] = {
      {"team-a", nullptr, "team-a/p"},
      {"team-a", "train", "team-a/train"},
      {"team-a", "team-a/train", "team-a/train"},
      {"team-b", "team-a/train", "team-b/team-a/train"},  // never team-a's job
      {"team-b", "team-a", "team-b/team-a"},
  };
  for (const Case& c : cases) {
    std::map<std::string, std::string> annotations;
    if (c.annotation != nullptr) annotations["allox.io/job"] = c.annotation;
    auto v = read_job_variant(testing::make_pod(c.namespace_name, "p", "cpu", annotations),
                              DeviceMapping{});
    ASSERT_TRUE(v.ok()) << v.message();
    EXPECT_EQ(c.want, v->job_id) << c.namespace_name << " " << (c.annotation ? c.annotation : "");
  }
}

TEST(PodTest, TheChargedUserFollowsTheTenancyRules) {
  Tenancy tenancy;
  tenancy.namespace_users = {{"team-b", "bob"}};
  tenancy.user_annotation_namespaces = {"lab"};
  struct Case {
    const char* namespace_name;
    const char* annotated;
    const char* want;
  };
  const Case cases[] = {
      {"team-a", "", "team-a"},     {"team-a", "mallory", "team-a"}, {"team-b", "", "bob"},
      {"team-b", "mallory", "bob"}, {"lab", "alice", "alice"},       {"lab", "", "lab"},
  };
  for (const Case& c : cases) {
    std::map<std::string, std::string> annotations;
    if (*c.annotated != 0) annotations["allox.io/user"] = c.annotated;
    auto v = read_job_variant(testing::make_pod(c.namespace_name, "p", "cpu", annotations),
                              DeviceMapping{}, tenancy);
    ASSERT_TRUE(v.ok()) << v.message();
    EXPECT_EQ(c.want, v->user) << c.namespace_name << " " << c.annotated;
  }
}

TEST(PodTest, BadAnnotationsAreErrorsNamingThem) {
  DeviceMapping mapping;
  struct Case {
    const char* key;
    const char* value;
    const char* error;
  };
  const Case cases[] = {
      {"allox.io/time.gpu", "fast", "annotation allox.io/time.gpu: \"fast\" is not a number"},
      {"allox.io/time.gpu", "-3", "is not a number of seconds"},
      {"allox.io/iterations", "2.5", "is not a positive whole number"},
      {"allox.io/iterations", "9223372036854775808", "within int64"},
      {"allox.io/iterations", "1e300", "within int64"},
      {"allox.io/time.gpu", "1e300", "out of range"},
      {"allox.io/time.gpu", "99999999999999", "out of range"},
      {"allox.io/time.gpu", "2592001", "out of range"},
      {"allox.io/time.gpu", "0.0001", "out of range"},
      {"allox.io/job", "", "empty job id"},
  };
  for (const Case& c : cases) {
    auto v = read_job_variant(testing::make_pod("ns", "p", "cpu", {{c.key, c.value}}), mapping);
    ASSERT_FALSE(v.ok()) << c.key << "=" << c.value;
    EXPECT_NE(std::string::npos, v.message().find(c.error)) << v.message();
  }
  auto nameless = read_job_variant(nlohmann::json{{"metadata", {{"namespace", "x"}}}}, mapping);
  EXPECT_EQ("Pod.metadata.name: missing", nameless.message());
}

}  // namespace
}  // namespace allox::extender
