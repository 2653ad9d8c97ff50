// Everything at once, end to end: H100 and A100 nodes (labelled nvidia.com/gpu.product, mapped by
// the config's devices[].node_labels) and a CPU node; bare pods of 1, 2 and 4 GPUs naming no
// model; an Indexed batch/v1 Job of 4 pods × 2 GPUs (completions = parallelism = 4: one gang);
// two sibling Jobs naming one allox job (a GPU and a CPU variant); a CPU pod; and a pod of 8 GPUs
// that no node can hold. Through the emulator's fake API server, its Job controller and garbage
// collector, the kube-scheduler v1.28 emulator and fake kubelets (each pod runs for its hint on
// its node's model), with alloxd in process and its mutating webhook gating every pod created.
//
// Checked from the API server's own records (ApiLedger, the deletions, the events):
//   - no node is ever over-committed;
//   - the gang is never partly bound: its 4 members bind within the gather window before any of
//     them ends, and 4 of them run together;
//   - every job is bound exactly once (the gang: each of its 4 members once);
//   - the 8-GPU pod is parked with its reason, never ungated nor bound;
//   - every pod is bound to the node the plan pinned it to; the model the plan chose (the gang's
//     Admitted events, /v1/jobs/{id}) is the model of the node each pod was bound to, the gang's
//     members all on that one model;
//   - the sibling Job not chosen is deleted, its pods after it (Background propagation).
// And an Indexed Job gang rolled back after a refused Binding: its members deleted, the Job's new
// pods rejoin the same allox job, bound whole.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/alloxd/testing/end_to_end_cluster.h"
#include "tests/alloxd/testing/job_control_plane.h"

namespace allox::extender {
namespace {

using nlohmann::json;

constexpr char kConfig[] = R"(
policy: allox
alpha: 1
tick: 1
retention: {finished_seconds: 86400}  # /v1/jobs/{id} of every job once all have finished
devices:
  - resource: nvidia.com/gpu
    device: gpu
    node_labels:
      - {label: nvidia.com/gpu.product, value: NVIDIA-H100-80GB-HBM3, device: h100}
      - {label: nvidia.com/gpu.product, value: NVIDIA-A100-SXM4-40GB, device: a100}
cpu: {device: cpu, cores_per_machine: 32}
nodes:
  - {name: h100-0, machines: {h100: 4}}
  - {name: h100-1, machines: {h100: 4}}
  - {name: a100-0, machines: {a100: 4}}
  - {name: a100-1, machines: {a100: 2}}
  - {name: cpu-0, machines: {cpu: 2}}
)";

// The gather window (VerbOptions::gang_bind_wait), in seconds.
constexpr double kGatherWindow = 3.0;

json hints(const std::string& job, double h100, double a100, double cpu = 0) {
  json out = {{"allox.io/job", job},
              {"allox.io/time.h100", std::to_string(static_cast<int>(h100))},
              {"allox.io/time.a100", std::to_string(static_cast<int>(a100))}};
  if (cpu > 0) out["allox.io/time.cpu"] = std::to_string(static_cast<int>(cpu));
  return out;
}

json container(int gpus) {
  json requests =
      gpus > 0 ? json{{"nvidia.com/gpu", std::to_string(gpus)}, {"cpu", "1"}} : json{{"cpu", "32"}};
  return {{"name", "main"},
          {"image", "registry.invalid/train:latest"},
          {"resources", {{"requests", requests}}}};
}

json pod_spec(int gpus, const std::string& scheduler) {
  return {{"schedulerName", scheduler},
          {"restartPolicy", "Never"},
          {"containers", json::array({container(gpus)})}};
}

// A bare pod of its own allox job (the webhook gates it).
json bare_pod(const std::string& name, int gpus, const json& annotations,
              const std::string& scheduler) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"annotations", annotations}}},
          {"spec", pod_spec(gpus, scheduler)}};
}

// A batch/v1 Job; `pods` > 1 makes it Indexed with completions = parallelism = pods.
json batch_job(const std::string& name, int pods, int gpus, const json& annotations,
               const std::string& scheduler) {
  json spec = {
      {"backoffLimit", 6},
      {"template",
       {{"metadata", {{"annotations", annotations}}}, {"spec", pod_spec(gpus, scheduler)}}}};
  if (pods > 1) {
    spec["completionMode"] = "Indexed";
    spec["completions"] = pods;
    spec["parallelism"] = pods;
  }
  return {
      {"apiVersion", "batch/v1"}, {"kind", "Job"}, {"metadata", {{"name", name}}}, {"spec", spec}};
}

std::string annotation(const json& pod, const std::string& key) {
  return pod["metadata"].value("annotations", json::object()).value(key, "");
}

// The device an Admitted message names: "starts on NODE (D)", "starts on NODE (D ×k)", or
// "starts on gang of N × D ×k on NODE, ...".
std::string admitted_device(const std::string& message) {
  const std::string gang = "starts on gang of ";
  if (message.rfind(gang, 0) == 0) {
    const std::size_t at = message.find("× ", gang.size());
    if (at == std::string::npos) return "";
    const std::size_t from = at + std::string("× ").size();
    return message.substr(from, message.find(' ', from) - from);
  }
  const std::size_t open = message.find('(');
  if (open == std::string::npos) return "";
  const std::size_t end = message.find_first_of(" )", open + 1);
  return message.substr(open + 1, end - open - 1);
}

TEST(CombinedEndToEndTest, ModelsUnitsAGangJobSiblingJobsAndAPodThatFitsNowhere) {
  auto config = parse_extender_config(kConfig, "combined.yaml");
  ASSERT_TRUE(config.ok()) << config.message();
  PolicyOptions policy_options;
  policy_options.alpha = config->alpha;
  auto cluster = testing::EndToEndCluster::start(*config, config->nodes, policy_options,
                                                 /*gated=*/true);
  ASSERT_TRUE(cluster);
  const std::string ns = cluster->pod_namespace();
  const std::string scheduler = cluster->options().scheduler_name;
  emulator::AdmissionWebhook webhook;
  webhook.url = cluster->url() + "/admission/gate";
  webhook.namespaces = {ns};
  cluster->api().register_webhook(webhook);
  testing::Deletions deletions(cluster->objects());
  const std::map<std::string, std::string> node_model = cluster->node_model();

  // Each pod runs for its hint on its node's model.
  testing::JobControlPlane plane(
      *cluster,
      [&](const json& pod) -> std::optional<double> {
        const std::string node = pod["spec"].value("nodeName", "");
        auto model = node_model.find(node);
        const std::string device =
            model == node_model.end() || model->second == "none" ? "cpu" : model->second;
        const std::string hint = annotation(pod, "allox.io/time." + device);
        if (hint.empty()) return std::nullopt;
        return std::stod(hint);
      },
      [](const json&) { return 0; });

  auto create = [&](const emulator::ResourceType& type, const json& object) {
    auto created = cluster->objects().create(type, ns, object);
    ASSERT_FALSE(std::holds_alternative<emulator::ApiError>(created))
        << std::get<emulator::ApiError>(created).message;
  };
  const std::map<std::string, int> bare = {
      {"one-a", 1}, {"one-b", 1}, {"two-a", 2}, {"two-b", 2}, {"four", 4}};
  for (const auto& [name, gpus] : bare) {
    create(emulator::pods_resource(),
           bare_pod(name, gpus, hints(name, 300 + 40 * gpus, 700 + 40 * gpus), scheduler));
  }
  create(emulator::pods_resource(),
         bare_pod("cpu-only", 0, {{"allox.io/job", "cpu-only"}, {"allox.io/time.cpu", "900"}},
                  scheduler));
  create(emulator::pods_resource(), bare_pod("huge", 8, hints("huge", 300, 600), scheduler));
  create(emulator::jobs_resource(), batch_job("gang", 4, 2, hints("gang", 500, 1200), scheduler));
  create(emulator::jobs_resource(),
         batch_job("trainer-gpu", 1, 1, hints("trainer", 400, 800, 6000), scheduler));
  create(emulator::jobs_resource(),
         batch_job("trainer-cpu", 1, 0, hints("trainer", 400, 800, 6000), scheduler));

  auto job_complete = [&](const std::string& name) {
    auto got = cluster->objects().get(emulator::jobs_resource(), ns, name);
    if (std::holds_alternative<emulator::ApiError>(got)) return false;
    for (const json& c :
         (*std::get<emulator::ObjectPtr>(got))["status"].value("conditions", json::array())) {
      if (c.value("type", "") == "Complete" && c.value("status", "") == "True") return true;
    }
    return false;
  };
  auto pod_phase = [&](const std::string& name) {
    auto got = cluster->objects().get(emulator::pods_resource(), ns, name);
    if (std::holds_alternative<emulator::ApiError>(got)) return std::string();
    return (*std::get<emulator::ObjectPtr>(got))["status"].value("phase", "");
  };
  const bool finished = plane.run_until(
      [&] {
        if (!job_complete("gang")) return false;
        if (!job_complete("trainer-gpu") && !job_complete("trainer-cpu")) return false;
        if (pod_phase("cpu-only") != "Succeeded") return false;
        return std::all_of(bare.begin(), bare.end(),
                           [&](const auto& pod) { return pod_phase(pod.first) == "Succeeded"; });
      },
      24 * 3600);
  ASSERT_TRUE(finished) << "the jobs did not all finish";
  testing::ApiLedger& ledger = cluster->ledger();

  // No node over-committed.
  EXPECT_TRUE(ledger.overcommits().empty()) << ledger.overcommits().front();

  // Every job bound exactly once; the gang's 4 members once each; the huge pod never.
  const auto bound = ledger.bound();
  for (const auto& [name, gpus] : bare) {
    ASSERT_EQ(1u, bound.count(name)) << name;
    EXPECT_EQ(1u, bound.at(name).size()) << name;
  }
  ASSERT_EQ(1u, bound.count("cpu-only"));
  EXPECT_EQ(1u, bound.at("cpu-only").size());
  ASSERT_EQ(1u, bound.count("trainer"));
  EXPECT_EQ(1u, bound.at("trainer").size());
  ASSERT_EQ(1u, bound.count("gang"));
  ASSERT_EQ(4u, bound.at("gang").size());
  std::set<std::string> members;
  for (const auto& member : bound.at("gang")) {
    members.insert(member.pod);
    EXPECT_EQ(member.pinned, member.node) << member.pod << ": bound off its placement";
  }
  EXPECT_EQ(4u, members.size());
  EXPECT_EQ(0u, bound.count("huge"));

  // The gang: all 4 bound within the gather window, before any ended; 4 running together.
  int running = 0, most = 0, binds = 0;
  double first_bind = -1;
  bool ended = false;
  for (const auto& t : ledger.transitions()) {
    if (t.job != "gang") continue;
    if (t.bound) {
      EXPECT_FALSE(ended) << t.pod << " bound after a member ended";
      if (first_bind < 0) first_bind = t.at;
      EXPECT_LE(t.at - first_bind, kGatherWindow) << t.pod;
      ++binds;
      most = std::max(most, ++running);
    } else {
      ended = true;
      --running;
    }
  }
  EXPECT_EQ(4, binds);
  EXPECT_EQ(4, most);

  // The model the plan chose is the model of the node bound, for every pod alloxd admitted.
  std::map<std::string, std::string> admitted;  // pod -> its Admitted message
  for (const auto& event : cluster->objects().objects(emulator::events_resource())) {
    if (event->value("reason", "") != "Admitted") continue;
    admitted[(*event)["involvedObject"].value("name", "")] = event->value("message", "");
  }
  std::set<std::string> gang_models;
  for (const auto& [job, bindings] : bound) {
    for (const auto& at : bindings) {
      const std::string model = node_model.at(at.node);
      const std::string want = model == "none" ? "cpu" : model;
      // Released by alloxd's gate removal, which pins the plan's node.
      EXPECT_EQ(at.pinned, at.node) << at.pod << " of " << job;
      // A gated pod's release says nothing but its pin; a gang's members each get an Admitted
      // event naming the gang's device.
      auto said = admitted.find(at.pod);
      if (job == "gang") {
        ASSERT_TRUE(said != admitted.end()) << at.pod << " of the gang has no Admitted event";
        gang_models.insert(want);
      }
      if (said != admitted.end()) {
        EXPECT_EQ(want, admitted_device(said->second))
            << at.pod << " on " << at.node << ": " << said->second;
      }
    }
    auto reply = cluster->get("/v1/jobs/" + ns + "/" + job);
    ASSERT_EQ(200, reply.status) << reply.body;
    const std::string model = node_model.at(bindings.front().node);
    EXPECT_EQ(model == "none" ? "cpu" : model, json::parse(reply.body).value("device", ""))
        << job << ": " << reply.body;
  }
  EXPECT_EQ(1u, gang_models.size()) << "the gang's members ran on more than one model";

  // The sibling Job not chosen was deleted, its pods after it (Background), with an event.
  const auto deleted_jobs = deletions.jobs();
  ASSERT_EQ(1u, deleted_jobs.size());
  const std::string unused = deleted_jobs.begin()->first;
  ASSERT_TRUE(unused == "trainer-gpu" || unused == "trainer-cpu") << unused;
  const std::string used = unused == "trainer-gpu" ? "trainer-cpu" : "trainer-gpu";
  EXPECT_TRUE(job_complete(used));
  EXPECT_EQ(0u, bound.at("trainer")[0].pod.rfind(used + "-", 0)) << bound.at("trainer")[0].pod;
  const std::vector<std::uint64_t> unused_pods = deletions.pods_of(unused);
  ASSERT_FALSE(unused_pods.empty()) << "the unused Job had a pod, gated, until it was deleted";
  for (std::uint64_t at : unused_pods) EXPECT_GT(at, deleted_jobs.begin()->second);
  EXPECT_TRUE(deletions.pods_of("gang").empty()) << "a gang member was deleted";

  // The huge pod: parked with its reason, still gated and unbound, holding nothing.
  const std::string reason =
      "no node can hold it: 8 nvidia.com/gpu of model h100 on one node (pod " + ns +
      "/huge), the largest node has 4; 8 nvidia.com/gpu of model a100 on one node (pod " + ns +
      "/huge), the largest node has 4";
  cluster->expect_parked("huge", "huge", reason);
  std::printf("gang on %s; trainer ran as %s\n",
              gang_models.empty() ? "?" : gang_models.begin()->c_str(), used.c_str());
}

// An Indexed Job gang whose bind the API server refuses part way is rolled back: alloxd deletes
// its members (GangRolledBack), the Job controller makes them again (new pods, gated by the
// webhook), and they rejoin the same allox job and gang, which then binds whole and is done once.
TEST(CombinedEndToEndTest, ARolledBackIndexedJobGangRejoinsItsJobAndBindsWhole) {
  auto config = parse_extender_config(kConfig, "combined.yaml");
  ASSERT_TRUE(config.ok()) << config.message();
  PolicyOptions policy_options;
  policy_options.alpha = config->alpha;
  auto cluster = testing::EndToEndCluster::start(*config, config->nodes, policy_options,
                                                 /*gated=*/true);
  ASSERT_TRUE(cluster);
  const std::string ns = cluster->pod_namespace();
  emulator::AdmissionWebhook webhook;
  webhook.url = cluster->url() + "/admission/gate";
  webhook.namespaces = {ns};
  cluster->api().register_webhook(webhook);
  testing::Deletions deletions(cluster->objects());
  // The first Binding of index 1's pod is refused (as for a pod deleted meanwhile).
  emulator::FakeApiServer::FaultRule refuse;
  refuse.method = "POST";
  refuse.path_contains = "/pods/gang-1-";
  refuse.status = 500;
  refuse.count = 1;
  cluster->api().fail_requests(refuse);
  testing::JobControlPlane plane(
      *cluster, [](const json&) -> std::optional<double> { return 500; },
      [](const json&) { return 0; });
  auto created = cluster->objects().create(
      emulator::jobs_resource(), ns,
      batch_job("gang", 4, 2, hints("gang", 500, 1200), cluster->options().scheduler_name));
  ASSERT_FALSE(std::holds_alternative<emulator::ApiError>(created));

  auto complete = [&] {
    auto got = cluster->objects().get(emulator::jobs_resource(), ns, "gang");
    if (std::holds_alternative<emulator::ApiError>(got)) return false;
    for (const json& c :
         (*std::get<emulator::ObjectPtr>(got))["status"].value("conditions", json::array())) {
      if (c.value("type", "") == "Complete" && c.value("status", "") == "True") return true;
    }
    return false;
  };
  // The Job controller marks the Job Complete once it has seen the members succeed; alloxd's
  // watch sees the same pods on its own, maybe later: alloxd is read once it has seen every pod
  // as the API server has it (quiet), or its record of the last member's end may still be on
  // its way.
  ASSERT_TRUE(plane.run_until([&] { return complete() && cluster->options().quiet(); }, 24 * 3600))
      << "the gang's Job did not complete";
  EXPECT_TRUE(cluster->ledger().overcommits().empty());

  // The first members were deleted by alloxd, with GangRolledBack on each.
  const std::vector<std::uint64_t> deleted = deletions.pods_of("gang");
  EXPECT_GE(deleted.size(), 4u) << "the rolled-back members were deleted";
  int told = 0;
  for (const auto& event : cluster->objects().objects(emulator::events_resource())) {
    told += event->value("reason", "") == "GangRolledBack";
  }
  EXPECT_EQ(4, told);
  // The bindings after the rollback: 4 members, all within the gather window, 4 running at once.
  std::vector<testing::ApiLedger::Transition> last;
  for (const auto& t : cluster->ledger().transitions()) {
    if (t.job != "gang") continue;
    if (t.bound && !last.empty() && !last.back().bound) last.clear();
    last.push_back(t);
  }
  int binds = 0, running = 0, most = 0;
  double first = -1;
  for (const auto& t : last) {
    if (!t.bound) {
      --running;
      continue;
    }
    if (first < 0) first = t.at;
    EXPECT_LE(t.at - first, kGatherWindow) << t.pod;
    ++binds;
    most = std::max(most, ++running);
  }
  EXPECT_EQ(4, binds);
  EXPECT_EQ(4, most);
  // One allox job, done: the Job's new pods joined it.
  auto reply = cluster->get("/v1/jobs/" + ns + "/gang");
  ASSERT_EQ(200, reply.status) << reply.body;
  EXPECT_EQ("done", json::parse(reply.body).value("phase", "")) << reply.body;
}

}  // namespace
}  // namespace allox::extender
