// Gangs end to end (docs/design.md, "Gangs"): nodes of 2 and 4 GPUs, a gang of 4 pods × 2 GPUs
// and one of 2 × 4, 1- and 2-GPU jobs, and a gang of 7 × 2 that 12 GPUs can never hold, through
// the emulator's fake API server and kube-scheduler v1.28 emulator (each member an ordinary pod:
// its own gate, NodeResourcesFit, parallel binds), fake kubelets and an in-process alloxd
// watching the API server, on a stepped clock. Pods are created gated and released by alloxd.
//
// What is checked comes from the API server's own records (ApiLedger):
//   - no node is ever over-committed;
//   - no gang is ever partly bound: once its first member binds, all N bind within the gather
//     window (gang_bind_wait) before any member ends, and N run together;
//   - every job is bound exactly once (a gang: each member once), each member on the node its
//     pin names;
//   - the gang too big to fit is never ungated nor bound, and is parked with its reason
//     (/v1/jobs/{id}, a Parked event).
// And a rollback: a gang one of whose Bindings the API server refuses after the other was made
// has its members deleted (by UID), a GangRolledBack event on each, and its reason in
// /v1/jobs/{id}; a bare-pod gang's pods are then re-submitted by their owner (alloxd does not
// re-create them).
#include <gtest/gtest.h>

#include <cstdio>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/alloxd/testing/end_to_end_cluster.h"

namespace allox::extender {
namespace {

using nlohmann::json;

// 1- and 2-GPU jobs every 60 s, a gang of 4 × 2 GPUs at 150 s and one of 2 × 4 GPUs at 400 s.
std::vector<emulator::ReplayJob> workload() {
  std::vector<emulator::ReplayJob> jobs;
  const int gpus[] = {2, 1, 1, 2, 1, 2, 1, 1, 2, 1};
  for (int i = 0; i < static_cast<int>(std::size(gpus)); ++i) {
    emulator::ReplayJob job;
    job.id = "job" + std::to_string(i);
    job.user = "queue" + std::to_string(i % 3);
    job.arrival = 60.0 * i;
    const double seconds = 300 + 97.0 * (i % 4);
    job.true_time["gpu"] = seconds;
    job.estimate["gpu"] = seconds;
    job.units["gpu"] = gpus[i];
    jobs.push_back(std::move(job));
  }
  auto gang = [](const std::string& id, double arrival, int n, int units, double seconds) {
    emulator::ReplayJob job;
    job.id = id;
    job.user = "queue0";
    job.arrival = arrival;
    job.true_time["gpu"] = seconds;
    job.estimate["gpu"] = seconds;
    job.units["gpu"] = units;
    job.gang = n;
    return job;
  };
  jobs.push_back(gang("gang4x2", 150, 4, 2, 500));
  jobs.push_back(gang("gang2x4", 400, 2, 4, 400));
  return jobs;
}

std::unique_ptr<testing::EndToEndCluster> start_cluster() {
  auto config = load_extender_config(std::string(ALLOX_SOURCE_DIR) + "/examples/alloxd.yaml");
  EXPECT_TRUE(config.ok()) << config.message();
  if (!config) return nullptr;
  PolicyOptions policy_options;
  policy_options.alpha = config->alpha;
  policy_options.starvation_bound = config->starvation_bound;
  const std::vector<NodeInventory> nodes = {{"node-a", {{"gpu", 2}}},
                                            {"node-b", {{"gpu", 2}}},
                                            {"node-c", {{"gpu", 4}}},
                                            {"node-d", {{"gpu", 4}}}};
  return testing::EndToEndCluster::start(*config, nodes, policy_options, /*gated=*/true);
}

// Fails the test unless `job`'s N members took their nodes together: all N bound within
// `window` simulated seconds of the first, before any of them let go of its node.
void expect_bound_together(const std::vector<testing::ApiLedger::Transition>& transitions,
                           const std::string& job, int n, double window) {
  int bound = 0, running = 0, most = 0;
  double first = -1, last = -1;
  bool ended = false;
  for (const auto& t : transitions) {
    if (t.job != job) continue;
    if (t.bound) {
      EXPECT_FALSE(ended) << job << ": member " << t.pod << " bound after another one ended";
      ++bound;
      ++running;
      if (first < 0) first = t.at;
      last = t.at;
    } else {
      EXPECT_EQ(n, bound) << job << ": member " << t.pod << " ended before all " << n
                          << " were bound";
      ended = true;
      --running;
    }
    most = std::max(most, running);
  }
  EXPECT_EQ(n, bound) << job;
  EXPECT_EQ(n, most) << job << ": its " << n << " members never ran together";
  EXPECT_LE(last - first, window) << job << ": binds spread over " << last - first << " s";
}

TEST(GangsEndToEndTest, AGangIsBoundWholeOrNotAtAllAndATooBigOneIsParked) {
  auto cluster = start_cluster();
  ASSERT_TRUE(cluster);
  // The gang no inventory can hold (7 × 2 of 12 GPUs: room for 6 members), before the replay.
  for (int i = 0; i < 7; ++i) {
    cluster->create_gpu_pod("toobig-" + std::to_string(i), "toobig", 2,
                            {{"allox.io/gang-size", "7"}, {"allox.io/time.gpu", "600"}}, "1");
  }
  const std::vector<emulator::ReplayJob> jobs = workload();
  auto summary = cluster->replay(jobs);
  ASSERT_TRUE(summary.ok()) << summary.message();
  const testing::ApiLedger& ledger = cluster->ledger();

  const std::vector<std::string> overcommits = ledger.overcommits();
  EXPECT_TRUE(overcommits.empty())
      << overcommits.size() << " over-commits, e.g. " << overcommits.front();
  EXPECT_TRUE(summary->ran_twice.empty());
  std::printf(
      "%zu jobs over %.0f simulated s in %.1f s wall; %zu unschedulable, %zu bind "
      "failures\n",
      summary->jobs.size(), summary->simulated_s, summary->wall_s,
      static_cast<std::size_t>(summary->scheduler.unschedulable),
      static_cast<std::size_t>(summary->scheduler.bind_failures));
  // Every job bound exactly once (each gang member once), on the node its pin names.
  const auto binds = ledger.bound();
  ASSERT_EQ(jobs.size(), summary->jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const std::string& id = jobs[i].id;
    auto it = binds.find(id);
    ASSERT_TRUE(it != binds.end()) << id << " was never bound";
    EXPECT_EQ(static_cast<std::size_t>(jobs[i].gang), it->second.size()) << id;
    std::set<std::string> pods;
    for (const auto& bound : it->second) {
      pods.insert(bound.pod);
      EXPECT_EQ(bound.pinned, bound.node) << bound.pod << " bound off its pin";
    }
    EXPECT_EQ(it->second.size(), pods.size()) << id << ": a member bound twice";
    EXPECT_GT(summary->jobs[i].finish, 0) << id << " never finished";
  }
  // No gang partly bound: all N within the gather window (3 s), N running together.
  const auto transitions = ledger.transitions();
  expect_bound_together(transitions, "gang4x2", 4, 3.0);
  expect_bound_together(transitions, "gang2x4", 2, 3.0);
  // The 2 × 4 gang ran on the two 4-GPU nodes.
  std::set<std::string> wide;
  for (const auto& bound : binds.at("gang2x4")) wide.insert(bound.node);
  EXPECT_EQ((std::set<std::string>{"node-c", "node-d"}), wide);

  // Its members were told where the whole gang goes, and alloxd's report says where it ran.
  const std::vector<std::string> admitted = cluster->event_messages("Admitted", "gang4x2-gpu-0");
  ASSERT_FALSE(admitted.empty());
  EXPECT_EQ(0u, admitted.front().find("starts on gang of 4 × gpu ×2 on node-")) << admitted.front();
  auto reply = cluster->get("/v1/jobs/demo/gang4x2");
  ASSERT_EQ(200, reply.status) << reply.body;
  const json job = json::parse(reply.body);
  EXPECT_EQ("done", job.value("phase", ""));
  EXPECT_EQ(4, job["gang"].value("size", 0));
  EXPECT_EQ(4u, job["gang"].value("members", json::object()).size()) << reply.body;
  EXPECT_EQ(0u, job["gang"].value("text", "").find("gang of 4 × gpu ×2 on node-")) << reply.body;

  // The gang too big: never ungated nor bound, parked with its reason, holding nothing.
  EXPECT_EQ(0u, binds.count("toobig"));
  const std::string reason =
      "no inventory can hold gang of 7 × gpu ×2: gpu has room for 6 (12 nvidia.com/gpu in all)";
  cluster->expect_parked("toobig", "toobig-0", reason);
  cluster->expect_parked("toobig", "toobig-6", reason);
}

TEST(GangsEndToEndTest, AGangWhoseBindingFailsAfterAnotherIsRolledBack) {
  auto cluster = start_cluster();
  ASSERT_TRUE(cluster);
  // The API server refuses member 1's Binding (as it would a pod deleted meanwhile); member 0's
  // goes through first or after, either way one member is bound and the other not.
  emulator::FakeApiServer::FaultRule refuse;
  refuse.method = "POST";
  refuse.path_contains = "/pods/rb-1/binding";
  refuse.status = 500;
  refuse.count = -1;
  cluster->api().fail_requests(refuse);
  for (int i = 0; i < 2; ++i) {
    cluster->create_gpu_pod("rb-" + std::to_string(i), "rb", 2,
                            {{"allox.io/gang-size", "2"}, {"allox.io/time.gpu", "600"}}, "1");
  }
  std::vector<emulator::ReplayJob> jobs = workload();
  jobs.resize(3);  // a few jobs for the replay to run the scheduler over
  auto summary = cluster->replay(jobs);
  ASSERT_TRUE(summary.ok()) << summary.message();
  EXPECT_TRUE(cluster->ledger().overcommits().empty());
  // Member 0 was bound, then deleted with member 1: neither is in the store any more.
  const auto binds = cluster->ledger().bound();
  ASSERT_EQ(1u, binds.count("rb"));
  EXPECT_EQ(1u, binds.at("rb").size()) << "only member 0's Binding was accepted";
  for (const char* pod : {"rb-0", "rb-1"}) {
    auto object = cluster->objects().get(emulator::pods_resource(), "demo", pod);
    EXPECT_FALSE(std::holds_alternative<emulator::ObjectPtr>(object)) << pod << " not deleted";
    const std::vector<std::string> told = cluster->event_messages("GangRolledBack", pod);
    ASSERT_FALSE(told.empty()) << "no GangRolledBack event for " << pod;
    EXPECT_NE(std::string::npos, told.front().find("member demo/rb-1's binding")) << told.front();
  }
  int let_go = 0;
  for (const auto& t : cluster->ledger().transitions()) let_go += t.job == "rb" && !t.bound;
  EXPECT_EQ(1, let_go) << "the bound member let go of its node";
  // The gang waits again with its reason; its owner re-submits the pods.
  auto reply = cluster->get("/v1/jobs/demo/rb");
  ASSERT_EQ(200, reply.status) << reply.body;
  const json job = json::parse(reply.body);
  EXPECT_EQ("queued", job.value("phase", ""));
  EXPECT_NE(std::string::npos,
            job["gang"].value("note", "").find("rolled back: member demo/rb-1's binding"))
      << reply.body;
}

}  // namespace
}  // namespace allox::extender
