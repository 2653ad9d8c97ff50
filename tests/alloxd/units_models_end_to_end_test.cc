// Multi-unit pods of any GPU model end to end: H100 nodes of 2 GPUs and A100 nodes of 4
// (labelled nvidia.com/gpu.product, as NVIDIA's GPU feature discovery labels them) and CPU nodes,
// jobs of 1, 2 and 4 GPUs whose GPU pod pins no model (some with a CPU pod as well), and one
// 8-GPU pod no node of either model can hold; through the emulator's fake API server and
// kube-scheduler v1.28 emulator (its NodeResourcesFit counts quantities), fake kubelets that run
// each pod for the true time of its node's model, and an in-process alloxd on a stepped clock.
// Pods are created gated (allox.io/queue); alloxd releases each pinned to its planned node.
//
// What is checked comes from the API server's own records (every pod write, the nodes' labels):
//   - no node is ever over-committed (nvidia.com/gpu and cpu requests of the pods it holds);
//   - every job is bound exactly once, to the node alloxd pinned it to (the plan's), and finishes;
//     the model the plan chose is that node's model, and alloxd's record of the run names it and
//     the pod's units;
//   - 4-GPU jobs ran on A100 nodes only (no H100 node is that large), and both models were used;
//   - the 8-GPU pod is never ungated nor bound, parked with its reason in alloxd and in an event.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "tests/alloxd/testing/end_to_end_cluster.h"

namespace allox::extender {
namespace {

using nlohmann::json;

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
  - {name: h100-0, machines: {h100: 2}}
  - {name: h100-1, machines: {h100: 2}}
  - {name: a100-0, machines: {a100: 4}}
  - {name: a100-1, machines: {a100: 4}}
  - {name: cpu-0, machines: {cpu: 2}}
  - {name: cpu-1, machines: {cpu: 1}}
)";

// Jobs of 1, 2 and 4 GPUs arriving over 20 minutes; an H100 is 2x an A100 for some, 1.2x for
// others, and every third 1-GPU job can also run on 32 cores (8x slower than an A100).
std::vector<emulator::ReplayJob> workload() {
  std::vector<emulator::ReplayJob> jobs;
  const int gpus[] = {2, 1, 4, 1, 2, 1, 4, 2, 1, 1, 2, 4, 1, 2, 1, 2, 4, 1};
  for (int i = 0; i < static_cast<int>(std::size(gpus)); ++i) {
    emulator::ReplayJob job;
    job.id = "job" + std::to_string(i);
    job.user = "queue" + std::to_string(i % 3);
    job.arrival = 70.0 * i;
    const double h100 = 240 + 53.0 * (i % 5);
    const double a100 = i % 2 == 0 ? 2 * h100 : 1.2 * h100;
    job.true_time = {{"h100", h100}, {"a100", a100}};
    job.units = {{"h100", gpus[i]}, {"a100", gpus[i]}};
    if (gpus[i] == 1 && i % 3 == 0) job.true_time["cpu"] = 8 * a100;
    job.estimate = job.true_time;
    job.any_model = true;
    jobs.push_back(std::move(job));
  }
  return jobs;
}

TEST(UnitsModelsEndToEndTest, WidePodsOfAnyModelTakeOneNodeOfThePlannedModelAndNeverOvercommit) {
  auto config = parse_extender_config(kConfig, "units-models.yaml");
  ASSERT_TRUE(config.ok()) << config.message();
  PolicyOptions policy_options;
  policy_options.alpha = config->alpha;
  auto cluster = testing::EndToEndCluster::start(*config, config->nodes, policy_options,
                                                 /*gated=*/true);
  ASSERT_TRUE(cluster);
  const std::map<std::string, std::string>& node_model = cluster->node_model();
  ASSERT_EQ("h100", node_model.at("h100-0"));
  ASSERT_EQ("a100", node_model.at("a100-1"));

  // The pod no node can hold, created before the replay starts, gated as the replay's are.
  cluster->create_gpu_pod(
      "huge-gpu", "huge", 8,
      {{"allox.io/user", "queue0"}, {"allox.io/time.h100", "600"}, {"allox.io/time.a100", "900"}});
  const std::vector<emulator::ReplayJob> jobs = workload();
  auto summary = cluster->replay(jobs);
  ASSERT_TRUE(summary.ok()) << summary.message();
  const testing::ApiLedger& ledger = cluster->ledger();

  // alloxd released a pod only onto a node with its units free: kube-scheduler never found a
  // released pod unschedulable.
  EXPECT_EQ(0u, summary->scheduler.unschedulable);
  EXPECT_EQ(0u, summary->scheduler.timeouts);
  const std::vector<std::string> overcommits = ledger.overcommits();
  EXPECT_TRUE(overcommits.empty())
      << overcommits.size() << " over-commits, e.g. " << overcommits.front();

  // Each job: bound once, to its pin, on the model of that node, with its units.
  const auto bound = ledger.bound();
  ASSERT_EQ(jobs.size(), summary->jobs.size());
  std::map<std::string, int> models;  // GPU jobs per model
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const emulator::ReplayJob& job = jobs[i];
    EXPECT_GT(summary->jobs[i].finish, 0) << job.id << " never finished";
    auto it = bound.find(job.id);
    ASSERT_TRUE(it != bound.end() && it->second.size() == 1)
        << job.id << " was bound " << (it == bound.end() ? 0 : it->second.size()) << " times";
    const testing::ApiLedger::Bound& at = it->second.front();
    EXPECT_EQ(at.pinned, at.node) << job.id << ": bound off the node alloxd planned";
    const std::string model = node_model.at(at.node);
    const bool on_gpu = model != "none";
    const int units = on_gpu ? job.units.at(model) : 1;
    auto reply = cluster->get("/v1/jobs/demo/" + job.id);
    ASSERT_EQ(200, reply.status) << reply.body;
    const json record = json::parse(reply.body);
    EXPECT_EQ(on_gpu ? model : "cpu", record.value("device", "")) << job.id << " on " << at.node;
    EXPECT_EQ(units, record.value("units", 0)) << job.id << " on " << at.node;
    if (!on_gpu) continue;
    ++models[model];
    EXPECT_NE(std::string::npos, at.pod.find("-any-")) << job.id << ": its unpinned GPU pod ran";
    if (units == 4) {
      EXPECT_EQ("a100", model) << job.id << " (4 GPUs) on " << at.node;
    }
  }
  std::printf("%zu jobs: %d on H100, %d on A100, the rest on CPU; %.0f simulated s\n", jobs.size(),
              models["h100"], models["a100"], summary->simulated_s);
  EXPECT_GT(models["h100"], 0);
  EXPECT_GT(models["a100"], 0);
  // The wide jobs took nodes whole: an A100 node held 4 GPUs at once (the 4-GPU jobs), an H100
  // node at most its 2.
  auto peaks = ledger.peaks();
  EXPECT_EQ(4, std::max(peaks["a100-0"]["nvidia.com/gpu"], peaks["a100-1"]["nvidia.com/gpu"]));
  EXPECT_EQ(2, std::max(peaks["h100-0"]["nvidia.com/gpu"], peaks["h100-1"]["nvidia.com/gpu"]));

  // The huge pod: still gated, unbound, parked with its reason in alloxd and in an event.
  EXPECT_EQ(0u, bound.count("huge"));
  const std::string reason =
      "no node can hold it: 8 nvidia.com/gpu of model h100 on one node (pod demo/huge-gpu), the "
      "largest node has 2; 8 nvidia.com/gpu of model a100 on one node (pod demo/huge-gpu), the "
      "largest node has 4";
  cluster->expect_parked("huge", "huge-gpu", reason);
}

}  // namespace
}  // namespace allox::extender
