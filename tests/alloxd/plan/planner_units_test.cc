// Multi-unit pods through the planner and the book (alloxd/store/job_book.h, alloxd/plan/plan.h):
// a pod asking for k GPUs is planned on k idle slots of one node and runs on k slots until it
// ends; no plan and no start ever puts more units on a node than it has; a pod larger than every
// node is parked with its reason, holds nothing while others run, and is planned again when a
// node that large joins; a running job's k slots survive a restart.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "alloxd/plan/planner.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

// A planner over two 2-GPU nodes, with `policy`, started.
struct Cluster {
  testing::ScratchDir dir;
  ExtenderConfig config;
  Metrics metrics;
  std::unique_ptr<Planner> planner;

  explicit Cluster(const std::string& policy, std::vector<NodeInventory> nodes = {
                                                  {"g1", {{"gpu", 2}}}, {"g2", {{"gpu", 2}}}}) {
    config = testing::make_config(nodes, dir.file("state.db"));
    config.policy = policy;
    open();
  }
  ~Cluster() {
    if (planner) planner->stop();
  }
  void open() {
    PlannerOptions options;
    options.inventory = config.nodes;
    PolicyOptions policy_options;
    policy_options.alpha = 1;
    auto made = Planner::create(config, make_policy(config.policy, policy_options).value(), metrics,
                                options);
    ASSERT_TRUE(made.ok()) << made.message();
    planner = std::move(*made);
    planner->start();
  }
  // A pod of job `name` asking for `gpus` GPUs, registered.
  JobVariant add(const std::string& name, int gpus) {
    nlohmann::json pod = testing::make_pod("lab", name, "nvidia.com/gpu");
    pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = std::to_string(gpus);
    auto variant = read_job_variant(pod, config.devices);
    EXPECT_TRUE(variant.ok()) << variant.message();
    EXPECT_EQ(gpus, variant->units);
    auto registered = planner->register_variant(*variant);
    EXPECT_TRUE(registered.ok()) << registered.message();
    return *variant;
  }
  std::shared_ptr<const Plan> plan() {
    planner->solve_now();
    return planner->latest_plan();
  }
  // Units held per node: the book's running jobs, each JobRecord::units, and the slots that
  // name each job, which must be as many.
  std::map<std::string, int> held() const {
    return planner->read([](const JobBook& book) {
      std::map<std::string, int> units;
      std::map<std::string, int> slots_of;
      for (const MachineSlot& slot : book.slots()) {
        if (!slot.running_job.empty()) ++slots_of[slot.running_job];
      }
      for (const auto& [id, job] : book.jobs()) {
        if (job.record.phase != JobPhase::kRunning) continue;
        units[job.record.node] += job.record.units;
        EXPECT_EQ(job.record.units, slots_of[id]) << id << " holds its units as slots";
        EXPECT_EQ(static_cast<std::size_t>(job.record.units - 1), job.other_slots.size()) << id;
      }
      return units;
    });
  }
};

// The first bug a control plane showed: one 2-GPU pod and three 1-GPU pods on two 2-GPU nodes
// were all admitted at once. Each plan is bound as it says, a job ends, and so on until all
// four ran: no plan ever puts more than 2 units on a node beside what runs there, every start
// is accepted, every job runs once.
TEST(PlannerUnitsTest, AMultiUnitPodNeverOvercommitsItsNode) {
  for (const std::string policy : {"fifo", "allox", "sjf", "drf"}) {
    SCOPED_TRACE(policy);
    Cluster cluster(policy);
    std::map<std::string, JobVariant> pods;
    pods.emplace("lab/a", cluster.add("a", 2));
    for (const char* name : {"b", "c", "d"}) {
      pods.emplace(std::string("lab/") + name, cluster.add(name, 1));
    }
    std::map<std::string, int> starts;
    for (int round = 0; round < 10 && starts.size() < pods.size(); ++round) {
      std::shared_ptr<const Plan> plan = cluster.plan();
      ASSERT_EQ("", plan->error);
      std::map<std::string, int> planned = cluster.held();
      for (const auto& [id, start] : plan->starts) {
        EXPECT_EQ(pods.at(id).units, start.units) << id;
        planned[start.node] += start.units;
      }
      for (const auto& [node, units] : planned) {
        EXPECT_LE(units, 2) << "round " << round << ": node " << node << " over-committed";
      }
      if (round == 0 && policy == "fifo") {
        EXPECT_EQ(3u, plan->starts.size()) << "a 2-GPU job and two 1-GPU jobs fill both nodes";
        EXPECT_EQ(1u, plan->waiting.size());
      }
      for (const auto& [id, start] : plan->starts) {
        auto started = cluster.planner->record_start(pods.at(id), start.node, start.slot);
        ASSERT_TRUE(started.ok()) << id << " on " << start.node << ": " << started.message();
        ++starts[id];
      }
      for (const auto& [node, units] : cluster.held()) EXPECT_LE(units, 2) << node;
      // The first running job (by id) ends.
      std::string running;
      cluster.planner->read([&](const JobBook& book) {
        for (const auto& [id, pod] : pods) {
          if (book.job(id)->record.phase == JobPhase::kRunning) {
            running = id;
            break;
          }
        }
        return 0;
      });
      if (!running.empty()) {
        ASSERT_TRUE(cluster.planner->complete(running).ok());
      }
    }
    for (const auto& [id, pod] : pods) EXPECT_EQ(1, starts[id]) << id << " ran once";
  }
}

// A start the node cannot hold is refused whole: nothing changes in the book.
TEST(PlannerUnitsTest, AStartOnANodeWithoutItsUnitsIsRefused) {
  Cluster cluster("fifo");
  const JobVariant one = cluster.add("one", 1);
  const JobVariant two = cluster.add("two", 2);
  ASSERT_TRUE(cluster.planner->record_start(one, "g1", -1).ok());
  auto refused = cluster.planner->record_start(two, "g1", -1);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ("node g1 has 1 of 2 nvidia.com/gpu free; pod lab/two needs 2", refused.message());
  EXPECT_EQ(1, (cluster.held()["g1"]));
  auto started = cluster.planner->record_start(two, "g2", -1);
  ASSERT_TRUE(started.ok()) << started.message();
  EXPECT_EQ(2, started->record.units);
  EXPECT_EQ(0,
            cluster.planner->read([](const JobBook& b) { return b.capacity("g2", "gpu").free; }));
  ASSERT_TRUE(cluster.planner->complete("lab/two").ok());
  EXPECT_EQ(2, cluster.planner->read([](const JobBook& b) { return b.capacity("g2", "gpu").free; }))
      << "an ended job frees all its units";
}

// The second bug: a 3-GPU pod on 2-GPU nodes was admitted and held a GPU for minutes. It is
// parked with its reason instead, holds nothing, and the 1-GPU pods run; a 4-GPU node joining
// brings it back into the plan.
TEST(PlannerUnitsTest, APodLargerThanEveryNodeIsParkedUntilANodeThatLargeJoins) {
  Cluster cluster("allox");
  const JobVariant big = cluster.add("big", 3);
  cluster.add("x", 1);
  cluster.add("y", 1);
  std::shared_ptr<const Plan> plan = cluster.plan();
  ASSERT_EQ("", plan->error);
  ASSERT_EQ(1u, plan->parked.count("lab/big"));
  EXPECT_EQ(
      "no node can hold it: 3 nvidia.com/gpu on one node (pod lab/big), the largest node has 2",
      plan->parked.at("lab/big"));
  EXPECT_EQ(0u, plan->starts.count("lab/big"));
  EXPECT_EQ(0u, plan->waiting.count("lab/big"));
  EXPECT_EQ(1u, plan->starts.count("lab/x"));
  EXPECT_EQ(1u, plan->starts.count("lab/y"));
  int planned_units = 0;
  for (const auto& [id, start] : plan->starts) planned_units += start.units;
  EXPECT_EQ(2, planned_units) << "the parked pod costs nobody a machine";

  cluster.planner->set_inventory(
      {{"g1", {{"gpu", 2}}}, {"g2", {{"gpu", 2}}}, {"g4", {{"gpu", 4}}}});
  plan = cluster.plan();
  EXPECT_EQ(0u, plan->parked.count("lab/big"));
  ASSERT_EQ(1u, plan->starts.count("lab/big")) << "planned again on the larger node";
  EXPECT_EQ("g4", plan->starts.at("lab/big").node);
  EXPECT_EQ(3, plan->starts.at("lab/big").units);
  auto started = cluster.planner->record_start(big, "g4", plan->starts.at("lab/big").slot);
  ASSERT_TRUE(started.ok()) << started.message();
  EXPECT_EQ(1,
            cluster.planner->read([](const JobBook& b) { return b.capacity("g4", "gpu").free; }));
}

// A job of two variants plans only the one some node can hold.
TEST(PlannerUnitsTest, AVariantNoNodeCanHoldIsLeftOutOfItsJob) {
  Cluster cluster("fifo", {{"g1", {{"gpu", 2}}}, {"c1", {{"cpu", 1}}}});
  nlohmann::json gpu = testing::make_pod("lab", "j-gpu", "nvidia.com/gpu", {{"allox.io/job", "j"}});
  gpu["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "4";
  nlohmann::json cpu = testing::make_pod("lab", "j-cpu", "cpu", {{"allox.io/job", "j"}});
  for (const nlohmann::json& pod : {gpu, cpu}) {
    auto variant = read_job_variant(pod, cluster.config.devices);
    ASSERT_TRUE(variant.ok()) << variant.message();
    ASSERT_TRUE(cluster.planner->register_variant(*variant).ok());
  }
  std::shared_ptr<const Plan> plan = cluster.plan();
  EXPECT_EQ(0u, plan->parked.count("lab/j"));
  ASSERT_EQ(1u, plan->starts.count("lab/j"));
  EXPECT_EQ("cpu", plan->starts.at("lab/j").device);
}

// A running job's k slots are restored as k slots after a restart, and freed together after it.
TEST(PlannerUnitsTest, ARunningJobsUnitsSurviveARestart) {
  Cluster cluster("fifo");
  const JobVariant two = cluster.add("two", 2);
  const JobVariant one = cluster.add("one", 1);
  ASSERT_TRUE(cluster.planner->record_start(two, "g1", -1).ok());
  ASSERT_TRUE(cluster.planner->record_start(one, "g2", -1).ok());
  const JobVariant later = cluster.add("later", 2);
  cluster.planner->stop();
  cluster.planner.reset();
  cluster.open();
  std::map<std::string, int> held = cluster.held();
  EXPECT_EQ(2, held["g1"]);
  EXPECT_EQ(1, held["g2"]);
  EXPECT_EQ(0,
            cluster.planner->read([](const JobBook& b) { return b.capacity("g1", "gpu").free; }));
  const int later_units =
      cluster.planner->read([](const JobBook& b) { return b.job("lab/later")->planned->units; });
  EXPECT_EQ(2, later_units) << "a queued variant's units are stored with it";
  std::shared_ptr<const Plan> plan = cluster.plan();
  EXPECT_EQ(0u, plan->starts.count("lab/later")) << "no node has 2 free units";
  ASSERT_TRUE(cluster.planner->complete("lab/two").ok());
  EXPECT_EQ(2,
            cluster.planner->read([](const JobBook& b) { return b.capacity("g1", "gpu").free; }));
  plan = cluster.plan();
  ASSERT_EQ(1u, plan->starts.count("lab/later"));
  EXPECT_EQ("g1", plan->starts.at("lab/later").node);
  EXPECT_TRUE(cluster.planner->record_start(later, "g1", plan->starts.at("lab/later").slot).ok());
}

}  // namespace
}  // namespace allox::extender
