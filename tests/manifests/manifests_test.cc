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

#include "alloxd/config.h"
#include "alloxd/model/job.h"
#include "alloxd/http/request_threads.h"
#include "alloxd/http/routes.h"
#include "alloxd/verbs/admission.h"
#include "kubesim/job_objects.h"

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

// PodSecurity `restricted` (the 1.28 profile, which contains `baseline`) for one pod template:
// every violation as one line naming the field.
std::string restricted_violations(const YAML::Node& pod) {
  std::string out;
  auto flag = [&out](const std::string& what) { out += what + "\n"; };
  for (const char* host : {"hostNetwork", "hostPID", "hostIPC"}) {
    if (pod[host] && pod[host].as<bool>()) flag(std::string("spec.") + host);
  }
  for (const auto& volume : pod["volumes"]) {
    if (volume["hostPath"]) flag("volume " + volume["name"].as<std::string>() + ": hostPath");
  }
  const YAML::Node pod_context = pod["securityContext"];
  const bool pod_non_root = pod_context && pod_context["runAsNonRoot"] &&
                            pod_context["runAsNonRoot"].as<bool>();
  const bool pod_seccomp = pod_context && pod_context["seccompProfile"] &&
                           pod_context["seccompProfile"]["type"].as<std::string>() ==
                               "RuntimeDefault";
  for (const auto& container : pod["containers"]) {
    const std::string name = "container " + container["name"].as<std::string>() + ": ";
    const YAML::Node context = container["securityContext"];
    if (!context) {
      flag(name + "no securityContext");
      continue;
    }
    if (context["privileged"] && context["privileged"].as<bool>()) flag(name + "privileged");
    if (!context["allowPrivilegeEscalation"] || context["allowPrivilegeEscalation"].as<bool>()) {
      flag(name + "allowPrivilegeEscalation must be false");
    }
    const YAML::Node capabilities = context["capabilities"];
    bool drops_all = false;
    if (capabilities && capabilities["drop"]) {
      for (const auto& c : capabilities["drop"]) drops_all |= c.as<std::string>() == "ALL";
    }
    if (!drops_all) flag(name + "capabilities.drop must hold ALL");
    if (capabilities && capabilities["add"]) {
      for (const auto& c : capabilities["add"]) {
        if (c.as<std::string>() != "NET_BIND_SERVICE") flag(name + "adds " + c.as<std::string>());
      }
    }
    const bool non_root = context["runAsNonRoot"] ? context["runAsNonRoot"].as<bool>()
                                                  : pod_non_root;
    if (!non_root) flag(name + "runAsNonRoot must be true");
    if (context["runAsUser"] && context["runAsUser"].as<long>() == 0) {
      flag(name + "runAsUser 0");
    }
    const bool seccomp = context["seccompProfile"]
                             ? context["seccompProfile"]["type"].as<std::string>() ==
                                   "RuntimeDefault"
                             : pod_seccomp;
    if (!seccomp) flag(name + "seccompProfile must be RuntimeDefault");
    for (const auto& port : container["ports"]) {
      if (port["hostPort"]) flag(name + "hostPort");
    }
  }
  return out;
}

// The shipped Deployment passes PodSecurity `restricted`: both containers run as numeric
// non-root users (runAsNonRoot cannot be verified against the image's named user), with no
// capability, no privilege escalation and the runtime's seccomp profile; alloxd's threads are
// all normal-class (request_threads: normal).
TEST(Manifests, DeploymentPassesPodSecurityRestricted) {
  const YAML::Node deployment = YAML::LoadFile((kManifests / "deployment.yaml").string());
  EXPECT_EQ("", restricted_violations(deployment["spec"]["template"]["spec"]));
  for (const auto& container : deployment["spec"]["template"]["spec"]["containers"]) {
    EXPECT_GT(container["securityContext"]["runAsUser"].as<long>(), 0)
        << container["name"].as<std::string>();
  }
  auto config = shipped_alloxd_config();
  ASSERT_TRUE(config.ok()) << config.message();
  EXPECT_EQ(extender::RequestThreads::kNormal, config->request_threads);
}

// The check above can fail: a SYS_NICE grant, a root user and a missing seccomp profile are
// each named.
TEST(Manifests, PodSecurityCheckNamesEachViolation) {
  const YAML::Node pod = YAML::Load(R"(
containers:
  - name: a
    securityContext: {runAsUser: 0, allowPrivilegeEscalation: false,
                      capabilities: {drop: [ALL], add: [SYS_NICE]}})");
  const std::string violations = restricted_violations(pod);
  EXPECT_NE(std::string::npos, violations.find("container a: adds SYS_NICE")) << violations;
  EXPECT_NE(std::string::npos, violations.find("container a: runAsUser 0")) << violations;
  EXPECT_NE(std::string::npos, violations.find("container a: runAsNonRoot must be true"))
      << violations;
  EXPECT_NE(std::string::npos, violations.find("seccompProfile must be RuntimeDefault"))
      << violations;
}

// Runs `kubectl kustomize` on `dir`; the rendered YAML, or the failure's output.
Expected<std::string> kustomize(const fs::path& dir) {
  if (std::system("command -v kubectl >/dev/null 2>&1") != 0) {
    return Error{"kubectl is not installed: run scripts/install-deps.sh"};
  }
  const std::string command = "kubectl kustomize " + dir.string() + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return Error{"popen failed"};
  std::string rendered;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) rendered.append(buffer, n);
  if (pclose(pipe) != 0) return Error{rendered};
  return rendered;
}

// manifests/realtime/ as an operator uses it (a kustomization of their own with the shipped
// manifests as its resource and the component beside): alloxd alone gets SYS_NICE, as uid 0 with
// every other capability dropped, and is told --request-threads auto; kube-scheduler is as
// shipped. (TheRealtimeOverlaysOneCapabilityTakesEffectForUidZero in tests/alloxd runs alloxd
// under exactly these credentials.)
TEST(Manifests, RealtimeComponentGrantsOneCapabilityToAlloxdAlone) {
  StandInDir dir;
  ASSERT_FALSE(dir.path().empty());
  fs::create_directory_symlink(kManifests, dir.path() / "allox");
  std::ofstream(dir.path() / "kustomization.yaml")
      << "resources: [allox]\ncomponents: [allox/realtime]\n";
  auto rendered = kustomize(dir.path());
  ASSERT_TRUE(rendered.ok()) << rendered.message();
  YAML::Node pod;
  for (const YAML::Node& doc : YAML::LoadAll(*rendered)) {
    if (doc["kind"].as<std::string>() == "Deployment") pod = doc["spec"]["template"]["spec"];
  }
  ASSERT_TRUE(pod) << *rendered;
  YAML::Node scheduler, alloxd;  // kustomize may reorder the patched list
  for (const YAML::Node& container : pod["containers"]) {
    if (container["name"].as<std::string>() == "alloxd") {
      alloxd = container;
    } else {
      scheduler = container;
    }
  }
  ASSERT_TRUE(alloxd && scheduler) << *rendered;
  EXPECT_EQ(65532, scheduler["securityContext"]["runAsUser"].as<long>());
  EXPECT_EQ("container alloxd: adds SYS_NICE\ncontainer alloxd: runAsNonRoot must be true\n"
            "container alloxd: runAsUser 0\n",
            restricted_violations(pod));
  const YAML::Node args = alloxd["args"];
  ASSERT_EQ(4u, args.size());
  EXPECT_EQ("--request-threads", args[2].as<std::string>());
  EXPECT_EQ("auto", args[3].as<std::string>());
  auto threads = extender::parse_request_threads(args[3].as<std::string>());
  ASSERT_TRUE(threads.ok());
  auto config = shipped_alloxd_config();
  ASSERT_TRUE(config.ok()) << config.message();
  EXPECT_EQ(allox::RequestClass::kRealtime,
            extender::choose_request_class(*threads, config->listen_host, OkStatus()).chosen);
}

TEST(Manifests, KustomizationRenders) {
  auto rendered = kustomize(kManifests);
  ASSERT_TRUE(rendered.ok()) << rendered.message();
  std::multiset<std::string> kinds;
  for (const YAML::Node& doc : YAML::LoadAll(*rendered)) kinds.insert(doc["kind"].as<std::string>());
  for (const char* kind : {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                           "Deployment", "Service", "ConfigMap"}) {
    EXPECT_GE(kinds.count(kind), 1u) << kind;
  }
  EXPECT_EQ(2u, kinds.count("ConfigMap"));
}

// A YAML node as the JSON the API server would take (numbers stay numbers, as kubectl sends them).
nlohmann::json as_json(const YAML::Node& node) {
  if (node.IsMap()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& item : node) out[item.first.as<std::string>()] = as_json(item.second);
    return out;
  }
  if (node.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : node) out.push_back(as_json(item));
    return out;
  }
  if (node.IsNull()) return nullptr;
  const std::string text = node.as<std::string>();
  if (node.Tag() != "!" && !text.empty() &&
      text.find_first_not_of("0123456789") == std::string::npos) {
    return std::stoll(text);
  }
  return text;
}

// alloxd reads Jobs, deletes unused sibling Jobs and posts events on them.
TEST(Manifests, TheRoleReadsAndDeletesJobs) {
  std::set<std::string> verbs;
  for (const YAML::Node& doc : YAML::LoadAllFromFile((kManifests / "rbac.yaml").string())) {
    if (doc["kind"].as<std::string>() != "ClusterRole") continue;
    for (const YAML::Node& rule : doc["rules"]) {
      bool batch = false, jobs = false;
      for (const YAML::Node& group : rule["apiGroups"]) batch |= group.as<std::string>() == "batch";
      for (const YAML::Node& resource : rule["resources"]) jobs |= resource.as<std::string>() == "jobs";
      if (!batch || !jobs) continue;
      for (const YAML::Node& verb : rule["verbs"]) verbs.insert(verb.as<std::string>());
    }
  }
  EXPECT_EQ((std::set<std::string>{"delete", "get", "list", "watch"}), verbs);
}

// The Job example is valid batch/v1 (as the emulator's API server validates it) and is one job
// offered as two sibling Jobs of one pod each: a GPU of any model, and CPU.
TEST(Manifests, TheJobExampleIsTwoVariantsOfOneJob) {
  std::set<std::string> jobs;
  int count = 0;
  for (const YAML::Node& doc :
       YAML::LoadAllFromFile((kManifests / "examples" / "job-gpu-interchange.yaml").string())) {
    nlohmann::json job = as_json(doc);
    auto prepared = emulator::prepare_new_job(job);
    ASSERT_TRUE(std::holds_alternative<nlohmann::json>(prepared))
        << std::get<emulator::ApiError>(prepared).message;
    auto facts = extender::read_job(std::get<nlohmann::json>(prepared));
    ASSERT_TRUE(facts.ok()) << facts.message();
    auto gang = extender::gang_of(*facts);
    ASSERT_TRUE(gang.ok()) << gang.message();
    EXPECT_EQ(1, *gang);
    jobs.insert(facts->job_id);
    const nlohmann::json& node_selector =
        job["spec"]["template"]["spec"].value("nodeSelector", nlohmann::json::object());
    EXPECT_TRUE(node_selector.empty()) << "no GPU model pin";
    ++count;
  }
  EXPECT_EQ(2, count);
  EXPECT_EQ(std::set<std::string>{"ml-team-a/resnet50-train"}, jobs);
}

// The gang example is valid batch/v1 and one Indexed Job whose 4 pods are one gang of 4.
TEST(Manifests, TheIndexedJobExampleIsAGangOfFour) {
  int count = 0;
  for (const YAML::Node& doc :
       YAML::LoadAllFromFile((kManifests / "examples" / "indexed-job-gang.yaml").string())) {
    nlohmann::json job = as_json(doc);
    auto prepared = emulator::prepare_new_job(job);
    ASSERT_TRUE(std::holds_alternative<nlohmann::json>(prepared))
        << std::get<emulator::ApiError>(prepared).message;
    auto facts = extender::read_job(std::get<nlohmann::json>(prepared));
    ASSERT_TRUE(facts.ok()) << facts.message();
    auto gang = extender::gang_of(*facts);
    ASSERT_TRUE(gang.ok()) << gang.message();
    EXPECT_EQ(4, *gang);
    EXPECT_EQ("ml-team-a/llama-finetune", facts->job_id);
    EXPECT_EQ("2", job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"].value(
                       "nvidia.com/gpu", ""));
    ++count;
  }
  EXPECT_EQ(1, count);
}

}  // namespace
}  // namespace allox
