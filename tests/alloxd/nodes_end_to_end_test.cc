// Nodes a pod may not go to, end to end: a GPU node dedicated to one team (tainted; only that
// team's pods tolerate it, and they select its nodes) and a cordoned GPU node, beside two open
// ones, in the emulator's fake cluster; kube-scheduler v1.28's emulator filters them as the real
// one does (TaintToleration, NodeUnschedulable, NodeAffinity). Half-way through, the cordoned
// node is opened again.
//
// Without node facts alloxd would plan jobs onto those nodes and pin their pods there, where
// kube-scheduler refuses them for ever (a pin cannot be undone). Checked from the API server's
// own records, on both paths (gated: the pin; ungated: nudges):
//   - every job is bound exactly once and finishes; no pod is left Pending;
//   - no pod but the team's was ever bound to the tainted node, and the team's pods only there;
//     none to the cordoned one while it was cordoned;
//   - kube-scheduler never found a released pod unschedulable on the gate path (alloxd released
//     each pod only where it may go);
//   - once opened, the node was used again, and the dedicated node ran its team's jobs.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "kubesim/patches.h"
#include "tests/alloxd/testing/end_to_end_cluster.h"

namespace allox::extender {
namespace {

using nlohmann::json;

constexpr int kJobs = 16;
constexpr double kOpenAt = 1200;  // simulated seconds: the cordoned node is opened again

std::vector<emulator::ReplayJob> workload() {
  std::vector<emulator::ReplayJob> jobs;
  for (int j = 0; j < kJobs; ++j) {
    emulator::ReplayJob job;
    job.id = "j" + std::to_string(j);
    job.user = j % 2 == 0 ? "alice" : "bob";
    if (j % 4 == 3) {  // the dedicated team's: its node only
      job.user = "team-d";
      job.pod_spec = {{"tolerations", json::array({{{"key", "dedicated"},
                                                    {"operator", "Equal"},
                                                    {"value", "team-d"},
                                                    {"effect", "NoSchedule"}}})},
                      {"nodeSelector", {{"pool", "team-d"}}}};
    }
    job.arrival = 20.0 * j;
    job.true_time = {{"gpu", 300.0 + 10 * j}};
    if (j % 4 == 0) job.true_time["cpu"] = 6000;
    job.estimate = job.true_time;
    jobs.push_back(job);
  }
  return jobs;
}

void patch_node(testing::EndToEndCluster& cluster, const std::string& name, const json& body) {
  auto patched = cluster.objects().patch(emulator::nodes_resource(), "", name,
                                         emulator::PatchType::kMerge, body.dump(), false);
  const auto* error = std::get_if<emulator::ApiError>(&patched);
  ASSERT_EQ(nullptr, error) << name << ": " << error->message;
}

void run(bool gated) {
  auto config = load_extender_config(std::string(ALLOX_SOURCE_DIR) + "/examples/alloxd.yaml");
  ASSERT_TRUE(config.ok()) << config.message();
  PolicyOptions policy_options;
  policy_options.alpha = config->alpha;
  policy_options.starvation_bound = config->starvation_bound;
  const std::vector<NodeInventory> nodes = {{"gpu-tainted", {{"gpu", 1}}},
                                            {"gpu-cordoned", {{"gpu", 1}}},
                                            {"gpu-a", {{"gpu", 1}}},
                                            {"gpu-b", {{"gpu", 1}}},
                                            {"cpu-0", {{"cpu", 1}}}};
  const std::map<std::string, json> patches = {
      {"gpu-tainted",
       {{"metadata", {{"labels", {{"pool", "team-d"}}}}},
        {"spec",
         {{"taints", json::array({{{"key", "dedicated"},
                                   {"value", "team-d"},
                                   {"effect", "NoSchedule"}}})}}}}},
      {"gpu-cordoned", {{"spec", {{"unschedulable", true}}}}}};
  auto cluster = testing::EndToEndCluster::start(*config, nodes, policy_options, gated, patches);
  ASSERT_TRUE(cluster);
  // alloxd's first inventory is the API server's list: the cordoned node is named, the tainted
  // one is open (whether a pod tolerates its taint is the pod's).
  const auto queue = cluster->get("/v1/queue");
  ASSERT_EQ(200, queue.status) << queue.body;
  EXPECT_EQ(json({{"gpu-cordoned", "cordoned (spec.unschedulable)"}}),
            json::parse(queue.body)["closed_nodes"]);
  EXPECT_EQ(1, json::parse(queue.body)["closed_node_count"]);

  bool opened = false;
  double opened_at = 0;
  cluster->options().on_event = [&](const emulator::ReplayEvent& event) {
    if (opened || event.at < kOpenAt) return;
    opened = true;
    opened_at = event.at;
    patch_node(*cluster, "gpu-cordoned", {{"spec", {{"unschedulable", nullptr}}}});
  };
  const std::vector<emulator::ReplayJob> jobs = workload();
  auto summary = cluster->replay(jobs);
  ASSERT_TRUE(summary.ok()) << summary.message();
  ASSERT_TRUE(opened) << "the replay ended before " << kOpenAt << " s";

  const auto bound = cluster->ledger().bound();
  ASSERT_EQ(jobs.size(), summary->jobs.size());
  for (const emulator::ReplayedJob& job : summary->jobs) {
    auto it = bound.find(job.id);
    EXPECT_TRUE(it != bound.end() && it->second.size() == 1)
        << job.id << " was bound " << (it == bound.end() ? 0 : it->second.size()) << " times";
    EXPECT_GT(job.finish, 0) << job.id << " never finished";
  }
  std::set<std::string> team_d;
  for (const emulator::ReplayJob& job : jobs) {
    if (job.user == "team-d") team_d.insert(job.id);
  }
  int on_opened = 0, on_dedicated = 0;
  for (const auto& t : cluster->ledger().transitions()) {
    if (!t.bound) continue;
    if (team_d.count(t.job)) {
      EXPECT_EQ("gpu-tainted", t.node) << t.pod << " of the dedicated team went elsewhere";
      ++on_dedicated;
    } else {
      EXPECT_NE("gpu-tainted", t.node) << t.pod << " was bound to the dedicated node";
    }
    if (t.node == "gpu-cordoned") {
      EXPECT_GE(t.at, opened_at) << t.pod << " was bound to the node while it was cordoned";
      ++on_opened;
    }
  }
  EXPECT_GT(on_opened, 0) << "no job used the node once it was opened again";
  EXPECT_EQ(static_cast<int>(team_d.size()), on_dedicated);
  if (gated) {
    EXPECT_EQ(0u, summary->scheduler.unschedulable);
  }
  for (const emulator::ObjectPtr& pod : cluster->objects().objects(emulator::pods_resource())) {
    EXPECT_FALSE((*pod)["spec"].value("nodeName", "").empty())
        << (*pod)["metadata"].value("name", "") << " left Pending";
  }
  std::printf("%s: %zu jobs, %d bound to the reopened node, %d to the dedicated one, %zu "
              "unschedulable verdicts\n",
              gated ? "gated" : "ungated", summary->jobs.size(), on_opened, on_dedicated,
              summary->scheduler.unschedulable);
}

TEST(NodesEndToEndTest, GatedPodsGoOnlyWhereTheyMay) { run(/*gated=*/true); }
TEST(NodesEndToEndTest, UngatedPodsGoOnlyWhereTheyMay) { run(/*gated=*/false); }

}  // namespace
}  // namespace allox::extender
