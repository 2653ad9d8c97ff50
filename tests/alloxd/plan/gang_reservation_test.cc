// A waiting gang's reservation (alloxd/plan/gang_reservation.h): the oldest gang that does not
// fit now is given the placements that free soonest, their idle units held from every other
// job except one that ends before the gang's estimated start (backfill); nothing is held once
// the gang starts or leaves. Through the planner on a clock the test steps, and the placement
// rule alone.
#include "alloxd/plan/gang_reservation.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "alloxd/plan/planner.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

// A FIFO planner over two nodes of 8 GPUs, on a clock the test steps, started.
struct Cluster {
  testing::ScratchDir dir;
  ExtenderConfig config;
  Metrics metrics;
  std::shared_ptr<double> clock = std::make_shared<double>(1000);
  std::unique_ptr<Planner> planner;

  Cluster() {
    config =
        testing::make_config({{"n8a", {{"gpu", 8}}}, {"n8b", {{"gpu", 8}}}}, dir.file("state.db"));
    PlannerOptions options;
    options.inventory = config.nodes;
    options.clock = [clock = clock] { return *clock; };
    auto made = Planner::create(config, make_policy("fifo", {}).value(), metrics, options);
    EXPECT_TRUE(made.ok()) << made.message();
    planner = std::move(*made);
    planner->start();
  }
  ~Cluster() { planner->stop(); }

  // Pod `name` of job `job`: `gpus` GPUs for `seconds`, a member of a gang of `gang`.
  JobVariant add(const std::string& job, const std::string& name, int gpus, double seconds,
                 int gang = 1) {
    std::map<std::string, std::string> annotations = {
        {"allox.io/job", job}, {"allox.io/time.gpu", std::to_string(static_cast<int>(seconds))}};
    if (gang > 1) annotations["allox.io/gang-size"] = std::to_string(gang);
    nlohmann::json pod = testing::make_pod("lab", name, "nvidia.com/gpu", annotations);
    pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = std::to_string(gpus);
    auto variant = read_job_variant(pod, config.devices);
    EXPECT_TRUE(variant.ok()) << variant.message();
    auto registered = planner->register_variant(*variant);
    EXPECT_TRUE(registered.ok()) << registered.message();
    pods[variant->job_id] = *variant;
    return *variant;
  }
  std::vector<JobVariant> add_gang(const std::string& job, int n, int gpus, double seconds) {
    std::vector<JobVariant> members;
    for (int i = 0; i < n; ++i) {
      members.push_back(add(job, job + "-" + std::to_string(i), gpus, seconds, n));
    }
    return members;
  }
  std::shared_ptr<const Plan> plan() {
    planner->solve_now();
    return planner->latest_plan();
  }
  // Records the start of every one-pod job `plan` starts, as their binds would; the ids.
  std::vector<std::string> start_planned(const Plan& plan) {
    std::vector<std::string> started;
    for (const auto& [id, start] : plan.starts) {
      if (!start.members.empty()) continue;
      auto recorded = planner->record_start(pods.at(id), start.node, start.slot);
      EXPECT_TRUE(recorded.ok()) << id << ": " << recorded.message();
      started.push_back(id);
    }
    return started;
  }
  JobPhase phase(const std::string& id) const {
    return planner->read([&](const JobBook& book) { return book.job(id)->record.phase; });
  }

  std::map<std::string, JobVariant> pods;  // job id -> its pod
};

// Two 8-GPU nodes busy with one-GPU jobs, and a stream of one-GPU jobs arriving as fast as
// they end: without a reservation each freed GPU goes to the next small job and a gang of 2 × 4
// never finds 4 free on a node. With one it starts once the 8 GPUs it was given have freed.
TEST(GangReservationTest, AGangBehindAStreamOfSmallJobsStartsWithinABoundedNumberOfPlans) {
  Cluster cluster;
  std::map<std::string, double> ends;  // running job -> when it ends
  int made = 0;
  auto arrive = [&](double seconds) {
    const std::string name = "s" + std::to_string(made++);
    cluster.add(name, name, 1, seconds);
  };
  auto start_planned = [&](const Plan& plan) {
    for (const std::string& id : cluster.start_planned(plan)) {
      ends[id] = *cluster.clock + cluster.planner->read([&](const JobBook& book) {
        return book.job(id)->planned->time.at("gpu");
      });
    }
  };
  for (int i = 0; i < 16; ++i) arrive(100 + 10 * i);
  start_planned(*cluster.plan());
  ASSERT_EQ(16u, ends.size());
  cluster.add_gang("big", 2, 4, 500);
  arrive(400);  // the stream: one waiting small job at any time
  int plans = 0;
  bool started = false;
  std::optional<double> promised;  // the first plan's estimated start for the gang
  while (!started && plans < 40) {
    // The next job ends, and another small one arrives.
    auto next = ends.begin();
    for (auto it = ends.begin(); it != ends.end(); ++it) {
      if (it->second < next->second) next = it;
    }
    *cluster.clock = next->second;
    ASSERT_TRUE(cluster.planner->complete(next->first).ok());
    ends.erase(next);
    arrive(400);
    std::shared_ptr<const Plan> plan = cluster.plan();
    ++plans;
    auto gang = plan->starts.find("lab/big");
    if (gang != plan->starts.end()) {
      std::map<std::string, std::string> nodes;
      for (const GangPlacement& m : gang->second.members) nodes[m.pod] = m.node;
      ASSERT_TRUE(cluster.planner->record_gang_start("lab/big", nodes, "gpu").ok());
      started = true;
    } else {
      ASSERT_EQ(1u, plan->waiting.count("lab/big"));
      const PlannedWait& wait = plan->waiting.at("lab/big");
      EXPECT_NE(std::string::npos, wait.note.find("reserved for gang lab/big: 2 × gpu ×4 on"))
          << wait.note;
      ASSERT_TRUE(wait.estimated_start.has_value());
      if (!promised) promised = wait.estimated_start;
      EXPECT_DOUBLE_EQ(*promised, *wait.estimated_start) << "the estimates hold: so does it";
    }
    start_planned(*plan);
  }
  ASSERT_TRUE(started) << "the gang still waits after " << plans << " plans";
  // Its GPUs were some of the first 16 jobs' (the stream's jobs end later): it starts when the
  // first plan estimated, as the last of them ends, whatever the stream did meanwhile.
  ASSERT_TRUE(promised.has_value());
  EXPECT_DOUBLE_EQ(*promised, *cluster.clock);
  EXPECT_LE(plans, 16);
  EXPECT_EQ(JobPhase::kRunning, cluster.phase("lab/big"));
}

// One node busy until 2000 with an 8-GPU job; the other (returned) with 2 GPUs idle and 6
// one-GPU jobs ending at 1100 to 1150; the clock at 1000.
std::string busy_cluster(Cluster& cluster) {
  cluster.add("wide", "wide", 8, 1000);
  std::shared_ptr<const Plan> plan = cluster.plan();
  cluster.start_planned(*plan);
  const std::string other = plan->starts.at("lab/wide").node == "n8a" ? "n8b" : "n8a";
  for (int i = 0; i < 6; ++i) {
    const std::string name = "a" + std::to_string(i);
    cluster.add(name, name, 1, 100 + 10 * i);
  }
  plan = cluster.plan();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(other, plan->starts.at("lab/a" + std::to_string(i)).node);
  cluster.start_planned(*plan);
  return other;
}

// The gang's two placements of 4 are on the node of short jobs, free at 1110 and 1150. Of the
// two jobs waiting, the short one (it would end at 1050) runs on its held GPUs meanwhile, the
// long one (1500) does not.
TEST(GangReservationTest, AJobThatEndsBeforeTheGangsStartIsBackfilledAndNoOtherIs) {
  Cluster cluster;
  const std::string node = busy_cluster(cluster);
  cluster.add_gang("big", 2, 4, 500);
  cluster.add("long", "long", 1, 500);
  cluster.add("short", "short", 1, 50);
  std::shared_ptr<const Plan> plan = cluster.plan();
  EXPECT_EQ(0u, plan->starts.count("lab/big"));
  EXPECT_EQ(0u, plan->starts.count("lab/long")) << "it would end after the gang's start";
  ASSERT_EQ(1u, plan->starts.count("lab/short")) << "it ends before the gang's start";
  EXPECT_EQ(node, plan->starts.at("lab/short").node);
  const PlannedWait& gang = plan->waiting.at("lab/big");
  EXPECT_EQ(
      "gang of 2 × gpu ×4 waits for room: 2 nodes' worth of 4 free units at once; "
      "reserved for gang lab/big: 2 × gpu ×4 on " +
          node,
      gang.note);
  ASSERT_TRUE(gang.estimated_start.has_value());
  EXPECT_DOUBLE_EQ(1150, *gang.estimated_start);
  ASSERT_EQ(1u, plan->waiting.count("lab/long"));
  EXPECT_EQ(1, plan->waiting.at("lab/long").position);
  EXPECT_EQ(2, plan->waiting.at("lab/long").queue_length);
  // Backfilled, it runs; the gang still starts as the sixth short job ends.
  cluster.start_planned(*plan);
  for (int i = 0; i < 6; ++i)
    ASSERT_TRUE(cluster.planner->complete("lab/a" + std::to_string(i)).ok());
  *cluster.clock = 1150;
  EXPECT_EQ(0u, cluster.plan()->starts.count("lab/big")) << "the backfilled job still runs";
  ASSERT_TRUE(cluster.planner->complete("lab/short").ok());
  plan = cluster.plan();
  EXPECT_EQ(1u, plan->starts.count("lab/big"));
  EXPECT_EQ(0u, plan->starts.count("lab/long"));
}

// The reservation lives in the plan alone: once the gang's pods are deleted the units it held
// go to the next job at once.
TEST(GangReservationTest, TheReservationIsReleasedWhenTheGangIsDeleted) {
  Cluster cluster;
  const std::string node = busy_cluster(cluster);
  std::vector<JobVariant> members = cluster.add_gang("big", 2, 4, 500);
  cluster.add("long", "long", 1, 500);
  EXPECT_EQ(0u, cluster.plan()->starts.count("lab/long"));
  for (const JobVariant& member : members) {
    ASSERT_TRUE(cluster.planner->remove_variant(member.pod).ok());
  }
  std::shared_ptr<const Plan> plan = cluster.plan();
  EXPECT_EQ(0u, plan->waiting.count("lab/big"));
  ASSERT_EQ(1u, plan->starts.count("lab/long")) << "the gang's units are free again";
  EXPECT_EQ(node, plan->starts.at("lab/long").node);
}

// The rule alone: a node's slots by the time they free, the earliest placements over all.
TEST(GangReservationTest, ThePlacementsThatFreeSoonestAreReserved) {
  std::vector<MachineSlot> slots;
  ClusterState state;
  state.now = 10;
  // x: idle, 30, 20, 90; y: 40, 50, idle, idle. Placements of 2: x(20), x(90), y(now), y(50).
  const std::vector<std::pair<std::string, double>> units = {
      {"x", 0}, {"x", 30}, {"x", 20}, {"x", 90}, {"y", 40}, {"y", 50}, {"y", 0}, {"y", 0}};
  for (const auto& [node, busy] : units) {
    slots.push_back({node, "gpu", static_cast<int>(slots.size()), ""});
    state.machines.push_back({node, "gpu", busy, node});
    state.idle.push_back(busy == 0);
  }
  auto two = reserve_gang(slots, state, 2, 2, {"gpu"});
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(20, two->start);
  EXPECT_EQ((std::vector<std::string>{"x", "y"}), two->nodes);
  EXPECT_EQ((std::vector<std::size_t>{0, 6, 7}), two->held);
  auto three = reserve_gang(slots, state, 3, 2, {"gpu"});
  ASSERT_TRUE(three.has_value());
  EXPECT_EQ(50, three->start);
  EXPECT_EQ((std::vector<std::string>{"x", "y", "y"}), three->nodes);
  EXPECT_FALSE(reserve_gang(slots, state, 5, 2, {"gpu"}).has_value()) << "4 placements in all";
  EXPECT_FALSE(reserve_gang(slots, state, 1, 2, {"cpu"}).has_value());

  // Members that may not go to y (a taint, a selector): x's two placements, the later at 90.
  auto only_x = [](const std::string& node) { return node == "x"; };
  auto on_x = reserve_gang(slots, state, 2, 2, {"gpu"}, only_x);
  ASSERT_TRUE(on_x.has_value());
  EXPECT_EQ(90, on_x->start);
  EXPECT_EQ((std::vector<std::string>{"x", "x"}), on_x->nodes);
  EXPECT_EQ((std::vector<std::size_t>{0}), on_x->held) << "nothing held on y";
  EXPECT_FALSE(reserve_gang(slots, state, 3, 2, {"gpu"}, only_x).has_value());
}

}  // namespace
}  // namespace allox::extender
