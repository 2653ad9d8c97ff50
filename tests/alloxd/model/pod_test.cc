// alloxd/model/pod.h: the allox.io annotations and device inference.
#include "alloxd/model/pod.h"

#include <gtest/gtest.h>

#include "alloxd/config.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

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

// A job id is "<namespace>/<name>" and nothing else: an annotation that names another
// namespace, climbs out with "..", or carries control characters is refused naming the
// annotation, never nested or normalised into some other job's id.
TEST(PodTest, JobIdAnnotationsThatEscapeTheNamespaceAreRefused) {
  struct Case {
    std::string annotation;
    std::string error;
  };
  const Case cases[] = {
      {"team-a/train",
       "annotation allox.io/job: the job id has a '/' beyond the one between namespace and name"},
      {"team-b/../team-a/train",
       "annotation allox.io/job: the job id has a '/' beyond the one between namespace and name"},
      {"..", "annotation allox.io/job: the job id has a \"..\" segment"},
      {"team-b/..", "annotation allox.io/job: the job id has a \"..\" segment"},
      {".", "annotation allox.io/job: the job id has a \".\" segment"},
      {"team-b/",
       "annotation allox.io/job: the job id expected <namespace>/<name>, got an empty "
       "name"},
      {"train\nnext", "annotation allox.io/job: the job id holds a control character"},
      {std::string("tr\0ain", 6), "annotation allox.io/job: the job id holds a control character"},
      {std::string(254, 'j'),
       "annotation allox.io/job: the job id name of 254 bytes, over Kubernetes' limit of 253 for "
       "names"},
  };
  for (const Case& c : cases) {
    auto v = read_job_variant(
        testing::make_pod("team-b", "p", "cpu", {{"allox.io/job", c.annotation}}), DeviceMapping{});
    ASSERT_FALSE(v.ok()) << c.annotation;
    EXPECT_EQ(c.error, v.message()) << c.annotation;
  }
  EXPECT_TRUE(read_job_variant(testing::make_pod("team-b", "p", "cpu",
                                                 {{"allox.io/job", std::string(253, 'j')}}),
                               DeviceMapping{})
                  .ok());
  EXPECT_TRUE(
      read_job_variant(testing::make_pod("team-b", "p", "cpu", {{"allox.io/job", "a..b.c"}}),
                       DeviceMapping{})
          .ok())
      << "dots inside a name are fine";
}

TEST(PodTest, CheckJobIdTable) {
  struct Case {
    std::string id;
    std::string error;  // "" when valid
  };
  const Case cases[] = {
      {"lab/train", ""},
      {"lab/a..b", ""},
      {std::string(63, 'n') + "/" + std::string(253, 'j'), ""},
      {"train", "expected <namespace>/<name>, got no '/'"},
      {"/train", "expected <namespace>/<name>, got an empty namespace"},
      {"lab/", "expected <namespace>/<name>, got an empty name"},
      {"lab/a/b", "has a '/' beyond the one between namespace and name"},
      {"../lab", "has a \"..\" segment"},
      {"lab/..", "has a \"..\" segment"},
      {"lab/.", "has a \".\" segment"},
      {"lab/a\x7f", "holds a control character"},
      {"l\tb/a", "holds a control character"},
      {std::string(64, 'n') + "/j", "namespace of 64 bytes, over Kubernetes' limit of 63"},
      {"n/" + std::string(100 << 10, 'j'),
       "name of 102400 bytes, over Kubernetes' limit of 253 for names"},
      {"lab/\xff\xfe", "is not UTF-8 text"},
  };
  for (const Case& c : cases) {
    const Status s = check_job_id(c.id);
    EXPECT_EQ(c.error, s ? std::string() : s.message()) << c.id.substr(0, 80);
  }
}

// Kubernetes' own limits on what a pod hands allox: a value over its limit is refused by its
// size, and the error carries at most a short prefix of it, whatever its length.
TEST(PodTest, OverlongNamesAndValuesAreRefusedWithoutEchoingThem) {
  Tenancy tenancy;
  tenancy.user_annotation_namespaces = {"lab"};
  const std::string huge(100 << 10, 'u');
  struct Case {
    nlohmann::json pod;
    std::string error;
  };
  nlohmann::json long_name = testing::make_pod("lab", "p", "cpu");
  long_name["metadata"]["name"] = std::string(254, 'p');
  nlohmann::json long_namespace = testing::make_pod("lab", "p", "cpu");
  long_namespace["metadata"]["namespace"] = std::string(64, 'n');
  const Case cases[] = {
      {testing::make_pod("lab", "p", "cpu", {{"allox.io/user", huge}}),
       "annotation allox.io/user: 102400 bytes, over Kubernetes' limit of 63 for label values"},
      {testing::make_pod("lab", "p", "cpu", {{"allox.io/user", std::string(64, 'u')}}),
       "annotation allox.io/user: 64 bytes, over Kubernetes' limit of 63 for label values"},
      {testing::make_pod("lab", "p", "cpu", {{"allox.io/user", "ali\nce"}}),
       "annotation allox.io/user: holds a control character"},
      {testing::make_pod("lab", "p", "cpu", {{"allox.io/device", huge}}),
       "annotation allox.io/device: 102400 bytes, over Kubernetes' limit of 63 for label values"},
      {testing::make_pod("lab", "p", "cpu", {{"allox.io/time." + std::string(64, 'd'), "5"}}),
       "annotation allox.io/time." + std::string(64, 'd') +
           ": the device type is 64 bytes, over Kubernetes' limit of 63 for label values"},
      {testing::make_pod("lab", "p", "cpu", {{"allox.io/time.gpu", huge}}),
       "annotation allox.io/time.gpu: \"" + std::string(64, 'u') +
           "\"... (102400 bytes) is not a number of seconds"},
      {testing::make_pod("lab", "p", "cpu", {{"allox.io/iterations", huge}}),
       "annotation allox.io/iterations: \"" + std::string(64, 'u') +
           "\"... (102400 bytes) is not a positive whole number within int64"},
      {long_name, "Pod.metadata.name: 254 bytes, over Kubernetes' limit of 253 for names"},
      {long_namespace,
       "Pod.metadata.namespace: 64 bytes, over Kubernetes' limit of 63 for label values"},
  };
  for (const Case& c : cases) {
    auto v = read_job_variant(c.pod, DeviceMapping{}, tenancy);
    ASSERT_FALSE(v.ok()) << c.error;
    EXPECT_EQ(c.error, v.message());
  }
  // Where allox.io/user is not read (the namespace is the user), its size does not matter.
  auto ignored = read_job_variant(
      testing::make_pod("team-a", "p", "cpu", {{"allox.io/user", huge}}), DeviceMapping{}, tenancy);
  ASSERT_TRUE(ignored.ok()) << ignored.message();
  EXPECT_EQ("team-a", ignored->user);
  auto at_limit = read_job_variant(
      testing::make_pod("lab", "p", "cpu", {{"allox.io/user", std::string(63, 'u')}}),
      DeviceMapping{}, tenancy);
  ASSERT_TRUE(at_limit.ok()) << at_limit.message();
  EXPECT_EQ(std::string(63, 'u'), at_limit->user);
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

// A field of the wrong kind is refused naming it, not read as absent (a pod whose containers
// are not a list asked for nothing and was booked as the smallest CPU job).
TEST(PodTest, FieldsOfTheWrongKindAreRefusedNamingThem) {
  DeviceMapping mapping;
  struct Case {
    const char* pointer;
    nlohmann::json value;
    std::string error;
  };
  const Case cases[] = {
      {"/metadata", "x", "Pod.metadata: expected an object"},
      {"/metadata/annotations", "x", "Pod.metadata.annotations: expected an object of strings"},
      {"/spec", "x", "Pod.spec: expected an object"},
      {"/spec/containers", {{"a", 1}}, "Pod.spec.containers: expected a list"},
      {"/spec/initContainers", "x", "Pod.spec.initContainers: expected a list"},
  };
  for (const Case& c : cases) {
    nlohmann::json pod = testing::make_pod("ns", "p", "nvidia.com/gpu");
    pod[nlohmann::json::json_pointer(c.pointer)] = c.value;
    auto v = read_job_variant(pod, mapping);
    ASSERT_FALSE(v.ok()) << c.pointer;
    EXPECT_EQ(c.error, v.message()) << c.pointer;
  }
  // Absent or null is what Kubernetes means by none.
  nlohmann::json pod = testing::make_pod("ns", "p", "nvidia.com/gpu");
  pod["metadata"]["annotations"] = nullptr;
  pod["spec"]["initContainers"] = nullptr;
  EXPECT_TRUE(read_job_variant(pod, mapping).ok());
}

// A pod whose one container requests `requests` (quantities as Kubernetes writes them).
nlohmann::json pod_requesting(const nlohmann::json& requests,
                              const std::map<std::string, std::string>& annotations = {}) {
  nlohmann::json pod = testing::make_pod("ns", "p", "cpu", annotations);
  pod["spec"]["containers"][0]["resources"] = {{"requests", requests}};
  return pod;
}

TEST(PodTest, UnitsAreTheDevicesOfItsTypeItRequests) {
  DeviceMapping mapping;
  mapping.resources = {{"nvidia.com/gpu", "gpu"}, {"amd.com/gpu", "gpu"}};
  mapping.cores_per_machine = 32;
  struct Case {
    nlohmann::json requests;
    const char* device;
    int units;
  };
  const Case cases[] = {
      {{{"nvidia.com/gpu", "1"}}, "gpu", 1},
      {{{"nvidia.com/gpu", "2"}, {"cpu", "8"}}, "gpu", 2},
      {{{"nvidia.com/gpu", 4}}, "gpu", 4},
      {{{"nvidia.com/gpu", "64"}}, "gpu", 64},
      {{{"nvidia.com/gpu", "1"}, {"amd.com/gpu", "2"}}, "gpu", 3},
      {{{"cpu", "500m"}}, "cpu", 1},
      {{{"cpu", "32"}}, "cpu", 1},
      {{{"cpu", "33"}}, "cpu", 2},
      {{{"cpu", "64"}}, "cpu", 2},
      {{{"memory", "1Gi"}}, "cpu", 1},
      {nlohmann::json::object(), "cpu", 1},
  };
  for (const Case& c : cases) {
    auto v = read_job_variant(pod_requesting(c.requests), mapping);
    ASSERT_TRUE(v.ok()) << c.requests.dump() << ": " << v.message();
    EXPECT_EQ(c.device, v->device) << c.requests.dump();
    EXPECT_EQ(c.units, v->units) << c.requests.dump();
  }
  // Two containers add up, as the scheduler's NodeResourcesFit adds them.
  nlohmann::json two = pod_requesting({{"nvidia.com/gpu", "1"}});
  two["spec"]["containers"].push_back(
      {{"name", "side"}, {"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}});
  auto summed = read_job_variant(two, mapping);
  ASSERT_TRUE(summed.ok()) << summed.message();
  EXPECT_EQ(3, summed->units);
  // A device named by annotation counts the resources mapping to it; none requested is one.
  auto named =
      read_job_variant(pod_requesting({{"cpu", "4"}}, {{"allox.io/device", "v100"}}), mapping);
  ASSERT_TRUE(named.ok()) << named.message();
  EXPECT_EQ(1, named->units);
}

// The pod's effective requests, as kube-scheduler counts them on the node.
TEST(PodTest, UnitsCountInitContainersSidecarsAndOverheadAsTheSchedulerDoes) {
  DeviceMapping mapping;
  mapping.resources = {{"nvidia.com/gpu", "gpu"}};
  mapping.cores_per_machine = 32;
  auto units = [&](const nlohmann::json& pod) {
    auto v = read_job_variant(pod, mapping);
    EXPECT_TRUE(v.ok()) << v.message();
    return v.ok() ? v->units : -1;
  };
  auto init = [](const char* name, const nlohmann::json& requests, bool sidecar = false) {
    nlohmann::json c = {{"name", name}, {"resources", {{"requests", requests}}}};
    if (sidecar) c["restartPolicy"] = "Always";
    return c;
  };
  // An init container needing more than the containers sets the pod's count...
  nlohmann::json pod = pod_requesting({{"nvidia.com/gpu", "1"}});
  pod["spec"]["initContainers"] =
      nlohmann::json::array({init("warm-up", {{"nvidia.com/gpu", "4"}})});
  EXPECT_EQ(4, units(pod));
  // ...one needing less does not, and init containers run one at a time: never summed.
  pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "3";
  pod["spec"]["initContainers"] = nlohmann::json::array(
      {init("a", {{"nvidia.com/gpu", "2"}}), init("b", {{"nvidia.com/gpu", "2"}})});
  EXPECT_EQ(3, units(pod));
  // A sidecar runs beside the containers (added) and beside the init containers after it.
  pod["spec"]["initContainers"] = nlohmann::json::array(
      {init("proxy", {{"nvidia.com/gpu", "1"}}, true), init("b", {{"nvidia.com/gpu", "4"}})});
  EXPECT_EQ(5, units(pod));  // b with the sidecar: 5; the containers with it: 4
  pod["spec"]["initContainers"] = nlohmann::json::array(
      {init("b", {{"nvidia.com/gpu", "4"}}), init("proxy", {{"nvidia.com/gpu", "1"}}, true)});
  EXPECT_EQ(4, units(pod));  // b before the sidecar: 4; the containers with it: 4
  // Limits stand in for an init container's missing requests too.
  pod["spec"]["initContainers"] = nlohmann::json::array(
      {{{"name", "l"}, {"resources", {{"limits", {{"nvidia.com/gpu", "6"}}}}}}});
  EXPECT_EQ(6, units(pod));
  // CPU: an init container's cores and the runtime's overhead count toward the bundles.
  nlohmann::json cpu = pod_requesting({{"cpu", "30"}});
  EXPECT_EQ(1, units(cpu));
  cpu["spec"]["overhead"] = {{"cpu", "4"}};
  EXPECT_EQ(2, units(cpu));
  cpu["spec"].erase("overhead");
  cpu["spec"]["initContainers"] = nlohmann::json::array({init("unpack", {{"cpu", "96"}})});
  EXPECT_EQ(3, units(cpu));
  // A bad quantity in either list is named by its place.
  cpu["spec"]["initContainers"] = nlohmann::json::array({init("unpack", {{"cpu", "lots"}})});
  auto bad = read_job_variant(cpu, mapping);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string::npos,
            bad.message().find("Pod.spec.initContainers[0].resources.requests.cpu"))
      << bad.message();
  cpu["spec"].erase("initContainers");
  cpu["spec"]["overhead"] = {{"cpu", true}};
  bad = read_job_variant(cpu, mapping);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string::npos, bad.message().find("Pod.spec.overhead.cpu: expected a quantity"))
      << bad.message();
}

TEST(PodTest, AbsurdDeviceCountsAreErrorsNamingTheResource) {
  DeviceMapping mapping;
  mapping.cores_per_machine = 32;
  struct Case {
    nlohmann::json requests;
    const char* error;
  };
  const Case cases[] = {
      {{{"nvidia.com/gpu", "1.5"}},
       "Pod.spec.containers.resources.nvidia.com/gpu: 1.5 is not a whole number of gpu devices"},
      {{{"nvidia.com/gpu", "500m"}},
       "Pod.spec.containers.resources.nvidia.com/gpu: 0.5 is not a whole number of gpu devices"},
      {{{"nvidia.com/gpu", "65"}},
       "Pod.spec.containers.resources.nvidia.com/gpu: 65 gpu devices, over allox's limit of 64 "
       "on one node"},
      {{{"nvidia.com/gpu", "1e300"}}, "over allox's limit of 64 on one node"},
      {{{"cpu", "4000"}},
       "Pod.spec.containers.resources.cpu: 4000 cores are 125 CPU bundles of 32, over allox's "
       "limit of 64 on one node"},
  };
  for (const Case& c : cases) {
    auto v = read_job_variant(pod_requesting(c.requests), mapping);
    ASSERT_FALSE(v.ok()) << c.requests.dump() << " read as " << v->units << " units";
    EXPECT_NE(std::string::npos, v.message().find(c.error)) << v.message();
  }
}

}  // namespace
}  // namespace allox::extender
