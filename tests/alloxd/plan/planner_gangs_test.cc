// Gangs through the planner and the book (alloxd/plan/planner_gangs.cc, job_book_gangs.cc): a
// gang of N pods × k GPUs is planned only as N placements at once, never more units on a node
// than it has idle; it waits for its members (holding nothing) and for room (the oldest such
// gang with the units reserved for it: gang_reservation_test.cc); one that can never fit is
// parked with its reason; its start holds N × k units until every member has ended, and
// survives a restart.
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

// A FIFO planner over g2a and g2b (2 GPUs each) and g4 (4 GPUs), started.
struct Cluster {
  testing::ScratchDir dir;
  ExtenderConfig config;
  Metrics metrics;
  std::unique_ptr<Planner> planner;

  Cluster() {
    config = testing::make_config(
        {{"g2a", {{"gpu", 2}}}, {"g2b", {{"gpu", 2}}}, {"g4", {{"gpu", 4}}}}, dir.file("state.db"));
    config.policy = "fifo";
    open();
  }
  ~Cluster() {
    if (planner) planner->stop();
  }
  // The admission holds' clock, stepped by the test.
  std::shared_ptr<std::chrono::steady_clock::time_point> steady =
      std::make_shared<std::chrono::steady_clock::time_point>();

  void open() {
    PlannerOptions options;
    options.inventory = config.nodes;
    options.steady_now = [steady = steady] { return *steady; };
    auto made = Planner::create(config, make_policy(config.policy, {}).value(), metrics, options);
    ASSERT_TRUE(made.ok()) << made.message();
    planner = std::move(*made);
    planner->start();
  }
  void restart() {
    planner->stop();
    planner.reset();
    open();
  }
  // Pod `name` of job `job` asking for `gpus` GPUs, a member of a gang of `gang`, registered.
  JobVariant add(const std::string& job, const std::string& name, int gpus, int gang) {
    std::map<std::string, std::string> annotations = {{"allox.io/job", job}};
    if (gang > 1) annotations["allox.io/gang-size"] = std::to_string(gang);
    nlohmann::json pod = testing::make_pod("lab", name, "nvidia.com/gpu", annotations);
    pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = std::to_string(gpus);
    auto variant = read_job_variant(pod, config.devices);
    EXPECT_TRUE(variant.ok()) << variant.message();
    auto registered = planner->register_variant(*variant);
    EXPECT_TRUE(registered.ok()) << registered.message();
    return *variant;
  }
  std::vector<JobVariant> add_gang(const std::string& job, int n, int gpus) {
    std::vector<JobVariant> members;
    for (int i = 0; i < n; ++i) members.push_back(add(job, job + "-" + std::to_string(i), gpus, n));
    return members;
  }
  std::shared_ptr<const Plan> plan() {
    planner->solve_now();
    return planner->latest_plan();
  }
  // Units the book's slots hold per node.
  std::map<std::string, int> held() const {
    return planner->read([](const JobBook& book) {
      std::map<std::string, int> units;
      for (const MachineSlot& slot : book.slots()) {
        if (!slot.running_job.empty()) ++units[slot.node];
      }
      return units;
    });
  }
};

const std::map<std::string, int> kNodeUnits = {{"g2a", 2}, {"g2b", 2}, {"g4", 4}};

// The units a plan's starts take per node, beside what the book holds.
std::map<std::string, int> planned_units(const Plan& plan, std::map<std::string, int> held) {
  for (const auto& [id, start] : plan.starts) {
    if (start.members.empty()) held[start.node] += start.units;
    for (const GangPlacement& m : start.members) held[m.node] += start.units;
  }
  return held;
}

TEST(PlannerGangsTest, AGangIsPlannedAsAllItsPlacementsAtOnce) {
  Cluster cluster;
  cluster.add_gang("big", 4, 2);
  std::shared_ptr<const Plan> plan = cluster.plan();
  ASSERT_EQ(1u, plan->starts.count("lab/big"));
  const PlannedStart& start = plan->starts.at("lab/big");
  ASSERT_EQ(4u, start.members.size());
  EXPECT_EQ(2, start.units);
  EXPECT_EQ("gpu", start.device);
  std::set<std::string> pods;
  for (const GangPlacement& m : start.members) pods.insert(m.pod);
  EXPECT_EQ(4u, pods.size()) << "each member placed once";
  for (const auto& [node, units] : planned_units(*plan, cluster.held())) {
    EXPECT_LE(units, kNodeUnits.at(node)) << node;
  }
  EXPECT_EQ("gang of 4 × gpu ×2 on g2a, g2b, g4", start_text(start));
}

TEST(PlannerGangsTest, AGangWaitsForItsMembersHoldingNothingAndForRoomWithItsUnitsReserved) {
  Cluster cluster;
  std::vector<JobVariant> members = {cluster.add("big", "big-0", 2, 4),
                                     cluster.add("big", "big-1", 2, 4),
                                     cluster.add("big", "big-2", 2, 4)};
  std::shared_ptr<const Plan> plan = cluster.plan();
  EXPECT_EQ(0u, plan->starts.count("lab/big"));
  ASSERT_EQ(1u, plan->waiting.count("lab/big"));
  EXPECT_NE(std::string::npos, plan->waiting.at("lab/big").note.find("3 of 4 pods seen"))
      << plan->waiting.at("lab/big").note;
  // A one-GPU job runs on g4: three nodes still have room for 2 + 2 + 3 GPUs, only three
  // members of 2. The gang waits, and a smaller job passes it.
  JobVariant small = cluster.add("small", "small", 1, 1);
  plan = cluster.plan();
  ASSERT_EQ(1u, plan->starts.count("lab/small"));
  ASSERT_TRUE(cluster.planner->record_start(small, "g4", -1).ok());
  cluster.add("big", "big-3", 2, 4);
  cluster.add("other", "other", 2, 1);
  plan = cluster.plan();
  EXPECT_EQ(0u, plan->starts.count("lab/big")) << "3 placements of 2 exist, not 4";
  ASSERT_EQ(1u, plan->waiting.count("lab/big"));
  EXPECT_NE(std::string::npos, plan->waiting.at("lab/big").note.find("waits for room"));
  EXPECT_NE(std::string::npos,
            plan->waiting.at("lab/big").note.find("reserved for gang lab/big: 4 × gpu ×2 on "
                                                  "g2a, g2b, g4"))
      << plan->waiting.at("lab/big").note;
  // Every GPU is the gang's: the idle ones are held for it, the small job's frees last.
  EXPECT_EQ(0u, plan->starts.count("lab/other")) << "the units are reserved for the gang";
  // The small one ends: the gang starts, ahead of the other job.
  ASSERT_TRUE(cluster.planner->complete("lab/small").ok());
  plan = cluster.plan();
  EXPECT_EQ(1u, plan->starts.count("lab/big"));
  EXPECT_EQ(0u, plan->starts.count("lab/other"));
  for (const auto& [node, units] : planned_units(*plan, cluster.held())) {
    EXPECT_LE(units, kNodeUnits.at(node)) << node;
  }
}

TEST(PlannerGangsTest, AGangThatCanNeverFitIsParkedWithItsReasonHoldingNothing) {
  Cluster cluster;
  cluster.add_gang("five", 5, 2);  // 8 GPUs hold 4 members of 2
  cluster.add_gang("wide", 2, 8);  // no node has 8
  cluster.add("small", "small", 1, 1);
  std::shared_ptr<const Plan> plan = cluster.plan();
  ASSERT_EQ(1u, plan->parked.count("lab/five"));
  EXPECT_NE(std::string::npos, plan->parked.at("lab/five").find("gang of 5 × gpu ×2"))
      << plan->parked.at("lab/five");
  EXPECT_NE(std::string::npos, plan->parked.at("lab/five").find("room for 4"))
      << plan->parked.at("lab/five");
  ASSERT_EQ(1u, plan->parked.count("lab/wide"));
  EXPECT_NE(std::string::npos, plan->parked.at("lab/wide").find("the largest node has 4"))
      << plan->parked.at("lab/wide");
  EXPECT_EQ(0u, plan->starts.count("lab/five"));
  EXPECT_EQ(0u, plan->starts.count("lab/wide"));
  EXPECT_EQ(1u, plan->starts.count("lab/small")) << "a parked gang holds nothing";
}

TEST(PlannerGangsTest, AnAdmittedGangKeepsItsPlacementsUntilItBinds) {
  Cluster cluster;
  cluster.add_gang("big", 3, 2);
  std::shared_ptr<const Plan> plan = cluster.plan();
  const PlannedStart start = plan->starts.at("lab/big");
  ASSERT_TRUE(cluster.planner->admit("lab/big", start.members.front().pod, start).ok());
  cluster.add("late", "late", 2, 1);  // arrives later; must not take the gang's units
  plan = cluster.plan();
  ASSERT_EQ(1u, plan->starts.count("lab/big"));
  EXPECT_EQ(start.members, plan->starts.at("lab/big").members);
  for (const auto& [node, units] : planned_units(*plan, cluster.held())) {
    EXPECT_LE(units, kNodeUnits.at(node)) << node;
  }
}

TEST(PlannerGangsTest, AnAdmittedGangUnboundPastTheHoldIsLapsed) {
  Cluster cluster;
  cluster.add_gang("big", 2, 2);
  const PlannedStart start = cluster.plan()->starts.at("lab/big");
  ASSERT_TRUE(cluster.planner->admit("lab/big", start.members.front().pod, start).ok());
  EXPECT_TRUE(cluster.planner->lapsed_gangs().empty());
  *cluster.steady += std::chrono::seconds(61);  // admission_hold is 60 s
  EXPECT_EQ(std::vector<std::string>{"lab/big"}, cluster.planner->lapsed_gangs());
  cluster.planner->roll_back_gang("lab/big", "rolled back: not bound within the hold");
  EXPECT_TRUE(cluster.planner->lapsed_gangs().empty());
  EXPECT_EQ(0u, cluster.plan()->starts.count("lab/big")) << "its members left the book";
}

TEST(PlannerGangsTest, AGangHoldsItsUnitsUntilEveryMemberEndedAndAcrossARestart) {
  Cluster cluster;
  std::vector<JobVariant> members = cluster.add_gang("big", 4, 2);
  std::shared_ptr<const Plan> plan = cluster.plan();
  const PlannedStart start = plan->starts.at("lab/big");
  std::map<std::string, std::string> nodes;
  for (const GangPlacement& m : start.members) nodes[m.pod] = m.node;
  auto started = cluster.planner->record_gang_start("lab/big", nodes, "gpu");
  ASSERT_TRUE(started.ok()) << started.message();
  EXPECT_EQ(4, started->gang);
  EXPECT_EQ(2, started->units);
  const std::map<std::string, int> whole = {{"g2a", 2}, {"g2b", 2}, {"g4", 4}};
  EXPECT_EQ(whole, cluster.held());
  // The fairness share counts N × k devices.
  cluster.planner->read(
      [](const JobBook& book) { EXPECT_EQ(8, book.job("lab/big")->planned->units); });
  cluster.restart();
  EXPECT_EQ(whole, cluster.held()) << "a restart gives the gang its members' units back";
  cluster.planner->read([&](const JobBook& book) {
    EXPECT_EQ(nodes, book.job("lab/big")->member_nodes);
    EXPECT_EQ(JobPhase::kRunning, book.job("lab/big")->record.phase);
  });
  for (std::size_t i = 0; i + 1 < members.size(); ++i) {
    ASSERT_TRUE(cluster.planner->gang_member_ended(members[i]).ok());
    EXPECT_EQ(whole, cluster.held()) << "units are freed together, after member " << i;
  }
  ASSERT_TRUE(cluster.planner->gang_member_ended(members.back()).ok());
  EXPECT_TRUE(cluster.held().empty());
  cluster.planner->read(
      [](const JobBook& book) { EXPECT_EQ(JobPhase::kDone, book.job("lab/big")->record.phase); });
}

TEST(PlannerGangsTest, AFailedMemberEndsTheGangAndItsRunningMembersAreDeleted) {
  Cluster cluster;
  std::vector<JobVariant> members = cluster.add_gang("big", 3, 2);
  const PlannedStart start = cluster.plan()->starts.at("lab/big");
  std::map<std::string, std::string> nodes;
  for (const GangPlacement& m : start.members) nodes[m.pod] = m.node;
  ASSERT_TRUE(cluster.planner->record_gang_start("lab/big", nodes, "gpu").ok());
  const std::map<std::string, int> whole = cluster.held();
  ASSERT_TRUE(cluster.planner->gang_member_ended(members[1], /*failed=*/true).ok());
  std::vector<Planner::Rollback> deletions = cluster.planner->take_rollbacks();
  ASSERT_EQ(1u, deletions.size());
  EXPECT_EQ("GangFailed", deletions[0].reason);
  std::set<std::string> deleted;
  for (const PodIdentity& pod : deletions[0].members) deleted.insert(pod_key(pod));
  EXPECT_EQ((std::set<std::string>{"lab/big-0", "lab/big-2"}), deleted);
  EXPECT_EQ(whole, cluster.held()) << "units stay held while a member still runs";
  ASSERT_TRUE(cluster.planner->gang_member_ended(members[0]).ok());
  ASSERT_TRUE(cluster.planner->gang_member_ended(members[2]).ok());
  EXPECT_TRUE(cluster.held().empty()) << "freed together once every member ended";
}

// A gang whose batch/v1 Job runs a Failed member again (model/job.h): once every member has
// ended, the gang is the same run queued again, with none of the old members, and the Job's new
// pods are its members (in the store too, across a restart).
TEST(PlannerGangsTest, AFailedMemberWhoseJobRetriesQueuesTheSameRunAgain) {
  Cluster cluster;
  std::vector<JobVariant> members = cluster.add_gang("big", 3, 2);
  const PlannedStart start = cluster.plan()->starts.at("lab/big");
  std::map<std::string, std::string> nodes;
  for (const GangPlacement& m : start.members) nodes[m.pod] = m.node;
  auto started = cluster.planner->record_gang_start("lab/big", nodes, "gpu");
  ASSERT_TRUE(started.ok()) << started.message();
  const std::int64_t row = started->row;
  ASSERT_TRUE(cluster.planner->gang_member_ended(members[1], /*failed=*/true, /*retry=*/true).ok());
  ASSERT_EQ(1u, cluster.planner->take_rollbacks().size());
  ASSERT_TRUE(cluster.planner->gang_member_ended(members[0]).ok());
  cluster.planner->read([](const JobBook& book) {
    EXPECT_EQ(JobPhase::kRunning, book.job("lab/big")->record.phase) << "a member still runs";
  });
  ASSERT_TRUE(cluster.planner->gang_member_ended(members[2]).ok());
  EXPECT_TRUE(cluster.held().empty());
  cluster.planner->read([&](const JobBook& book) {
    const BookJob* job = book.job("lab/big");
    ASSERT_NE(nullptr, job);
    EXPECT_EQ(JobPhase::kQueued, job->record.phase);
    EXPECT_EQ(row, job->record.row) << "the same run";
    EXPECT_TRUE(job->variants.empty()) << "the members that ran are no longer its pods";
    EXPECT_TRUE(job->member_nodes.empty());
  });
  // The Job's replacements (new names and UIDs) are the gang's members; it runs again.
  for (JobVariant member : members) {
    member.pod.name += "-retry";
    member.pod.uid += "-retry";
    ASSERT_TRUE(cluster.planner->register_variant(member).ok());
  }
  EXPECT_EQ(1u, cluster.plan()->starts.count("lab/big"));
  cluster.restart();
  cluster.planner->read([&](const JobBook& book) {
    const BookJob* job = book.job("lab/big");
    ASSERT_NE(nullptr, job);
    EXPECT_EQ(JobPhase::kQueued, job->record.phase);
    EXPECT_EQ(row, job->record.row);
    std::set<std::string> pods;
    for (const auto& [key, variant] : job->variants) pods.insert(key);
    EXPECT_EQ((std::set<std::string>{"lab/big-0-retry", "lab/big-1-retry", "lab/big-2-retry"}),
              pods);
  });
}

TEST(PlannerGangsTest, AStartThatDoesNotFitIsRefusedWholeAndChangesNothing) {
  Cluster cluster;
  cluster.add_gang("big", 3, 2);
  auto refused = cluster.planner->record_gang_start(
      "lab/big", {{"lab/big-0", "g2a"}, {"lab/big-1", "g2a"}, {"lab/big-2", "g4"}}, "gpu");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(std::string::npos, refused.message().find("node g2a has too few free"))
      << refused.message();
  EXPECT_TRUE(cluster.held().empty());
}

TEST(PlannerGangsTest, ARolledBackGangWaitsWithItsReasonAndItsMembersNeverRejoin) {
  Cluster cluster;
  std::vector<JobVariant> members = cluster.add_gang("big", 2, 2);
  cluster.planner->roll_back_gang("lab/big", "rolled back: a binding failed");
  auto rollbacks = cluster.planner->take_rollbacks();
  ASSERT_EQ(1u, rollbacks.size());
  EXPECT_EQ(2u, rollbacks[0].members.size());
  cluster.planner->read([](const JobBook& book) {
    const BookJob* job = book.job("lab/big");
    ASSERT_NE(nullptr, job) << "the note keeps the gang in the book";
    EXPECT_TRUE(job->variants.empty());
    EXPECT_EQ("rolled back: a binding failed", job->gang_note);
  });
  ASSERT_TRUE(cluster.planner->register_variant(members[0]).ok());
  cluster.planner->read([](const JobBook& book) {
    EXPECT_TRUE(book.job("lab/big")->variants.empty()) << "a rolled-back pod does not rejoin";
  });
  // Its owner re-creates the members (new UIDs): the gang runs again.
  for (JobVariant member : members) {
    member.pod.uid += "-again";
    ASSERT_TRUE(cluster.planner->register_variant(member).ok());
  }
  EXPECT_EQ(1u, cluster.plan()->starts.count("lab/big"));
}

// alloxd restarted while a rolled-back gang waited for its members (its run in the store without
// variants): it is the same gang after the restart, waiting for its members, and the members
// its owner makes again join that run.
TEST(PlannerGangsTest, ARolledBackGangWaitingForItsMembersIsTheSameGangAfterARestart) {
  Cluster cluster;
  std::vector<JobVariant> members = cluster.add_gang("big", 2, 2);
  const std::int64_t row =
      cluster.planner->read([](const JobBook& book) { return book.job("lab/big")->record.row; });
  cluster.planner->roll_back_gang("lab/big", "rolled back: a binding failed");
  cluster.planner->take_rollbacks();
  cluster.restart();
  cluster.planner->read([&](const JobBook& book) {
    const BookJob* job = book.job("lab/big");
    ASSERT_NE(nullptr, job);
    EXPECT_EQ(row, job->record.row);
    EXPECT_EQ(JobPhase::kQueued, job->record.phase);
    EXPECT_EQ(2, job->record.gang);
    EXPECT_TRUE(job->variants.empty());
  });
  std::shared_ptr<const Plan> plan = cluster.plan();
  ASSERT_EQ(1u, plan->waiting.count("lab/big"));
  EXPECT_NE(std::string::npos, plan->waiting.at("lab/big").note.find("0 of 2 pods seen"))
      << plan->waiting.at("lab/big").note;
  EXPECT_EQ(0u, plan->unrunnable.count("lab/big"));
  for (JobVariant member : members) {
    member.pod.name += "-again";
    member.pod.uid += "-again";
    ASSERT_TRUE(cluster.planner->register_variant(member).ok());
  }
  EXPECT_EQ(1u, cluster.plan()->starts.count("lab/big"));
  cluster.planner->read(
      [&](const JobBook& book) { EXPECT_EQ(row, book.job("lab/big")->record.row); });
}

// The watch may show a rolled-back member bound after the rollback (its Binding was posted
// before): that binding counts for nobody, and the gang starts on its new members alone.
TEST(PlannerGangsTest, ARolledBackMembersBindingCountsForNobody) {
  Cluster cluster;
  std::vector<JobVariant> members = cluster.add_gang("big", 2, 2);
  cluster.planner->roll_back_gang("lab/big", "rolled back: a binding failed");
  cluster.planner->take_rollbacks();
  std::vector<JobVariant> again;
  for (JobVariant member : members) {  // its owner re-creates them: new names and UIDs
    member.pod.name += "-again";
    member.pod.uid += "-again";
    ASSERT_TRUE(cluster.planner->register_variant(member).ok());
    again.push_back(member);
  }
  EXPECT_EQ(std::nullopt, cluster.planner->gang_member_bound(members[0], "g2a"));
  EXPECT_EQ(std::nullopt, cluster.planner->gang_member_bound(again[0], "g2b"));
  auto phase = [&] {
    return cluster.planner->read(
        [](const JobBook& book) { return book.job("lab/big")->record.phase; });
  };
  EXPECT_EQ(JobPhase::kQueued, phase()) << "one current member bound of two";
  EXPECT_EQ(std::nullopt, cluster.planner->gang_member_bound(again[1], "g4"));
  EXPECT_EQ(JobPhase::kRunning, phase());
  cluster.planner->read([&](const JobBook& book) {
    const BookJob* job = book.job("lab/big");
    EXPECT_EQ(0u, job->member_nodes.count(pod_key(members[0].pod)));
    EXPECT_EQ("g2b", job->member_nodes.at(pod_key(again[0].pod)));
    EXPECT_EQ("g4", job->member_nodes.at(pod_key(again[1].pod)));
  });
}

// The watch may see some members bound before the gather records the gang's start: those
// bindings belong to that run alone. A later run of the job (its pods made again under the same
// names) starts once the watch has seen each of its own members bound, on their own nodes.
TEST(PlannerGangsTest, AMemberSeenBoundInAnEarlierRunCountsForNoLaterRun) {
  Cluster cluster;
  std::vector<JobVariant> members = cluster.add_gang("big", 2, 2);
  auto phase = [&] {
    return cluster.planner->read(
        [](const JobBook& book) { return book.job("lab/big")->record.phase; });
  };
  EXPECT_EQ(std::nullopt, cluster.planner->gang_member_bound(members[0], "g2a"));
  const std::map<std::string, std::string> first = {{pod_key(members[0].pod), "g2a"},
                                                    {pod_key(members[1].pod), "g2b"}};
  ASSERT_TRUE(cluster.planner->record_gang_start("lab/big", first, "gpu").ok());
  for (const JobVariant& member : members) {
    ASSERT_TRUE(cluster.planner->gang_member_ended(member).ok());
  }
  ASSERT_EQ(JobPhase::kDone, phase());
  std::vector<JobVariant> again;
  for (JobVariant member : members) {  // the same names, new UIDs: a new run
    member.pod.uid += "-again";
    ASSERT_TRUE(cluster.planner->register_variant(member).ok());
    again.push_back(member);
  }
  ASSERT_EQ(JobPhase::kQueued, phase());
  EXPECT_EQ(std::nullopt, cluster.planner->gang_member_bound(again[1], "g4"));
  EXPECT_EQ(JobPhase::kQueued, phase()) << "one member of this run seen bound, of two";
  EXPECT_EQ(std::nullopt, cluster.planner->gang_member_bound(again[0], "g4"));
  EXPECT_EQ(JobPhase::kRunning, phase());
  cluster.planner->read([&](const JobBook& book) {
    const std::map<std::string, std::string> second = {{pod_key(again[0].pod), "g4"},
                                                       {pod_key(again[1].pod), "g4"}};
    EXPECT_EQ(second, book.job("lab/big")->member_nodes);
  });
}

// alloxd restarted between a gang's release and its binds: the admission is gone, its members
// are pinned. Adopted on its pinned nodes (not where a fresh first fit would put it), it keeps
// them in every plan and its hold starts again; unbound past the hold, it is lapsed.
TEST(PlannerGangsTest, AGangReleasedBeforeARestartIsAdoptedOnItsPinnedNodes) {
  Cluster cluster;
  cluster.add_gang("big", 2, 2);
  const PlannedStart first = cluster.plan()->starts.at("lab/big");
  ASSERT_TRUE(cluster.planner->admit("lab/big", first.members.front().pod, first).ok());
  *cluster.steady += std::chrono::seconds(50);
  cluster.restart();
  EXPECT_FALSE(cluster.planner->admitted_as("lab/big")) << "admissions live in memory";
  // Pinned the other way round from the first fit (g2a, g2b).
  const std::map<std::string, std::string> pins = {{"lab/big-0", "g4"}, {"lab/big-1", "g2b"}};
  ASSERT_TRUE(cluster.planner->adopt_gang("lab/big", pins).ok());
  EXPECT_EQ("lab/big-0", cluster.planner->admitted_as("lab/big"));
  cluster.add("late", "late", 2, 1);  // must not take the adopted gang's units
  std::shared_ptr<const Plan> plan = cluster.plan();
  ASSERT_EQ(1u, plan->starts.count("lab/big"));
  std::map<std::string, std::string> planned;
  for (const GangPlacement& m : plan->starts.at("lab/big").members) planned[m.pod] = m.node;
  EXPECT_EQ(pins, planned);
  ASSERT_EQ(1u, plan->starts.count("lab/late"));
  EXPECT_NE("g2b", plan->starts.at("lab/late").node);
  for (const auto& [node, units] : planned_units(*plan, cluster.held())) {
    EXPECT_LE(units, kNodeUnits.at(node)) << node;
  }
  // The hold runs from the adoption, not from the admission before the restart.
  *cluster.steady += std::chrono::seconds(30);
  EXPECT_TRUE(cluster.planner->lapsed_gangs().empty());
  *cluster.steady += std::chrono::seconds(31);
  EXPECT_EQ(std::vector<std::string>{"lab/big"}, cluster.planner->lapsed_gangs());
}

TEST(PlannerGangsTest, AGangWhosePinnedNodesNoLongerHoldItIsNotAdopted) {
  Cluster cluster;
  cluster.add_gang("big", 2, 2);
  JobVariant other = cluster.add("other", "other", 2, 1);
  ASSERT_TRUE(cluster.planner->record_start(other, "g2b", -1).ok());
  Status adopted =
      cluster.planner->adopt_gang("lab/big", {{"lab/big-0", "g2a"}, {"lab/big-1", "g2b"}});
  ASSERT_FALSE(adopted.ok());
  EXPECT_EQ("its pinned nodes no longer hold it: g2b has 0 of 2 gpu free", adopted.message());
  EXPECT_FALSE(cluster.planner->admitted_as("lab/big"));
  EXPECT_FALSE(cluster.planner->adopt_gang("lab/big", {{"lab/big-0", "g4"}}).ok())
      << "every member must be pinned";
  // Two members on g4's 4 GPUs fit.
  EXPECT_TRUE(
      cluster.planner->adopt_gang("lab/big", {{"lab/big-0", "g4"}, {"lab/big-1", "g4"}}).ok());
}

// Each member waiting at /bind holds one of the blocking pool's 16 threads: a gang of more could
// never bind whole, so it is parked (naming the annotation), whatever the inventory.
TEST(PlannerGangsTest, AGangOfMoreMembersThanBindGathersIsParkedNamingTheAnnotation) {
  Cluster cluster;
  cluster.add_gang("huge", kMaxGangBoundTogether + 1, 1);
  cluster.add_gang("most", kMaxGangBoundTogether, 1);
  std::shared_ptr<const Plan> plan = cluster.plan();
  ASSERT_EQ(1u, plan->parked.count("lab/huge"));
  EXPECT_EQ("gang of 17 members: alloxd binds at most 16 together (allox.io/gang-size: \"17\")",
            plan->parked.at("lab/huge"));
  ASSERT_EQ(1u, plan->parked.count("lab/most"));
  EXPECT_NE(std::string::npos, plan->parked.at("lab/most").find("no inventory can hold"))
      << "16 members gather; only the 8 GPUs keep it out: " << plan->parked.at("lab/most");
}

}  // namespace
}  // namespace allox::extender
