// alloxd/plan/plan.h: a start goes to a node its pods may go to. The policy plans by device type,
// so when the node of the machine it chose refuses the job's pods (a taint they do not tolerate,
// a nodeSelector it does not match), the start moves to an idle machine of the same type on a
// node that takes them, after every start that keeps its machine; with none, the job waits and
// says why in kube-scheduler's words.
#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "alloxd/model/pod_placement.h"
#include "alloxd/plan/plan.h"

namespace allox::extender {
namespace {

using nlohmann::json;

kube::NodeFacts node(const std::string& name, json labels = json::object(),
                     json taints = json::array()) {
  return kube::node_facts({{"metadata", {{"name", name}, {"labels", labels}}},
                           {"spec", {{"taints", taints}}}});
}

// A variant of `job` on gpu whose pod's spec is `spec` (nodeSelector, tolerations, affinity).
JobVariant gpu_variant(const std::string& job, const json& spec) {
  JobVariant variant;
  variant.job_id = job;
  variant.device = "gpu";
  PodConstraints constraints = read_pod_constraints({{"spec", spec}});
  variant.placement = constraints.placement;
  variant.placement_key = constraints.key;
  return variant;
}

struct Cluster {
  PlanInput input;
  std::vector<MachineSlot> slots;

  // Nodes "a" (tainted dedicated=team-a:NoSchedule), "b" (pool=b), "c" (pool=c): one GPU each.
  Cluster() {
    auto nodes = std::make_shared<NodeFactsIndex>();
    const json dedicated = json::array(
        {{{"key", "dedicated"}, {"value", "team-a"}, {"effect", "NoSchedule"}}});
    nodes->emplace("a", node("a", {{"pool", "a"}}, dedicated));
    nodes->emplace("b", node("b", {{"pool", "b"}}));
    nodes->emplace("c", node("c", {{"pool", "c"}}));
    input.nodes = nodes;
    for (const char* name : {"a", "b", "c"}) {
      slots.push_back({name, "gpu", 0, ""});
      input.state.machines.push_back({std::string(name) + "/gpu-0", "gpu", 0, name});
      input.state.idle.push_back(true);
    }
    input.state.now = 100;
  }
  // Queues a job; `variants` are its constrained pods (none: its pods state nothing).
  void queue(const std::string& id, std::vector<JobVariant> variants = {}) {
    Job job;
    job.id = id;
    job.time["gpu"] = 10;
    input.jobs.push_back(std::make_shared<const Job>(job));
    input.state.queue.push_back({input.jobs.back().get(), 0, 0, {}});
    input.queue_placements.push_back(
        variants.empty() ? nullptr
                         : std::make_shared<const std::vector<JobVariant>>(std::move(variants)));
  }
};

TEST(PlanNodesTest, AStartOnANodeItsPodMayNotGoToMovesToOneItMay) {
  Cluster cluster;
  cluster.queue("plain");                                               // tolerates nothing
  cluster.queue("team-a", {gpu_variant("team-a", {{"tolerations", json::array({{
                                                      {"key", "dedicated"},
                                                      {"operator", "Equal"},
                                                      {"value", "team-a"},
                                                      {"effect", "NoSchedule"}}})}})});
  Decision decision;
  // The policy puts the plain job on a's machine and team-a's job on b's.
  decision.start = {{"plain", 0}, {"team-a", 1}};
  Plan plan = make_plan(cluster.input, decision, cluster.slots, 0);
  ASSERT_EQ(2u, plan.starts.size());
  // team-a keeps b (it may go anywhere); plain cannot go to a, and b is taken: c.
  EXPECT_EQ("b", plan.starts.at("team-a").node);
  EXPECT_EQ("c", plan.starts.at("plain").node);
  EXPECT_EQ(2, plan.starts.at("plain").slot);
  EXPECT_EQ(1, plan.planned_on("c", "gpu"));
  EXPECT_EQ(0, plan.planned_on("a", "gpu"));
}

TEST(PlanNodesTest, AStartWithNoNodeItsPodMayGoToWaitsSayingWhy) {
  Cluster cluster;
  cluster.queue("wants-d", {gpu_variant("wants-d", {{"nodeSelector", {{"pool", "d"}}}})});
  cluster.queue("plain");
  Decision decision;
  decision.start = {{"wants-d", 1}, {"plain", 0}};
  Plan plan = make_plan(cluster.input, decision, cluster.slots, 0);
  // plain moves from a (tainted) to the first node that takes it: b, freed by wants-d.
  ASSERT_EQ(1u, plan.starts.size());
  EXPECT_EQ("b", plan.starts.at("plain").node);
  ASSERT_EQ(1u, plan.waiting.count("wants-d"));
  EXPECT_EQ("no idle gpu on a node its pod may go to (planned node b: node(s) didn't match "
            "Pod's node affinity/selector)",
            plan.waiting.at("wants-d").note);
}

TEST(PlanNodesTest, AJobWithAVariantThatMayGoThereStartsThere) {
  Cluster cluster;
  // Two pods of one job: one selects pool=c, the other pool=a and tolerates the taint.
  const json tolerates = json::array({{{"key", "dedicated"}, {"operator", "Exists"}}});
  cluster.queue("two", {gpu_variant("two", {{"nodeSelector", {{"pool", "c"}}}}),
                        gpu_variant("two", {{"nodeSelector", {{"pool", "a"}}},
                                            {"tolerations", tolerates}})});
  Decision decision;
  decision.start = {{"two", 0}};
  Plan plan = make_plan(cluster.input, decision, cluster.slots, 0);
  ASSERT_EQ(1u, plan.starts.count("two"));
  EXPECT_EQ("a", plan.starts.at("two").node);
}

// `tainted` nodes t0.. tainted dedicated=team-a:NoSchedule, then `open` nodes o0..; `gpus` GPUs
// each. Jobs queue in order: team-a's pods tolerate the taint, the others state nothing.
struct TaintedPools {
  PlanInput input;
  std::vector<MachineSlot> slots;
  Decision decision;

  TaintedPools(int tainted, int open, int gpus) {
    auto nodes = std::make_shared<NodeFactsIndex>();
    const json dedicated = json::array(
        {{{"key", "dedicated"}, {"value", "team-a"}, {"effect", "NoSchedule"}}});
    for (int n = 0; n < tainted + open; ++n) {
      const bool is_tainted = n < tainted;
      const std::string name = (is_tainted ? "t" : "o") + std::to_string(is_tainted ? n : n - tainted);
      nodes->emplace(name, node(name, json::object(), is_tainted ? dedicated : json::array()));
      for (int i = 0; i < gpus; ++i) {
        slots.push_back({name, "gpu", i, ""});
        input.state.machines.push_back({name + "/gpu-" + std::to_string(i), "gpu", 0, name});
        input.state.idle.push_back(true);
      }
    }
    input.nodes = nodes;
  }
  // Queues a job the policy starts on `machine`, or, with none, estimates to start at `at`.
  void queue(const std::string& id, bool team_a, std::optional<std::size_t> machine,
             double at = 0) {
    static const json tolerates = json::array({{{"key", "dedicated"}, {"operator", "Exists"}}});
    Job job;
    job.id = id;
    job.time["gpu"] = 10;
    input.jobs.push_back(std::make_shared<const Job>(job));
    input.state.queue.push_back({input.jobs.back().get(), 0, 0, {}});
    input.queue_placements.push_back(
        team_a ? std::make_shared<const std::vector<JobVariant>>(
                     std::vector<JobVariant>{gpu_variant(id, {{"tolerations", tolerates}})})
               : nullptr);
    if (machine) {
      decision.start.push_back({id, *machine});
    } else {
      decision.estimated_start[id] = at;
    }
  }
};

// Moves of one kind resume where the last one ended (nodes passed over have no room for that
// kind), and never cost another kind the nodes only it may go to.
TEST(PlanNodesTest, ManyMovedStartsFillTheNodesTheirPodsMayGoToInOrder) {
  TaintedPools pools(/*tainted=*/4, /*open=*/4, /*gpus=*/2);  // t0..t3, then o0..o3
  // Ten plain jobs put on the first eight machines (the tainted nodes' and then again), then
  // team-a's job on an open node's.
  for (int j = 0; j < 10; ++j) {
    pools.queue("plain-" + std::to_string(j), false, static_cast<std::size_t>(j % 8));
  }
  pools.queue("team-a", true, 8);
  Plan plan = make_plan(pools.input, pools.decision, pools.slots, 0);
  // team-a keeps o0's first machine; seven plain jobs fill o0's other and o1..o3; three wait.
  EXPECT_EQ("o0", plan.starts.at("team-a").node);
  std::map<std::string, int> on;
  for (const auto& [id, start] : plan.starts) ++on[start.node];
  EXPECT_EQ((std::map<std::string, int>{{"o0", 2}, {"o1", 2}, {"o2", 2}, {"o3", 2}}), on);
  int waiting = 0;
  for (int j = 0; j < 10; ++j) {
    auto wait = plan.waiting.find("plain-" + std::to_string(j));
    if (wait == plan.waiting.end()) continue;
    ++waiting;
    EXPECT_NE(std::string::npos, wait->second.note.find("had untolerated taint {dedicated: team-a}"))
        << wait->second.note;
  }
  EXPECT_EQ(3, waiting) << "8 machines on open nodes, one of them team-a's: 7 plain jobs start";
}

// The policy chose a job for a's machine whose pod may not go there and finds no other: the
// machine goes to the first waiting job, in the plan's order, that may go there and fits,
// rather than stay idle while that choice repeats plan after plan.
TEST(PlanNodesTest, AMachineItsPlannedJobMayNotUseGoesToTheNextJobThatMay) {
  Cluster cluster;
  cluster.input.state.idle = {true, false, false};  // b and c busy
  const json tolerates = json::array({{{"key", "dedicated"}, {"operator", "Exists"}}});
  cluster.queue("plain");
  cluster.queue("cpu-only");  // runs on no gpu
  cluster.queue("team-a-later", {gpu_variant("team-a-later", {{"tolerations", tolerates}})});
  cluster.queue("team-a-sooner", {gpu_variant("team-a-sooner", {{"tolerations", tolerates}})});
  cluster.queue("team-a-big", {gpu_variant("team-a-big", {{"tolerations", tolerates}})});
  {
    Job cpu_only = *cluster.input.jobs[1];
    cpu_only.time = {{"cpu", 10}};
    cluster.input.jobs[1] = std::make_shared<const Job>(cpu_only);
    cluster.input.state.queue[1].job = cluster.input.jobs[1].get();
    Job big = *cluster.input.jobs[4];
    big.units = 2;  // a has one GPU
    cluster.input.jobs[4] = std::make_shared<const Job>(big);
    cluster.input.state.queue[4].job = cluster.input.jobs[4].get();
  }
  Decision decision;
  decision.start = {{"plain", 0}};
  decision.estimated_start = {{"cpu-only", 100},   {"team-a-big", 105},    {"team-a-sooner", 110},
                              {"team-a-later", 120}, {"plain", 100}};
  Plan plan = make_plan(cluster.input, decision, cluster.slots, 0);
  ASSERT_EQ(1u, plan.starts.size());
  ASSERT_EQ(1u, plan.starts.count("team-a-sooner"))
      << "cpu-only runs on no gpu and team-a-big needs two of a's one: the next that fits";
  EXPECT_EQ("a", plan.starts.at("team-a-sooner").node);
  EXPECT_EQ(0, plan.starts.at("team-a-sooner").slot);
  EXPECT_EQ(1, plan.planned_on("a", "gpu"));
  EXPECT_EQ(0u, plan.waiting.count("team-a-sooner"));
  EXPECT_NE(std::string::npos, plan.waiting.at("plain").note.find("untolerated taint"))
      << plan.waiting.at("plain").note;
  EXPECT_EQ(4u, plan.waiting.size());
  EXPECT_EQ(4, plan.waiting.at("team-a-later").queue_length);

  // No waiting job may go there: the machine stays idle, and the chosen job says why.
  Cluster none;
  none.input.state.idle = {true, false, false};
  none.queue("plain");
  none.queue("plain-2");
  Decision only_plain;
  only_plain.start = {{"plain", 0}};
  Plan idle = make_plan(none.input, only_plain, none.slots, 0);
  EXPECT_TRUE(idle.starts.empty());
  EXPECT_EQ(2u, idle.waiting.size());
}

// Thousands of waiting jobs that may not use the vacated machines cost one pass of their kind,
// not one per machine: the few that may, last in the queue, still take them.
TEST(PlanNodesTest, TheJobsThatMayUseVacatedMachinesTakeThemBehindThousandsThatMayNot) {
  TaintedPools pools(/*tainted=*/10, /*open=*/0, /*gpus=*/1);
  constexpr int kPlain = 25000;
  for (int j = 0; j < kPlain + 3; ++j) {
    const bool team_a = j >= kPlain;
    const std::string id = (team_a ? "team-a-" : "plain-") + std::to_string(j);
    // The first ten on the tainted nodes, one each; the rest estimated in queue order.
    pools.queue(id, team_a,
                j < 10 ? std::optional<std::size_t>(static_cast<std::size_t>(j)) : std::nullopt,
                200 + j);
  }
  Plan plan = make_plan(pools.input, pools.decision, pools.slots, 0);
  ASSERT_EQ(3u, plan.starts.size());
  for (int j = kPlain; j < kPlain + 3; ++j) {
    EXPECT_EQ(1u, plan.starts.count("team-a-" + std::to_string(j))) << j;
  }
  EXPECT_EQ(static_cast<std::size_t>(kPlain), plan.waiting.size());
}

TEST(PlanNodesTest, NodesWithoutFactsTakeEveryJob) {
  Cluster cluster;
  cluster.input.nodes = nullptr;  // the config's fixed inventory: nothing known of its nodes
  cluster.queue("wants-d", {gpu_variant("wants-d", {{"nodeSelector", {{"pool", "d"}}}})});
  Decision decision;
  decision.start = {{"wants-d", 0}};
  Plan plan = make_plan(cluster.input, decision, cluster.slots, 0);
  ASSERT_EQ(1u, plan.starts.count("wants-d"));
  EXPECT_EQ("a", plan.starts.at("wants-d").node);
}

// alloxd's own pin is no constraint of the owner's: a released pod reads as it did before.
TEST(PodConstraintsTest, AlloxdsPinIsLeftOutAndAnOwnersAffinityKept) {
  const json pin = {{"nodeAffinity",
                     {{"requiredDuringSchedulingIgnoredDuringExecution",
                       {{"nodeSelectorTerms",
                         json::array({{{"matchFields", json::array({{{"key", "metadata.name"},
                                                                     {"operator", "In"},
                                                                     {"values", {"b"}}}})}}})}}}}}};
  const json selector = {{"pool", "b"}};
  PodConstraints before = read_pod_constraints({{"spec", {{"nodeSelector", selector}}}});
  PodConstraints after =
      read_pod_constraints({{"spec", {{"nodeSelector", selector}, {"affinity", pin}}}});
  EXPECT_EQ(before.key, after.key);
  ASSERT_NE(nullptr, after.placement);
  EXPECT_FALSE(after.placement->refuses(node("c", {{"pool", "b"}})).has_value());

  const json own = {{"nodeAffinity",
                     {{"requiredDuringSchedulingIgnoredDuringExecution",
                       {{"nodeSelectorTerms",
                         json::array({{{"matchExpressions", json::array({{{"key", "pool"},
                                                                          {"operator", "In"},
                                                                          {"values", {"b"}}}})}}})}}}}}};
  PodConstraints owners = read_pod_constraints({{"spec", {{"affinity", own}}}});
  ASSERT_NE(nullptr, owners.placement);
  EXPECT_TRUE(owners.placement->refuses(node("c", {{"pool", "c"}})).has_value());

  EXPECT_EQ(nullptr, read_pod_constraints({{"spec", {{"containers", json::array()}}}}).placement);
  for (const json& hostile : {json(), json(7), json::array(), json{{"spec", "x"}},
                              json{{"spec", {{"tolerations", "x"}, {"nodeSelector", 3}}}}}) {
    EXPECT_NO_THROW(read_pod_constraints(hostile)) << hostile.dump();
  }
}

}  // namespace
}  // namespace allox::extender
