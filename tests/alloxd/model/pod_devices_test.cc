// alloxd/model/pod_devices.h: the device types a pod can run on when its resource has GPU models
// as node labels, and what pins it to one.
#include "alloxd/model/pod_devices.h"

#include <gtest/gtest.h>

#include "alloxd/config.h"
#include "alloxd/model/pod.h"
#include "extender_api/wire.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

using nlohmann::json;

constexpr char kProduct[] = "nvidia.com/gpu.product";

DeviceMapping models() {
  DeviceMapping mapping;
  mapping.resources = {{"nvidia.com/gpu",
                        "gpu",
                        {{kProduct, "NVIDIA-H100-80GB-HBM3", "h100"},
                         {kProduct, "NVIDIA-A100-SXM4-40GB", "a100"},
                         {kProduct, "NVIDIA-A100-PCIE-40GB", "a100"}}}};
  return mapping;
}

json expression(const std::string& key, const std::string& op, std::vector<std::string> values) {
  json e = {{"key", key}, {"operator", op}};
  if (!values.empty()) e["values"] = values;
  return e;
}

json required_affinity(std::vector<std::vector<json>> terms) {
  json listed = json::array();
  for (const auto& expressions : terms) listed.push_back({{"matchExpressions", expressions}});
  return {{"nodeAffinity",
           {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", listed}}}}}};
}

TEST(PodDevicesTest, AnUnpinnedGpuPodRunsOnEveryModelAndThePlainType) {
  auto v = read_job_variant(testing::make_pod("lab", "train", "nvidia.com/gpu"), models());
  ASSERT_TRUE(v.ok()) << v.message();
  EXPECT_EQ("gpu", v->device);
  EXPECT_EQ((std::vector<DeviceType>{"gpu", "h100", "a100"}), v->devices);
  EXPECT_TRUE(v->runs_on("h100"));
  EXPECT_TRUE(v->runs_on("gpu"));
  EXPECT_FALSE(v->runs_on("cpu"));
  // Without rules a GPU pod has its one type, as before.
  DeviceMapping plain;
  auto only = read_job_variant(testing::make_pod("lab", "train", "nvidia.com/gpu"), plain);
  ASSERT_TRUE(only.ok());
  EXPECT_EQ((std::vector<DeviceType>{"gpu"}), only->device_types());
  // A CPU pod is not a GPU pod of any model.
  auto cpu = read_job_variant(testing::make_pod("lab", "train", "cpu"), models());
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ((std::vector<DeviceType>{"cpu"}), cpu->device_types());
}

TEST(PodDevicesTest, WhatAPodPinsNarrowsItsTypes) {
  struct Case {
    const char* what;
    json selector;  // spec.nodeSelector (null: none)
    json affinity;  // spec.affinity (null: none)
    std::vector<DeviceType> want;
  };
  const Case cases[] = {
      {"nodeSelector on a model", {{kProduct, "NVIDIA-H100-80GB-HBM3"}}, nullptr, {"h100"}},
      {"nodeSelector on a model with two label values",
       {{kProduct, "NVIDIA-A100-PCIE-40GB"}},
       nullptr,
       {"a100"}},
      {"nodeSelector on a model without a rule", {{kProduct, "Tesla-T4"}}, nullptr, {"gpu"}},
      {"nodeSelector on another key", {{"zone", "a"}}, nullptr, {"gpu", "h100", "a100"}},
      {"In two models",
       nullptr,
       required_affinity(
           {{expression(kProduct, "In", {"NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-40GB"})}}),
       {"h100", "a100"}},
      {"NotIn one model",
       nullptr,
       required_affinity({{expression(kProduct, "NotIn", {"NVIDIA-H100-80GB-HBM3"})}}),
       {"gpu", "a100"}},
      {"DoesNotExist",
       nullptr,
       required_affinity({{expression(kProduct, "DoesNotExist", {})}}),
       {"gpu"}},
      {"terms are alternatives",
       nullptr,
       required_affinity({{expression(kProduct, "In", {"NVIDIA-H100-80GB-HBM3"})},
                          {expression(kProduct, "In", {"NVIDIA-A100-SXM4-40GB"})}}),
       {"h100", "a100"}},
      {"constraints no type meets leave the plain type",
       {{kProduct, "NVIDIA-H100-80GB-HBM3"}},
       required_affinity({{expression(kProduct, "NotIn", {"NVIDIA-H100-80GB-HBM3"})}}),
       {"gpu"}},
  };
  for (const Case& c : cases) {
    json pod = testing::make_pod("lab", "train", "nvidia.com/gpu");
    if (!c.selector.is_null()) pod["spec"]["nodeSelector"] = c.selector;
    if (!c.affinity.is_null()) pod["spec"]["affinity"] = c.affinity;
    EXPECT_EQ(c.want, pod_device_types(pod, models(), "gpu")) << c.what;
    auto v = read_job_variant(pod, models());
    ASSERT_TRUE(v.ok()) << v.message();
    EXPECT_EQ(c.want, v->device_types()) << c.what;
    if (c.want.size() == 1) {
      EXPECT_EQ(c.want.front(), v->device) << c.what << ": pinned";
    }
  }
}

TEST(PodDevicesTest, AlloxDeviceAnnotationPinsOneType) {
  auto v = read_job_variant(
      testing::make_pod("lab", "train", "nvidia.com/gpu", {{"allox.io/device", "h100"}}), models());
  ASSERT_TRUE(v.ok()) << v.message();
  EXPECT_EQ("h100", v->device);
  EXPECT_EQ((std::vector<DeviceType>{"h100"}), v->device_types());
  EXPECT_FALSE(v->runs_on("a100"));
}

TEST(PodDevicesTest, ModelAndBatchSizeAreRead) {
  auto v = read_job_variant(
      testing::make_pod("lab", "train", "nvidia.com/gpu",
                        {{"allox.io/model", "resnet50"}, {"allox.io/batch-size", "64"}}),
      models());
  ASSERT_TRUE(v.ok()) << v.message();
  EXPECT_EQ("resnet50", v->model);
  EXPECT_EQ(64, v->batch_size);
  auto bad = read_job_variant(
      testing::make_pod("lab", "train", "nvidia.com/gpu", {{"allox.io/batch-size", "0"}}),
      models());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ("annotation allox.io/batch-size: \"0\" is not a whole number from 1 to 1000000",
            bad.message());
}

// A pod pinned to one model (a nodeSelector, or allox.io/device) counts its units in its
// resource's requests, as an unpinned one does: 2 nvidia.com/gpu are 2 H100s.
TEST(PodDevicesTest, APodPinnedToAModelNeedsTheUnitsItRequests) {
  json pod = testing::make_pod("lab", "train", "nvidia.com/gpu");
  pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "2";
  auto unpinned = read_job_variant(pod, models());
  ASSERT_TRUE(unpinned.ok()) << unpinned.message();
  EXPECT_EQ(2, unpinned->units);
  pod["spec"]["nodeSelector"] = {{kProduct, "NVIDIA-H100-80GB-HBM3"}};
  auto selected = read_job_variant(pod, models());
  ASSERT_TRUE(selected.ok()) << selected.message();
  EXPECT_EQ("h100", selected->device);
  EXPECT_EQ(2, selected->units);
  pod["spec"].erase("nodeSelector");
  pod["metadata"]["annotations"]["allox.io/device"] = "a100";
  auto named = read_job_variant(pod, models());
  ASSERT_TRUE(named.ok()) << named.message();
  EXPECT_EQ("a100", named->device);
  EXPECT_EQ(2, named->units);
}

// /filter reads the pod kube-scheduler sends pruned to what model/pod.h reads
// (PodFields::kRead): so pruned, every pod must read as the same variant as the whole pod, or a
// pod the watch registered would be registered again, differently, by its /filter.
TEST(PodDevicesTest, TheFilterBodysPrunedPodReadsAsTheWholePod) {
  const DeviceMapping mapping = models();
  json base = testing::make_pod("lab", "p", "nvidia.com/gpu", {{"allox.io/time.h100", "60"}});
  base["spec"]["volumes"] = json::array({{{"name", "v"}}});
  base["spec"]["containers"][0]["env"] = json::array({{{"name", "A"}, {"value", "1"}}});
  std::vector<json> pods(6, base);
  pods[1]["spec"]["nodeSelector"] = {{kProduct, "NVIDIA-H100-80GB-HBM3"}};
  pods[2]["spec"]["affinity"] =
      required_affinity({{expression(kProduct, "NotIn", {"NVIDIA-H100-80GB-HBM3"})}});
  pods[3]["spec"]["initContainers"] = json::array(
      {{{"name", "proxy"},
        {"restartPolicy", "Always"},
        {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}},
       {{"name", "warm"}, {"resources", {{"requests", {{"nvidia.com/gpu", "4"}}}}}}});
  pods[4]["spec"]["overhead"] = {{"nvidia.com/gpu", "2"}};
  pods[5]["spec"]["NodeSelector"] = {{kProduct, "NVIDIA-A100-SXM4-40GB"}};  // any case, as read
  auto render = [](const JobVariant& v) {
    return json{{"job", v.job_id}, {"device", v.device}, {"devices", v.devices},
                {"units", v.units}, {"user", v.user}, {"hints", v.time_hints}}
        .dump();
  };
  for (const json& pod : pods) {
    auto whole = read_job_variant(pod, mapping);
    auto args = parse_extender_args(testing::filter_body(pod, {"n1"}), PodFields::kRead);
    ASSERT_TRUE(whole.ok() && args.ok()) << pod.dump();
    EXPECT_FALSE(args->pod["spec"].contains("volumes"));
    auto pruned = read_job_variant(args->pod, mapping);
    ASSERT_TRUE(pruned.ok()) << pruned.message();
    EXPECT_EQ(render(*whole), render(*pruned)) << pod.dump();
  }
}

}  // namespace
}  // namespace allox::extender
