// fifo, sjf, drf and drf-ext on small instances whose decisions are worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

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
  // bob tie at 1/2, alice's oldest job waited longer; her shortest job a2 wants a GPU, none is
  // idle: DRF stops with both CPU nodes idle.
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

TEST(DrfPolicyTest, DominantShareIsTheLargestTypeShareNotTheirSum) {
  // 4 GPUs and 6 CPU nodes. alice holds gpu-0 and cpu-0: max(1/4, 1/6) = 1/4 (a sum would give
  // 5/12); bob holds cpu-1 and cpu-2: 2/6 = 1/3; carol holds gpu-2 and gpu-3 and queues nothing.
  // alice (1/4) goes first: a1 takes the only idle GPU, her share becomes max(2/4, 1/6) = 1/2;
  // bob (1/3) is next and his b1 wants a GPU: none is idle, the round stops. Summed shares would
  // have let bob (1/3 < 5/12) take gpu-1 first.
  StateBuilder b(10);
  for (const char* gpu : {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}) b.machine(gpu, "gpu");
  for (const char* cpu : {"cpu-0", "cpu-1", "cpu-2", "cpu-3", "cpu-4", "cpu-5"}) {
    b.machine(cpu, "cpu");
  }
  b.running("ra", "alice", "gpu-0", 0, {{"gpu", 10}, {"cpu", 20}});
  b.running("rb", "alice", "cpu-0", 0, {{"gpu", 10}, {"cpu", 20}});
  b.running("rc", "bob", "cpu-1", 0, {{"gpu", 10}, {"cpu", 20}});
  b.running("rd", "bob", "cpu-2", 0, {{"gpu", 10}, {"cpu", 20}});
  b.running("re", "carol", "gpu-2", 0, {{"gpu", 10}, {"cpu", 20}});
  b.running("rf", "carol", "gpu-3", 0, {{"gpu", 10}, {"cpu", 20}});
  b.queued("b1", "bob", 1, {{"gpu", 10}, {"cpu", 20}});
  b.queued("a1", "alice", 2, {{"gpu", 10}, {"cpu", 20}});
  EXPECT_EQ((Starts{"a1@gpu-1"}), decide("drf", b));
}

TEST(DrfExtFastestPolicyTest, LeastShareUserTakesTheFasterFreeDevice) {
  StateBuilder b = two_users();
  // L: alice 1/2 (a GPU), bob 0. bob's b1 takes gpu-1 (L_bob = 1/2 * 4/4 = 1/2). Tie, alice's
  // oldest job waited longer: a2's faster free device is now a CPU node (50 s), L_alice += 1/2 *
  // 5/50 = 0.05. bob (1/2 < 0.55): b2 takes the last CPU node.
  EXPECT_EQ((Starts{"b1@gpu-1", "a2@cpu-0", "b2@cpu-1"}), decide("drf-ext-fastest", b));
}

// drf-ext by the paper. Jobs seen: r (cpu/gpu 3), a1 (5), b1 (1), b2 (7): beta = 4. CPU is the
// slower type on average, so capacity = 4 CPU nodes + 2 GPUs x 4 = 12 CPU units.
TEST(DrfExtPolicyTest, GpuShortestJobTakesTheFreeGpuElseCpuShortestTakesACpuNode) {
  StateBuilder b(10);
  b.machine("gpu-0", "gpu").machine("gpu-1", "gpu");
  b.machine("cpu-0", "cpu").machine("cpu-1", "cpu").machine("cpu-2", "cpu").machine("cpu-3", "cpu");
  b.running("r", "alice", "gpu-0", 0, {{"gpu", 10}, {"cpu", 30}});  // alice: 4/12
  b.queued("a1", "alice", 1, {{"gpu", 4}, {"cpu", 20}});
  b.queued("b1", "bob", 3, {{"gpu", 8}, {"cpu", 8}});
  b.queued("b2", "bob", 4, {{"gpu", 2}, {"cpu", 14}});
  // bob (0): his job shortest on GPU, b2, takes gpu-1 (bob 4/12). Tie at 4/12: alice's a1 has
  // waited longer. No GPU is free: her job shortest on CPU, a1, takes cpu-0 (alice 5/12). bob
  // (4/12): b1 on cpu-1.
  EXPECT_EQ((Starts{"b2@gpu-1", "a1@cpu-0", "b1@cpu-1"}), decide("drf-ext", b));
}

// One GPU free, one job queued per user; alice runs three CPU jobs, bob one GPU job. Every job
// has p = {gpu: 1, cpu: ratio}, so beta = ratio: with beta = 2 alice holds 3/8 and bob 2/8; with
// beta = 6 alice 3/16 and bob 6/16. The least-share user's job takes the GPU.
TEST(DrfExtPolicyTest, OneAverageSpeedUpConvertsGpusToCpus) {
  for (double ratio : {2.0, 6.0}) {
    StateBuilder b(10);
    b.machine("gpu-0", "gpu").machine("gpu-1", "gpu");
    b.machine("cpu-0", "cpu")
        .machine("cpu-1", "cpu")
        .machine("cpu-2", "cpu")
        .machine("cpu-3", "cpu");
    const std::map<DeviceType, double> p = {{"gpu", 1}, {"cpu", ratio}};
    for (int i = 0; i < 3; ++i) {
      b.running("ra" + std::to_string(i), "alice", "cpu-" + std::to_string(i), 0, p);
    }
    b.running("rb", "bob", "gpu-0", 0, p);
    b.queued("a1", "alice", 0, p);
    b.queued("b1", "bob", 0, p);
    const Starts want =
        ratio == 2.0 ? Starts{"b1@gpu-1", "a1@cpu-3"} : Starts{"a1@gpu-1", "b1@cpu-3"};
    EXPECT_EQ(want, decide("drf-ext", b)) << "beta " << ratio;
  }
}

TEST(DrfFifoPolicyTest, ArrivalOrderPerUserOnGpusWithHeadOfLineBlocking) {
  StateBuilder b(10);
  b.machine("gpu-0", "gpu").machine("gpu-1", "gpu").machine("cpu-0", "cpu");
  b.queued("a1", "alice", 0, {{"gpu", 50}, {"cpu", 1}});
  b.queued("a2", "alice", 1, {{"gpu", 1}});
  b.queued("b2", "bob", 3, {{"gpu", 2}});
  b.queued("b1", "bob", 2, {{"gpu", 5}, {"cpu", 5}});
  // Tie at 0: alice's oldest job waited longer. Her first job a1 goes to a GPU although it is
  // 50x faster on the CPU node (no profiling, every job on its GPU variant). bob's first, b1,
  // takes gpu-1. alice (1/2) ties bob (1/2) again and wins; a2 needs a GPU: none is left, stop.
  EXPECT_EQ((Starts{"a1@gpu-0", "b1@gpu-1"}), decide("drffifo", b));
  auto made = make_policy("drffifo", PolicyOptions{});
  ASSERT_TRUE(made.ok());
  EXPECT_FALSE((*made)->uses_estimates());
}

TEST(DrfFifoPolicyTest, OnGpuModelsEachJobRunsOnItsFastestModelTheClusterHas) {
  StateBuilder b(10);
  b.machine("v100-0", "v100").machine("k80-0", "k80").machine("cpu-0", "cpu");
  // a: v100 fastest, k80 first by name: it takes the v100. c: CPU fastest, but its GPU variant
  // (k80) is a GPU model. d: fastest on p100, which the cluster lacks: the next model, k80,
  // which c already took, so d waits (head-of-line) rather than on a p100 that never comes.
  b.queued("a", "alice", 0, {{"v100", 10}, {"k80", 40}});
  b.queued("c", "carol", 1, {{"k80", 30}, {"cpu", 5}});
  b.queued("d", "dave", 2, {{"p100", 1}, {"k80", 20}, {"cpu", 90}});
  EXPECT_EQ((Starts{"a@v100-0", "c@k80-0"}), decide("drffifo", b));

  // Alone, d runs on the k80: never on the p100 no machine has.
  StateBuilder alone(10);
  alone.machine("k80-0", "k80").machine("cpu-0", "cpu");
  alone.queued("d", "dave", 2, {{"p100", 1}, {"k80", 20}, {"cpu", 90}});
  alone.queued("e", "erin", 3, {{"p100", 1}, {"cpu", 2}});
  EXPECT_EQ((Starts{"d@k80-0", "e@cpu-0"}), decide("drffifo", alone));
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
  options.starvation_bound = std::nan("");
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
