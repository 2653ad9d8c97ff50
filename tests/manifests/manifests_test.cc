// The deployment manifests agree with what alloxd serves: every manifest parses, the
// kube-scheduler extender stanza uses only extender v1 field names, its verbs are routes alloxd
// answers and its port is the one the shipped alloxd config listens on, and the kustomization
// renders with `kubectl kustomize` (scripts/install-deps.sh installs kubectl; without it the
// test fails rather than skips).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "extender/admission.h"
#include "extender/config.h"
#include "extender/request_threads.h"
#include "extender/routes.h"

namespace allox {
namespace {

namespace fs = std::filesystem;

const fs::path kManifests = fs::path(ALLOX_SOURCE_DIR) / "manifests";

// k8s.io/kube-scheduler/config/v1 Extender, as spelled in YAML.
const std::set<std::string> kExtenderFields = {
    "urlPrefix",   "filterVerb",       "preemptVerb",      "prioritizeVerb",
    "weight",      "bindVerb",         "enableHTTPS",      "tlsConfig",
    "httpTimeout", "nodeCacheCapable", "managedResources", "ignorable"};

// A fresh directory for this call's stand-in secrets, removed afterwards. (A fixed path was
// shared by the Manifests tests ctest runs side by side, and by every checkout on the machine:
// one test truncating a stand-in while another read it made the loader see an empty token.)
class StandInDir {
 public:
  StandInDir() {
    std::string pattern = (fs::temp_directory_path() / "allox-manifests-XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~StandInDir() {
    std::error_code ignored;
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }
  StandInDir(const StandInDir&) = delete;
  StandInDir& operator=(const StandInDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// The shipped alloxd config, with the secret files it names (admin token, service-account
// token and CA, mounted in the pod) replaced by stand-ins, so the loader checks everything else.
// The loader reads the files while parsing, so they may go once it returns.
Expected<extender::ExtenderConfig> shipped_alloxd_config() {
  StandInDir dir;
  if (dir.path().empty()) return Error{"cannot create a directory for the stand-in secrets"};
  const fs::path& secrets = dir.path();
  std::ifstream in(kManifests / "alloxd.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* file :
       {"/etc/allox/admin/token", "/var/run/secrets/kubernetes.io/serviceaccount/token",
        "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"}) {
    const fs::path stand_in = secrets / fs::path(file).filename();
    std::ofstream(stand_in) << "stand-in\n";
    for (std::size_t at = text.find(file); at != std::string::npos; at = text.find(file)) {
      text.replace(at, std::string(file).size(), stand_in.string());
    }
  }
  return extender::parse_extender_config(text, "manifests/alloxd.yaml");
}

YAML::Node extender_stanza() {
  const YAML::Node config = YAML::LoadFile((kManifests / "scheduler-config.yaml").string());
  EXPECT_EQ("kubescheduler.config.k8s.io/v1", config["apiVersion"].as<std::string>());
  EXPECT_EQ("KubeSchedulerConfiguration", config["kind"].as<std::string>());
  EXPECT_EQ(1u, config["extenders"].size());
  return config["extenders"][0];
}

TEST(Manifests, EveryDocumentParsesAndNamesItsKind) {
  int documents = 0;
  for (const fs::path& dir : {kManifests, kManifests / "examples"}) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() != ".yaml") continue;
      const std::string name = entry.path().filename().string();
      if (name == "kustomization.yaml" || name == "alloxd.yaml") continue;
      for (const YAML::Node& doc : YAML::LoadAllFromFile(entry.path().string())) {
        EXPECT_TRUE(doc["apiVersion"].IsScalar()) << name;
        EXPECT_TRUE(doc["kind"].IsScalar()) << name;
        if (doc["kind"].as<std::string>() != "KubeSchedulerConfiguration") {
          EXPECT_TRUE(doc["metadata"]["name"].IsScalar()) << name;
        }
        ++documents;
      }
    }
  }
  EXPECT_GE(documents, 12);
}

TEST(Manifests, SchedulerProfileScoresEveryNode) {
  const YAML::Node config = YAML::LoadFile((kManifests / "scheduler-config.yaml").string());
  EXPECT_EQ("allox-scheduler", config["profiles"][0]["schedulerName"].as<std::string>());
  EXPECT_EQ(100, config["percentageOfNodesToScore"].as<int>());
}

TEST(Manifests, ExtenderStanzaUsesOnlyV1FieldNames) {
  const YAML::Node extender = extender_stanza();
  for (const auto& field : extender) {
    EXPECT_EQ(1u, kExtenderFields.count(field.first.as<std::string>()))
        << "not an extender v1 field: " << field.first.as<std::string>();
  }
  EXPECT_TRUE(extender["nodeCacheCapable"].as<bool>());
}

// Every pod of allox's scheduler must reach alloxd, CPU-only variants included: with
// managedResources kube-scheduler binds the others itself and a job runs twice, and
// an ignorable extender is skipped when it does not answer.
TEST(Manifests, EveryPodOfAlloxsSchedulerGoesToTheExtender) {
  const YAML::Node extender = extender_stanza();
  EXPECT_FALSE(extender["managedResources"].IsDefined());
  ASSERT_TRUE(extender["ignorable"].IsDefined());
  EXPECT_FALSE(extender["ignorable"].as<bool>());
  auto config = shipped_alloxd_config();
  ASSERT_TRUE(config.ok()) << config.message();
  const YAML::Node scheduler = YAML::LoadFile((kManifests / "scheduler-config.yaml").string());
  EXPECT_EQ(scheduler["profiles"][0]["schedulerName"].as<std::string>(), config->scheduler_name);
}

// The gate webhook: registered for pod creation with a failure policy and a namespace selector
// an operator can read, reaching alloxd's webhook listener through the Service on the path
// alloxd serves.
TEST(Manifests, GateWebhookReachesAlloxdsWebhookListener) {
  const YAML::Node registration = YAML::LoadFile((kManifests / "webhook.yaml").string());
  EXPECT_EQ("admissionregistration.k8s.io/v1", registration["apiVersion"].as<std::string>());
  EXPECT_EQ("MutatingWebhookConfiguration", registration["kind"].as<std::string>());
  ASSERT_EQ(1u, registration["webhooks"].size());
  const YAML::Node hook = registration["webhooks"][0];
  EXPECT_EQ("Ignore", hook["failurePolicy"].as<std::string>());
  EXPECT_EQ("None", hook["sideEffects"].as<std::string>());
  EXPECT_EQ("v1", hook["admissionReviewVersions"][0].as<std::string>());
  EXPECT_EQ("enabled",
            hook["namespaceSelector"]["matchLabels"]["allox.io/queue"].as<std::string>());
  EXPECT_EQ("CREATE", hook["rules"][0]["operations"][0].as<std::string>());
  EXPECT_EQ("pods", hook["rules"][0]["resources"][0].as<std::string>());
  const YAML::Node target = hook["clientConfig"]["service"];
  EXPECT_EQ(extender::kGateWebhookPath, target["path"].as<std::string>());

  const YAML::Node service = YAML::LoadFile((kManifests / "webhook-service.yaml").string());
  EXPECT_EQ(target["name"].as<std::string>(), service["metadata"]["name"].as<std::string>());
  EXPECT_EQ(target["namespace"].as<std::string>(),
            service["metadata"]["namespace"].as<std::string>());
  EXPECT_EQ(target["port"].as<int>(), service["spec"]["ports"][0]["port"].as<int>());
  const std::string port_name = service["spec"]["ports"][0]["targetPort"].as<std::string>();

  const YAML::Node deployment = YAML::LoadFile((kManifests / "deployment.yaml").string());
  const YAML::Node alloxd = deployment["spec"]["template"]["spec"]["containers"][1];
  int container_port = 0;
  for (const auto& port : alloxd["ports"]) {
    if (port["name"].as<std::string>() == port_name)
      container_port = port["containerPort"].as<int>();
  }
  auto config = shipped_alloxd_config();
  ASSERT_TRUE(config.ok()) << config.message();
  ASSERT_TRUE(config->webhook.has_value());
  EXPECT_EQ(config->webhook->listen.port, container_port);
  EXPECT_FALSE(config->webhook->tls_cert_file.empty());
  bool mounted = false;
  for (const auto& mount : alloxd["volumeMounts"]) {
    mounted = mounted || config->webhook->tls_cert_file.rfind(
                             mount["mountPath"].as<std::string>() + "/", 0) == 0;
  }
  EXPECT_TRUE(mounted) << "the TLS Secret is mounted where alloxd.yaml reads it";
}

TEST(Manifests, VerbsAndPortMatchWhatAlloxdServes) {
  const YAML::Node extender = extender_stanza();
  auto config = shipped_alloxd_config();
  ASSERT_TRUE(config.ok()) << config.message();
  EXPECT_EQ("http://127.0.0.1:" + std::to_string(config->listen_port),
            extender["urlPrefix"].as<std::string>());
  const std::array<std::pair<const char*, extender::Verb>, 4> verbs = {{
      {"filterVerb", extender::Verb::kFilter},
      {"prioritizeVerb", extender::Verb::kPrioritize},
      {"bindVerb", extender::Verb::kBind},
      {"preemptVerb", extender::Verb::kPreempt},
  }};
  for (const auto& [field, verb] : verbs) {
    ASSERT_TRUE(extender[field]) << field;
    EXPECT_EQ(verb, extender::verb_of("/" + extender[field].as<std::string>())) << field;
  }
}

TEST(Manifests, DeploymentProbesAndMountsFitTheConfigs) {
  const YAML::Node deployment = YAML::LoadFile((kManifests / "deployment.yaml").string());
  const YAML::Node containers = deployment["spec"]["template"]["spec"]["containers"];
  ASSERT_EQ(2u, containers.size());
  const YAML::Node scheduler = containers[0];
  const YAML::Node alloxd = containers[1];
  EXPECT_EQ("kube-scheduler", scheduler["name"].as<std::string>());
  EXPECT_EQ("alloxd", alloxd["name"].as<std::string>());
  EXPECT_EQ("/healthz", alloxd["livenessProbe"]["httpGet"]["path"].as<std::string>());
  EXPECT_EQ("/readyz", alloxd["readinessProbe"]["httpGet"]["path"].as<std::string>());
  auto config = shipped_alloxd_config();
  ASSERT_TRUE(config.ok()) << config.message();
  ASSERT_TRUE(config->reports_listen.has_value());
  EXPECT_EQ(config->reports_listen->port, alloxd["livenessProbe"]["httpGet"]["port"].as<int>());
  EXPECT_EQ("/etc/allox/alloxd/alloxd.yaml", alloxd["args"][1].as<std::string>());
  bool mounted = false;
  for (const auto& mount : alloxd["volumeMounts"]) {
    mounted = mounted || mount["mountPath"].as<std::string>() == "/etc/allox/alloxd";
  }
  EXPECT_TRUE(mounted);
}

// alloxd's default request_threads (auto) runs kube-scheduler's listener real-time when the pod
// grants SYS_NICE and the listener is on loopback: the deployment grants that one capability to
// alloxd alone, and the shipped config keeps the listener where only the pod reaches it.
TEST(Manifests, AlloxdAnswersKubeSchedulerInRealTimeWithOneCapabilityMore) {
  const YAML::Node deployment = YAML::LoadFile((kManifests / "deployment.yaml").string());
  const YAML::Node containers = deployment["spec"]["template"]["spec"]["containers"];
  ASSERT_EQ(2u, containers.size());
  EXPECT_FALSE(containers[0]["securityContext"]) << "kube-scheduler runs as the image has it";
  const YAML::Node capabilities = containers[1]["securityContext"]["capabilities"];
  ASSERT_TRUE(capabilities) << "alloxd's securityContext.capabilities";
  ASSERT_EQ(1u, capabilities["add"].size());
  EXPECT_EQ("SYS_NICE", capabilities["add"][0].as<std::string>());
  EXPECT_FALSE(containers[1]["securityContext"]["privileged"]);
  auto config = shipped_alloxd_config();
  ASSERT_TRUE(config.ok()) << config.message();
  EXPECT_EQ(extender::RequestThreads::kAuto, config->request_threads);
  EXPECT_EQ(extender::RequestClass::kRealtime,
            extender::choose_request_class(config->request_threads, config->listen_host, OkStatus())
                .chosen);
}

TEST(Manifests, KustomizationRenders) {
  ASSERT_EQ(0, std::system("command -v kubectl >/dev/null 2>&1"))
      << "kubectl is not installed: run scripts/install-deps.sh";
  const std::string command = "kubectl kustomize " + kManifests.string() + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(nullptr, pipe);
  std::string rendered;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) rendered.append(buffer, n);
  ASSERT_EQ(0, pclose(pipe)) << rendered;
  std::multiset<std::string> kinds;
  for (const YAML::Node& doc : YAML::LoadAll(rendered)) kinds.insert(doc["kind"].as<std::string>());
  for (const char* kind : {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                           "Deployment", "Service", "ConfigMap"}) {
    EXPECT_GE(kinds.count(kind), 1u) << kind;
  }
  EXPECT_EQ(2u, kinds.count("ConfigMap"));
}

}  // namespace
}  // namespace allox
