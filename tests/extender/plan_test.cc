// extender/plan.h: starts map to slots; waiting jobs get positions and estimated starts, the
// policy's where it gave them, else a list schedule onto machines as they free up.
#include "extender/plan.h"

#include <gtest/gtest.h>

namespace allox::extender {
namespace {

PlanInput two_machine_input() {
  PlanInput input;
  input.version = 7;
  ClusterState& s = input.state;
  s.now = 1000;
  s.machines = {{"n1/gpu-0", "gpu", 1100}, {"n2/cpu-0", "cpu", 1000}};
  s.idle = {false, true};
  for (auto [id, gpu, cpu] :
       {std::tuple{"a", 50.0, 400.0}, std::tuple{"b", 30.0, 300.0}, std::tuple{"c", 20.0, 0.0}}) {
    Job job;
    job.id = id;
    job.arrival = 900;
    job.time["gpu"] = gpu;
    if (cpu > 0) job.time["cpu"] = cpu;
    input.jobs.push_back(std::make_shared<const Job>(job));
  }
  for (const auto& job : input.jobs) s.queue.push_back({job.get(), 900, 0, {}});
  return input;
}

std::vector<MachineSlot> slots() {
  return {{"n1", "gpu", 0, "x"}, {"n2", "cpu", 0, ""}};
}

TEST(PlanTest, StartsMapToSlotsAndMissingEstimatesAreListScheduled) {
  PlanInput input = two_machine_input();
  Decision decision;
  decision.start = {{"a", 1}};  // a starts now on the CPU bundle, busy until 1400
  Plan plan = make_plan(input, decision, slots(), 0.001);
  EXPECT_EQ(7u, plan.version);
  ASSERT_EQ(1u, plan.starts.count("a"));
  EXPECT_EQ("n2", plan.starts.at("a").node);
  EXPECT_EQ("cpu", plan.starts.at("a").device);
  // In arrival-then-id order: b on the GPU at 1100 (done 1130), then c on the GPU at 1130.
  ASSERT_EQ(2u, plan.waiting.size());
  EXPECT_EQ(1, plan.waiting.at("b").position);
  EXPECT_DOUBLE_EQ(1100, plan.waiting.at("b").estimated_start.value());
  EXPECT_EQ(2, plan.waiting.at("c").position);
  EXPECT_DOUBLE_EQ(1130, plan.waiting.at("c").estimated_start.value());
  EXPECT_EQ(2, plan.waiting.at("c").queue_length);
}

TEST(PlanTest, PolicyEstimatesWinAndOrderPositions) {
  PlanInput input = two_machine_input();
  Decision decision;
  decision.estimated_start = {{"a", 2000}, {"b", 1500}, {"c", 1800}};
  Plan plan = make_plan(input, decision, slots(), 0);
  EXPECT_EQ(1, plan.waiting.at("b").position);
  EXPECT_EQ(2, plan.waiting.at("c").position);
  EXPECT_EQ(3, plan.waiting.at("a").position);
  EXPECT_DOUBLE_EQ(1800, plan.waiting.at("c").estimated_start.value());
}

TEST(PlanTest, PolicyErrorIsKept) {
  Plan plan = make_plan(two_machine_input(), Error{"matcher failed"}, slots(), 0);
  EXPECT_EQ("matcher failed", plan.error);
  EXPECT_TRUE(plan.starts.empty());
}

}  // namespace
}  // namespace allox::extender
