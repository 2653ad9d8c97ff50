#include <gtest/gtest.h>

#include "decide.h"

namespace allox {
namespace {

using testing::decide_once;
using testing::starts;
using testing::StateBuilder;
using Starts = std::vector<std::string>;

TEST(EqualSharePolicyTest, StaticWeightedPartitionLeavesOtherUsersMachinesIdle) {
  StateBuilder b;
  b.machine("gpu-0", "gpu").machine("gpu-1", "gpu").machine("gpu-2", "gpu").machine("gpu-3", "gpu");
  b.machine("cpu-0", "cpu").machine("cpu-1", "cpu");
  b.user("carol", 2);  // known, weight 2, nothing queued
  b.queued("a1", "alice", 0, {{"gpu", 5}, {"cpu", 10}});
  b.queued("a2", "alice", 0, {{"gpu", 6}, {"cpu", 7}});
  b.queued("a3", "alice", 0, {{"gpu", 1}});
  b.queued("b1", "bob", 0, {{"gpu", 8}, {"cpu", 9}});
  b.queued("b2", "bob", 0, {{"gpu", 2}, {"cpu", 3}});
  // Weights 1:1:2 of 4 GPUs: alice 1, bob 1, carol 2. Of 2 CPU nodes: exact 0.5, 0.5, 1; the
  // leftover node goes to the larger fraction, alice before bob by name: alice 1, bob 0, carol 1.
  // es: alice's pairs shortest first: a3 on a GPU (1); her GPU is then used, and her CPU node
  // goes to her job shortest on CPU: a2 (7, against a1's 10). bob's b2 (2) takes his GPU. carol's
  // GPUs stay idle. bob's CPU part rounds to none, so once every part is served he may hold one
  // CPU node left idle: b1 takes it.
  EXPECT_EQ((Starts{"a3@gpu-0", "a2@cpu-0", "b2@gpu-1", "b1@cpu-1"}),
            starts(decide_once("es", b), b.state()));
  // es-fastest: all jobs shortest-on-fastest first: a3 (1), b2 (2), a1 (5) finds alice's GPU
  // used and takes her CPU node (10 s, where a2 would need 7); then b1 the idle CPU node.
  EXPECT_EQ((Starts{"a3@gpu-0", "b2@gpu-1", "a1@cpu-0", "b1@cpu-1"}),
            starts(decide_once("es-fastest", b), b.state()));
}

// Three users, two machines: the parts are 1, 1 and 0 (the leftovers by name). The user whose
// part rounds to none waits while the others use theirs, then runs one job at a time on a
// machine no part wants, in every pick; a user with a part still gets its own first.
TEST(EqualSharePolicyTest, AUserWhosePartRoundsToNoMachineRunsOnMachinesNoPartWants) {
  PolicyOptions head;
  head.es_pick = EsPick::kHeadOnFastest;
  for (const char* policy : {"es", "es-fastest"}) {
    for (const PolicyOptions& options : {PolicyOptions{}, head}) {
      StateBuilder busy;
      busy.machine("g0", "v100").machine("g1", "v100");
      busy.user("u0", 1).user("u1", 1).user("u2", 1);
      busy.running("r0", "u0", "g0", 0, {{"v100", 100}});
      busy.running("r1", "u1", "g1", 0, {{"v100", 100}});
      busy.queued("c1", "u2", 0, {{"v100", 100}});
      EXPECT_EQ(Starts{}, starts(decide_once(policy, busy, options), busy.state())) << policy;

      StateBuilder freed(100);
      freed.machine("g0", "v100").machine("g1", "v100");
      freed.user("u0", 1).user("u1", 1).user("u2", 1);
      freed.queued("c1", "u2", 0, {{"v100", 100}});
      freed.queued("c2", "u2", 0, {{"v100", 100}});
      EXPECT_EQ(Starts{"c1@g0"}, starts(decide_once(policy, freed, options), freed.state()))
          << policy;

      StateBuilder both(100);
      both.machine("g0", "v100").machine("g1", "v100");
      both.user("u0", 1).user("u1", 1).user("u2", 1);
      both.queued("c1", "u2", 0, {{"v100", 100}});
      both.queued("a1", "u0", 50, {{"v100", 100}});
      both.queued("a2", "u0", 50, {{"v100", 100}});
      EXPECT_EQ((Starts{"a1@g0", "c1@g1"}),
                starts(decide_once(policy, both, options), both.state()))
          << policy;
    }
  }
}

TEST(EqualSharePolicyTest, FreedResourceGoesToTheUsersJobShortestOnThatResource) {
  StateBuilder b;
  b.machine("gpu-0", "gpu").machine("gpu-1", "gpu").machine("cpu-0", "cpu").machine("cpu-1", "cpu");
  b.user("bob", 1);  // one GPU and one CPU node each
  b.running("r", "alice", "gpu-0", 0, {{"gpu", 100}});
  b.queued("x", "alice", 0, {{"gpu", 1}, {"cpu", 50}});
  b.queued("y", "alice", 0, {{"gpu", 20}, {"cpu", 30}});
  // Only alice's CPU node is free to her: y is shortest on CPU (30 < 50). gpu-1 is bob's.
  EXPECT_EQ((Starts{"y@cpu-0"}), starts(decide_once("es", b), b.state()));
  // es-fastest sends x, the shortest job on its fastest device, to the CPU node at 50x its GPU
  // time: the behaviour the paper's es rule avoids.
  EXPECT_EQ((Starts{"x@cpu-0"}), starts(decide_once("es-fastest", b), b.state()));
}

TEST(EqualSharePolicyTest, HeadPickRunsEachUsersHeadOnItsFastestTypeOnlyAndBlocksBehindIt) {
  StateBuilder b;
  b.machine("gpu-0", "gpu").machine("gpu-1", "gpu").machine("cpu-0", "cpu").machine("cpu-1", "cpu");
  b.user("bob", 1);  // one GPU and one CPU node each
  b.running("r", "alice", "gpu-0", 0, {{"gpu", 100}});
  b.queued("x", "alice", 0, {{"gpu", 1}, {"cpu", 50}});
  b.queued("y", "alice", 0, {{"gpu", 20}, {"cpu", 30}});
  b.queued("z", "alice", 0, {{"gpu", 40}, {"cpu", 4}});
  PolicyOptions head;
  head.es_pick = EsPick::kHeadOnFastest;
  // alice's order: x (1 on GPU), z (4 on CPU), y (20 on GPU). x may only run on a GPU and hers
  // is busy: her free CPU node stays idle although z would run there fastest (head-of-line).
  EXPECT_EQ(Starts{}, starts(decide_once("es", b, head), b.state()));
  // The paper's rule gives the CPU node to her job shortest there.
  EXPECT_EQ((Starts{"z@cpu-0"}), starts(decide_once("es", b), b.state()));
}

TEST(EqualSharePolicyTest, HeadPickStartsHeadsInOrderWhileTheirTypesAreFree) {
  StateBuilder b;
  b.machine("gpu-0", "gpu").machine("gpu-1", "gpu").machine("cpu-0", "cpu").machine("cpu-1", "cpu");
  b.queued("a", "alice", 0, {{"gpu", 3}, {"cpu", 9}});
  b.queued("b", "alice", 1, {{"gpu", 8}, {"cpu", 2}});
  b.queued("c", "alice", 2, {{"gpu", 5}, {"cpu", 6}});
  b.queued("d", "alice", 3, {{"gpu", 7}, {"cpu", 7.5}});
  PolicyOptions head;
  head.es_pick = EsPick::kHeadOnFastest;
  // alice alone holds every machine. Order by fastest time: b (2, CPU), a (3, GPU), c (5, GPU),
  // d (7, GPU): b and a start, c takes the second GPU, d finds no GPU and waits (a CPU node is
  // free, but d's fastest type is the GPU).
  EXPECT_EQ((Starts{"b@cpu-0", "a@gpu-0", "c@gpu-1"}),
            starts(decide_once("es", b, head), b.state()));
}

}  // namespace
}  // namespace allox
