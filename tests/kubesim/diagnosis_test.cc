// kubesim/diagnosis.h: kube-scheduler v1.28's FitError text and the merging of
// extenders' FailedNodes maps, checked against messages a real v1.28.7 printed
// (data/kube-extender/real-v1.28/scheduler-log-excerpts.txt).
#include "kubesim/diagnosis.h"

#include <gtest/gtest.h>

namespace allox::emulator {
namespace {

TEST(DiagnosisTest, TheHistogramIsSortedAsStringsLikeTheRealScheduler) {
  // The real message, 3 nodes: one lacks cpu and GPUs, one lacks GPUs, alloxd queued the third
  // after the in-tree filters passed it (two GPUs short on the other nodes).
  Diagnosis d;
  d.add("Insufficient nvidia.com/gpu", 2);
  d.add("Insufficient cpu");
  extender::NodeReasons failed{{"node-a", "queued: position 1 of 1, est. start in 560s"}};
  d.add_extender_failures(failed, {});
  EXPECT_EQ(
      "0/3 nodes are available: 1 Insufficient cpu, 1 queued: position 1 of 1, est. start in "
      "560s, 2 Insufficient nvidia.com/gpu.",
      d.message(3));
  // "sort.Strings" on "count reason": "10 ..." sorts before "2 ...".
  Diagnosis many;
  many.add("b", 2);
  many.add("a", 10);
  EXPECT_EQ("0/12 nodes are available: 10 a, 2 b.", many.message(12));
}

TEST(DiagnosisTest, ThePreemptionMessageFollowsWithItsOwnPeriod) {
  Diagnosis d;
  d.add("Insufficient nvidia.com/gpu", 3);
  d.add("Insufficient cpu");
  Diagnosis preemption;
  preemption.add("No preemption victims found for incoming pod", 3);
  EXPECT_EQ(
      "0/3 nodes are available: 1 Insufficient cpu, 3 Insufficient nvidia.com/gpu. preemption: "
      "0/3 nodes are available: 3 No preemption victims found for incoming pod..",
      d.message(3, "preemption: " + preemption.message(3)));
  EXPECT_EQ("0/2 nodes are available:", Diagnosis().message(2));
}

TEST(DiagnosisTest, AnAnswerIsAGoMapAndUnresolvableTakesPrecedence) {
  Diagnosis d;
  // Out of byte order and node-b twice: a Go map keeps node-b once, with its last reason.
  extender::NodeReasons failed{{"node-c", "queued"},
                               {"node-b", "busy"},
                               {"node-b", "queued"},
                               {"node-a", "queued"},
                               {"node-d", "busy"}};
  extender::NodeReasons unresolvable{{"node-d", "gone"}};
  d.add_extender_failures(failed, unresolvable);
  EXPECT_EQ(3u, d.nodes_with("queued"));
  EXPECT_EQ(0u, d.nodes_with("busy"));  // node-b's last reason is queued; node-d unresolvable
  EXPECT_EQ(1u, d.nodes_with("gone"));
  EXPECT_TRUE(d.unresolvable("node-d"));
  EXPECT_FALSE(d.unresolvable("node-a"));
  EXPECT_EQ("0/4 nodes are available: 1 gone, 3 queued.", d.message(4));
}

TEST(DiagnosisTest, ANodeRejectedTwiceCountsUnderBothReasons) {
  // kube-scheduler appends an extender's reason to a node's status: both are counted.
  Diagnosis d;
  d.add("Insufficient cpu");
  d.add_extender_failures(extender::NodeReasons{{"node-a", "queued"}}, {});
  d.add_extender_failures(extender::NodeReasons{{"node-a", "queued"}}, {});
  EXPECT_EQ("0/1 nodes are available: 1 Insufficient cpu, 2 queued.", d.message(1));
  EXPECT_FALSE(d.empty());
  EXPECT_TRUE(Diagnosis().empty());
}

}  // namespace
}  // namespace allox::emulator
