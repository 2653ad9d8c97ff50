// Multi-unit pods end to end: nodes with 2 and 4 GPUs and CPU nodes, 1-, 2- and 4-GPU jobs
// (some with a CPU variant too) and one 8-GPU pod no node can hold, through the emulator's fake
// API server and kube-scheduler v1.28 emulator (its NodeResourcesFit counts quantities), fake
// kubelets and an in-process alloxd watching the API server, on a stepped clock. Pods are created
// gated (allox.io/queue) and released by alloxd.
//
// What is checked comes from the API server's own records (a subscriber that sees every pod
// write), not from alloxd's reports:
//   - no node is ever over-committed: at every write, the requests (nvidia.com/gpu and cpu) of
//     the pods bound to a node and not yet finished add up to at most its allocatable;
//   - every job is bound exactly once and finishes;
//   - the 8-GPU pod is never ungated nor bound, alloxd's GET /v1/jobs/{id} shows it parked with
//     its reason, and a Parked event with that reason was posted to it.
#include <gtest/gtest.h>

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

// Jobs of 1, 2 and 4 GPUs arriving over 20 minutes; every third also has a CPU variant.
std::vector<emulator::ReplayJob> workload() {
  std::vector<emulator::ReplayJob> jobs;
  const int gpus[] = {2, 1, 1, 4, 1, 2, 2, 1, 4, 1, 2, 1, 1, 2, 4, 1};
  for (int i = 0; i < static_cast<int>(std::size(gpus)); ++i) {
    emulator::ReplayJob job;
    job.id = "job" + std::to_string(i);
    job.user = "queue" + std::to_string(i % 3);
    job.arrival = 75.0 * i;
    const double seconds = 300 + 97.0 * (i % 5);
    job.true_time["gpu"] = seconds;
    job.estimate["gpu"] = seconds;
    job.units["gpu"] = gpus[i];
    if (i % 3 == 0) {
      job.true_time["cpu"] = seconds * 4;
      job.estimate["cpu"] = seconds * 4;
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

TEST(UnitsEndToEndTest, NoNodeIsOvercommittedAndAPodLargerThanEveryNodeIsParked) {
  auto config = load_extender_config(std::string(ALLOX_SOURCE_DIR) + "/examples/alloxd.yaml");
  ASSERT_TRUE(config.ok()) << config.message();
  PolicyOptions policy_options;
  policy_options.alpha = config->alpha;
  policy_options.starvation_bound = config->starvation_bound;
  const std::vector<NodeInventory> nodes = {{"node-a", {{"gpu", 2}, {"cpu", 1}}},
                                            {"node-b", {{"gpu", 2}}},
                                            {"node-d", {{"gpu", 4}}},
                                            {"node-c", {{"cpu", 2}}}};
  auto cluster = testing::EndToEndCluster::start(*config, nodes, policy_options, /*gated=*/true);
  ASSERT_TRUE(cluster);

  // The pod no node can hold, created before the replay starts, gated as the replay's are.
  const std::vector<emulator::ReplayJob> jobs = workload();
  cluster->create_gpu_pod("huge-gpu", "huge", 8,
                          {{"allox.io/user", "queue0"}, {"allox.io/time.gpu", "600"}});
  auto summary = cluster->replay(jobs);
  ASSERT_TRUE(summary.ok()) << summary.message();
  const testing::ApiLedger& ledger = cluster->ledger();

  // alloxd released a pod only onto a node with its units free: kube-scheduler never found a
  // released pod unschedulable (a 2-GPU pod released where one GPU was free would be).
  EXPECT_EQ(0u, summary->scheduler.unschedulable);
  EXPECT_EQ(0u, summary->scheduler.timeouts);
  // No node ever held more than it has, and the wide jobs did share nodes with others.
  const std::vector<std::string> overcommits = ledger.overcommits();
  EXPECT_TRUE(overcommits.empty())
      << overcommits.size() << " over-commits, e.g. " << overcommits.front();
  const auto peaks = ledger.peaks();
  for (const auto& [node, amounts] : peaks) {
    std::printf("%s: at most %.0f nvidia.com/gpu and %.0f cpu held at once\n", node.c_str(),
                amounts.count("nvidia.com/gpu") ? amounts.at("nvidia.com/gpu") : 0.0,
                amounts.count("cpu") ? amounts.at("cpu") : 0.0);
  }
  std::printf("%zu jobs over %.0f simulated s in %.1f s wall\n", summary->jobs.size(),
              summary->simulated_s, summary->wall_s);
  EXPECT_EQ(4, peaks.at("node-d").at("nvidia.com/gpu")) << "the 4-GPU jobs ran on node-d";
  // Every job bound once and finished; the huge one never.
  const auto binds = ledger.bound();
  ASSERT_EQ(jobs.size(), summary->jobs.size());
  for (const emulator::ReplayedJob& job : summary->jobs) {
    auto it = binds.find(job.id);
    EXPECT_TRUE(it != binds.end() && it->second.size() == 1)
        << job.id << " was bound " << (it == binds.end() ? 0 : it->second.size()) << " times";
    EXPECT_GT(job.finish, 0) << job.id << " never finished";
  }
  EXPECT_EQ(0u, binds.count("huge"));
  EXPECT_EQ(jobs.size(), binds.size());
  // The 4-GPU jobs ran on the one node that has 4 GPUs, whole.
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].units.at("gpu") == 4 && summary->jobs[i].device == "gpu") {
      EXPECT_EQ("node-d", summary->jobs[i].node) << jobs[i].id;
    }
  }

  // The huge pod: still gated, unbound, parked with its reason in alloxd and in an event.
  const std::string reason =
      "no node can hold it: 8 nvidia.com/gpu on one node (pod demo/huge-gpu), the largest node "
      "has 4";
  cluster->expect_parked("huge", "huge-gpu", reason);
}

}  // namespace
}  // namespace allox::extender
