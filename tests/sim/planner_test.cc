#include "sim/planner.h"

#include <gtest/gtest.h>

#include "fairness/policy.h"

namespace allox {
namespace {

Workload two_jobs_one_gpu() {
  Workload w;
  w.users = {{"alice", 1}, {"bob", 1}};
  w.jobs = {Job{"a", "alice", 0, {{"gpu", 10}}, std::nullopt, ""},
            Job{"b", "bob", 0, {{"gpu", 20}}, std::nullopt, ""}};
  return w;
}

TEST(Planner, ParsesAlternatives) {
  auto one = parse_alternative("gpu=4");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->add, (std::map<DeviceType, int>{{"gpu", 4}}));
  auto two = parse_alternative("gpu=4,cpu=8");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->add, (std::map<DeviceType, int>{{"cpu", 8}, {"gpu", 4}}));
  for (const char* bad : {"gpu", "gpu=0", "=3", "gpu=x", "gpu=2x", ""}) {
    EXPECT_FALSE(parse_alternative(bad).ok()) << bad;
  }
}

// One GPU: a (10) then b (20): avg JCT 20, makespan 30. A second GPU runs both at once:
// avg 15, makespan 20, and alice's last finish stays 10.
TEST(Planner, AddingAGpuRunsBothJobsAtOnce) {
  Cluster c;
  c.machines = {{"gpu-0", "gpu", 0}};
  auto scenarios = plan(two_jobs_one_gpu(), c, {*parse_alternative("gpu=1")});
  ASSERT_TRUE(scenarios.ok()) << scenarios.message();
  ASSERT_EQ(scenarios->size(), 2u);
  const PlanScenario& base = (*scenarios)[0];
  const PlanScenario& more = (*scenarios)[1];
  EXPECT_EQ(base.name, "as is");
  EXPECT_DOUBLE_EQ(base.summary.avg_jct, 20);
  EXPECT_DOUBLE_EQ(base.summary.makespan, 30);
  EXPECT_EQ(more.cluster.machines.back().name, "gpu-added-0");
  EXPECT_DOUBLE_EQ(more.summary.avg_jct, 15);
  EXPECT_DOUBLE_EQ(more.summary.makespan, 20);
  EXPECT_DOUBLE_EQ(more.summary.per_user[0].last_finish, 10);
  EXPECT_DOUBLE_EQ(more.summary.per_user[1].last_finish, 20);
}

TEST(Planner, BusyMachineAndMissingDevice) {
  Cluster c;
  c.machines = {{"gpu-0", "gpu", 5}};
  auto scenarios = plan(two_jobs_one_gpu(), c, {});
  ASSERT_TRUE(scenarios.ok()) << scenarios.message();
  EXPECT_DOUBLE_EQ((*scenarios)[0].summary.makespan, 35);

  Cluster cpus;
  cpus.machines = {{"cpu-0", "cpu", 0}};
  auto none = plan(two_jobs_one_gpu(), cpus, {});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.message().find("job a can run on none"), std::string::npos) << none.message();
}

// A policy that never starts bob's jobs and starts alice's on the first idle machine.
class StarvesBob : public SchedulingPolicy {
 public:
  std::string name() const override { return "starves-bob"; }
  Expected<Decision> decide(const ClusterState& state) override {
    Decision d;
    std::vector<bool> idle = state.idle;
    for (const QueuedJob& q : state.queue) {
      if (q.job->user == "bob") continue;
      for (std::size_t m = 0; m < idle.size(); ++m) {
        if (!idle[m]) continue;
        idle[m] = false;
        d.start.push_back({q.job->id, m});
        break;
      }
    }
    return d;
  }
};

// A policy that leaves jobs queued to the end is a valid answer, but the plan says so: the jobs
// are listed, the figures count only those that finished, and bob has no last finish.
TEST(Planner, JobsThePolicyNeverStartsAreListedAndLeftOutOfTheFigures) {
  Workload w = two_jobs_one_gpu();
  w.jobs.push_back(Job{"b2", "bob", 0, {{"gpu", 30}}, std::nullopt, ""});
  Cluster c;
  c.machines = {{"gpu-0", "gpu", 0}};
  PlanOptions options;
  options.policy = "starves-bob";
  options.make_policy = [] { return std::make_unique<StarvesBob>(); };
  auto scenarios = plan(w, c, {}, options);
  ASSERT_TRUE(scenarios.ok()) << scenarios.message();
  const PlanScenario& s = scenarios->front();
  ASSERT_EQ(s.unfinished, (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(s.summary.completed, 1u);
  EXPECT_DOUBLE_EQ(s.summary.avg_jct, 10);
  EXPECT_DOUBLE_EQ(s.summary.makespan, 10);
  EXPECT_EQ(unfinished_state(s), "never started");
  EXPECT_EQ(unfinished_state(s, "alice"), "");
  EXPECT_EQ(unfinished_state(s, "bob"), "never started");
  EXPECT_EQ(unfinished_note(s, "starves-bob"),
            "scenario 'as is': 2 of 3 jobs never started under starves-bob (b, b2); its avg JCT, "
            "makespan and last finishes count only the 1 that finished");

  auto fine = plan(two_jobs_one_gpu(), c, {});
  ASSERT_TRUE(fine.ok()) << fine.message();
  EXPECT_TRUE(fine->front().unfinished.empty());
  EXPECT_EQ(unfinished_note(fine->front(), "allox"), "");
}

}  // namespace
}  // namespace allox
