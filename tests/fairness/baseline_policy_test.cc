// fifo, sjf, drf and drf-ext on small instances whose decisions are worked out by hand.
#include <gtest/gtest.h>

#include "fairness/policy.h"
#include "state_builder.h"

namespace allox {
namespace {

using testing::starts;
using testing::StateBuilder;
using Starts = std::vector<std::string>;

Starts decide(const std::string& policy, StateBuilder& b) {
  auto made = make_policy(policy, PolicyOptions{});
  EXPECT_TRUE(made.ok()) << made.message();
  auto decision = (*made)->decide(b.state());
  EXPECT_TRUE(decision.ok()) << decision.message();
  EXPECT_TRUE(decision->preempt.empty());
  return starts(*decision, b.state());
}

// One GPU, two CPU nodes, all idle; four jobs arriving in order.
StateBuilder single_user_queue() {
  StateBuilder b(10);
  b.machine("gpu-0", "gpu").machine("cpu-0", "cpu").machine("cpu-1", "cpu");
  b.queued("j1", "u", 0, {{"gpu", 10}, {"cpu", 30}});
  b.queued("j2", "u", 1, {{"gpu", 5}, {"cpu", 6}});
  b.queued("j3", "u", 2, {{"cpu", 50}});
  b.queued("j4", "u", 3, {{"gpu", 1}, {"cpu", 2}});
  return b;
}

TEST(FifoPolicyTest, ArrivalOrderEachOnItsFastestIdleMachine) {
  StateBuilder b = single_user_queue();
  // j1 takes the GPU; j2's GPU is gone so it takes a CPU (6 s); j3 the other CPU; j4 waits.
  EXPECT_EQ((Starts{"j1@gpu-0", "j2@cpu-0", "j3@cpu-1"}), decide("fifo", b));
}

TEST(FifoPolicyTest, JobThatFitsNoIdleMachineDoesNotBlockTheQueue) {
  StateBuilder b(10);
  b.machine("gpu-0", "gpu").machine("cpu-0", "cpu");
  b.running("r", "u", "cpu-0", 0, {{"cpu", 100}});
  b.queued("cpu-only", "u", 0, {{"cpu", 5}});
  b.queued("later", "u", 5, {{"gpu", 9}, {"cpu", 1}});
  EXPECT_EQ((Starts{"later@gpu-0"}), decide("fifo", b));
}

TEST(SjfPolicyTest, GloballyShortestJobDevicePairFirst) {
  StateBuilder b = single_user_queue();
  // Pairs by time: j4/gpu 1, j4/cpu 2, j2/gpu 5, j2/cpu 6, j1/gpu 10, j1/cpu 30, j3/cpu 50.
  // j4 takes the GPU, j2 then a CPU, j1 the last CPU (30 s beats j3's 50 s).
  EXPECT_EQ((Starts{"j4@gpu-0", "j2@cpu-0", "j1@cpu-1"}), decide("sjf", b));
}

TEST(SjfPolicyTest, UsesRemainingTimeOfAPreemptedJob) {
  StateBuilder b(10);
  b.machine("gpu-0", "gpu");
  b.queued("fresh", "u", 0, {{"gpu", 10}});
  b.queued("resumed", "u", 0, {{"gpu", 100}});
  b.state().queue[1].remaining = {{"gpu", 4}};
  EXPECT_EQ((Starts{"resumed@gpu-0"}), decide("sjf", b));
}

// Two GPUs and two CPU nodes; alice already runs a job on gpu-0.
StateBuilder two_users() {
  StateBuilder b(10);
  b.machine("gpu-0", "gpu").machine("gpu-1", "gpu").machine("cpu-0", "cpu").machine("cpu-1", "cpu");
  b.running("r", "alice", "gpu-0", 0, {{"gpu", 10}, {"cpu", 20}});
  b.queued("a1", "alice", 1, {{"gpu", 10}, {"cpu", 20}});
  b.queued("a2", "alice", 2, {{"gpu", 5}, {"cpu", 50}});
  b.queued("b1", "bob", 3, {{"gpu", 4}, {"cpu", 8}});
  b.queued("b2", "bob", 4, {{"gpu", 30}, {"cpu", 12}});
  return b;
}

TEST(DrfPolicyTest, LeastDominantShareFirstAndHeadOfLineBlocking) {
  StateBuilder b = two_users();
  // bob (share 0) goes first: his shortest job b1 (4 s on GPU) takes gpu-1, share 1/2. alice and
  // bob tie at 1/2, alice wins by name; her shortest job a2 wants a GPU, none is idle: DRF stops
  // with both CPU nodes idle.
  EXPECT_EQ((Starts{"b1@gpu-1"}), decide("drf", b));
}

TEST(DrfPolicyTest, WeightDividesDominantShare) {
  StateBuilder b = two_users();
  b.user("alice", 4);                                  // alice's share 1/2 / 4 = 1/8
  b.state().queue.erase(b.state().queue.begin() + 1);  // drop a2: alice's head is a1 (GPU)
  // bob (0) takes gpu-1 with b1 (share 1/2); alice (1/8) next: a1 wants a GPU, none left: stop.
  EXPECT_EQ((Starts{"b1@gpu-1"}), decide("drf", b));
  b.state().queue.erase(b.state().queue.begin() + 1);  // drop b1 too: bob's head is b2 (CPU)
  // bob (0): b2 to a CPU node (share 1/2); alice (1/8): a1 to gpu-1 (share (1/2+1/2)/4 = 1/4);
  // alice again (1/4 < 1/2): no alice jobs left; bob has none left either.
  EXPECT_EQ((Starts{"b2@cpu-0", "a1@gpu-1"}), decide("drf", b));
}

TEST(DrfExtPolicyTest, LeastShareUserTakesTheFasterFreeDevice) {
  StateBuilder b = two_users();
  // L: alice 1/2 (a GPU), bob 0. bob's b1 takes gpu-1 (L_bob = 1/2 * 4/4 = 1/2). Tie, alice by
  // name: a2's faster free device is now a CPU node (50 s), L_alice += 1/2 * 5/50 = 0.05.
  // bob (1/2 < 0.55): b2 takes the last CPU node.
  EXPECT_EQ((Starts{"b1@gpu-1", "a2@cpu-0", "b2@cpu-1"}), decide("drf-ext", b));
}

TEST(MakePolicyTest, UnknownNamesAndBadOptionsAreErrorsNamingTheField) {
  auto unknown = make_policy("lottery", PolicyOptions{});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(std::string::npos, unknown.message().find("lottery"));
  EXPECT_NE(std::string::npos, unknown.message().find("fifo"));
  for (double alpha : {0.0, -0.5, 1.5}) {
    PolicyOptions options;
    options.alpha = alpha;
    auto made = make_policy("fifo", options);
    ASSERT_FALSE(made.ok()) << alpha;
    EXPECT_NE(std::string::npos, made.message().find("alpha")) << made.message();
  }
  PolicyOptions options;
  options.starvation_bound = 0;
  EXPECT_NE(std::string::npos, make_policy("fifo", options).message().find("starvation_bound"));
}

TEST(MakePolicyTest, EveryListedNameMakesAPolicyOfThatName) {
  for (const std::string& name : policy_names()) {
    auto made = make_policy(name, PolicyOptions{});
    ASSERT_TRUE(made.ok()) << name << ": " << made.message();
    EXPECT_EQ(name, (*made)->name());
  }
}

}  // namespace
}  // namespace allox
