// The end-to-end test of GPU models as node labels: H100 and A100 nodes (labelled
// nvidia.com/gpu.product, as NVIDIA's GPU feature discovery labels them) and CPU nodes in the
// emulator's fake cluster, and jobs whose GPU pod requests nvidia.com/gpu without pinning a
// model, with a time hint per model (half of them have a CPU pod as well). alloxd (in process,
// allox's policy) picks the model and the node; kube-scheduler's emulator schedules through its
// extender verbs; fake kubelets run each pod for the true time of its node's model.
//
// What is checked comes from the API server's own store (who was bound where, the nodes'
// labels, the Admitted events) and alloxd's /v1/jobs/{id}:
//   - every job is bound exactly once and finishes, and no pod is left Pending;
//   - the model alloxd's plan chose (the Admitted event's "starts on N (D)", on the nudge path,
//     where there is one) is the model of the node the pod was bound to, and that node is N;
//   - /v1/jobs/{id} names that model as the device the job ran on;
//   - both models were used (the choice is made, not fixed).
// Once with gated pods (the gate's removal pins the planned node) and once ungated (nudges).
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "tests/alloxd/testing/end_to_end_cluster.h"

namespace allox::extender {
namespace {

using nlohmann::json;

constexpr char kNamespace[] = "demo";
constexpr int kJobs = 16;

constexpr char kConfig[] = R"(
policy: allox
alpha: 1
tick: 1
devices:
  - resource: nvidia.com/gpu
    device: gpu
    node_labels:
      - {label: nvidia.com/gpu.product, value: NVIDIA-H100-80GB-HBM3, device: h100}
      - {label: nvidia.com/gpu.product, value: NVIDIA-A100-SXM4-40GB, device: a100}
cpu: {device: cpu, cores_per_machine: 32}
nodes:
  - {name: h100-0, machines: {h100: 1}}
  - {name: h100-1, machines: {h100: 1}}
  - {name: a100-0, machines: {a100: 2}}
  - {name: a100-1, machines: {a100: 2}}
  - {name: cpu-0, machines: {cpu: 2}}
)";

struct Outcome {
  emulator::ReplaySummary summary;
  std::map<std::string, std::vector<testing::ApiLedger::Bound>> bound;  // job -> its bindings
  std::map<std::string, std::string> node_model;                        // node -> its label's type
  std::map<std::string, std::string> ran_on;    // job -> /v1/jobs/{id} device
  std::map<std::string, std::string> admitted;  // pod -> "starts on N (D)"
  std::vector<std::string> pending_left;
};

Outcome run(bool gated) {
  Outcome out;
  auto config = parse_extender_config(kConfig, "models.yaml");
  EXPECT_TRUE(config.ok()) << config.message();
  if (!config) return out;
  PolicyOptions policy_options;
  policy_options.alpha = config->alpha;
  auto cluster = testing::EndToEndCluster::start(*config, config->nodes, policy_options, gated);
  if (!cluster) return out;
  out.node_model = cluster->node_model();

  // Jobs arrive in pairs every 60 s: an H100 is 3x an A100 for the even ones, only 1.2x for the
  // odd ones, and the even ones can also run on 32 cores (10x slower than an A100).
  std::vector<emulator::ReplayJob> jobs;
  for (int j = 0; j < kJobs; ++j) {
    emulator::ReplayJob job;
    job.id = "j" + std::to_string(j);
    job.user = j % 4 < 2 ? "alice" : "bob";
    job.arrival = 60.0 * (j / 2);
    const double h100 = 300 + 20 * j;
    const double a100 = j % 2 == 0 ? 3 * h100 : 1.2 * h100;
    job.true_time = {{"h100", h100}, {"a100", a100}};
    if (j % 2 == 0) job.true_time["cpu"] = 10 * a100;
    job.estimate = job.true_time;
    job.any_model = true;
    jobs.push_back(job);
  }
  auto summary = cluster->replay(jobs);
  EXPECT_TRUE(summary.ok()) << summary.message();
  if (summary) out.summary = *summary;
  out.bound = cluster->ledger().bound();
  for (const emulator::ReplayJob& job : jobs) {
    auto reply = cluster->get("/v1/jobs/" + std::string(kNamespace) + "/" + job.id);
    EXPECT_EQ(200, reply.status) << reply.body;
    if (reply.status == 200) out.ran_on[job.id] = json::parse(reply.body).value("device", "");
  }
  for (const auto& event : cluster->objects().objects(emulator::events_resource())) {
    if (event->value("reason", "") != "Admitted") continue;
    out.admitted[event->value("involvedObject", json::object()).value("name", "")] =
        event->value("message", "");
  }
  for (const emulator::ObjectPtr& pod : cluster->objects().objects(emulator::pods_resource())) {
    if ((*pod)["spec"].value("nodeName", "").empty()) {
      out.pending_left.push_back((*pod)["metadata"].value("name", ""));
    }
  }
  return out;
}

// What both paths must show; `models` counts the GPU jobs that ran on each model.
void expect_each_job_once_on_its_planned_model(const Outcome& out,
                                               std::map<std::string, int>& models) {
  ASSERT_EQ(static_cast<std::size_t>(kJobs), out.summary.jobs.size());
  EXPECT_TRUE(out.pending_left.empty()) << out.pending_left.size() << " pods left Pending";
  for (const emulator::ReplayedJob& job : out.summary.jobs) {
    EXPECT_GT(job.finish, 0) << job.id << " never finished";
    auto bound = out.bound.find(job.id);
    ASSERT_TRUE(bound != out.bound.end() && bound->second.size() == 1)
        << job.id << " was bound " << (bound == out.bound.end() ? 0 : bound->second.size())
        << " times";
    const std::string& pod = bound->second.front().pod;
    const std::string& node = bound->second.front().node;
    const std::string model = out.node_model.at(node);
    // The device alloxd says the job ran on is the model (or the CPU) of its node.
    const std::string want = model == "none" ? "cpu" : model;
    EXPECT_EQ(want, out.ran_on.at(job.id)) << job.id << " on " << node;
    if (model != "none") {
      ++models[model];
      EXPECT_NE(std::string::npos, pod.find("-any-")) << job.id << ": its unpinned GPU pod ran";
    }
    // The plan's choice, where the controller said it: that node, that model.
    if (auto said = out.admitted.find(pod); said != out.admitted.end()) {
      EXPECT_EQ("starts on " + node + " (" + want + ")", said->second) << job.id;
    }
  }
  std::printf("%d jobs: %d on H100, %d on A100, %d on CPU; %zu Admitted events\n", kJobs,
              models["h100"], models["a100"], kJobs - models["h100"] - models["a100"],
              out.admitted.size());
}

TEST(EndToEndModelsTest, GatedPodsRunOnceEachOnTheModelThePlanChose) {
  Outcome out = run(/*gated=*/true);
  std::map<std::string, int> models;
  expect_each_job_once_on_its_planned_model(out, models);
  EXPECT_GT(models["h100"], 0);
  EXPECT_GT(models["a100"], 0);
}

TEST(EndToEndModelsTest, UngatedPodsAreAdmittedToAModelAndBoundToANodeOfIt) {
  Outcome out = run(/*gated=*/false);
  std::map<std::string, int> models;
  expect_each_job_once_on_its_planned_model(out, models);
  EXPECT_GT(models["h100"], 0);
  EXPECT_GT(models["a100"], 0);
  // The nudge path says its choice in Admitted events: there are some to hold it to.
  EXPECT_GT(out.admitted.size(), 0u);
}

}  // namespace
}  // namespace allox::extender
