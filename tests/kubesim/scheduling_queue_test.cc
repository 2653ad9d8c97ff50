// kubesim/scheduling_queue.h on explicit simulated times: when a parked pod comes
// back, which events move it, gates, back-off, and the move-during-scheduling rule.
#include "kubesim/scheduling_queue.h"

#include <gtest/gtest.h>

namespace allox::emulator {
namespace {

TEST(SchedulingQueueTest, ExtenderRejectedPodWaitsForTheUnschedulableTimeout) {
  SchedulingQueue q;
  q.add("lab/a", 0, false, 0);
  ASSERT_EQ("lab/a", q.pop(0));
  q.unschedulable("lab/a", {}, 0);
  EXPECT_FALSE(q.pop(1));
  EXPECT_FALSE(q.pop(299));
  // Checked every 30 s: the first check at or after 300 s moves it.
  EXPECT_FALSE(q.pop(299.9));
  auto back = q.pop(300);
  ASSERT_TRUE(back);
  EXPECT_EQ("lab/a", *back);
  EXPECT_EQ(std::vector<std::string>{"lab/a"}, q.take_timed_out());
}

TEST(SchedulingQueueTest, OnlyEventsThatMayHelpMoveAParkedPod) {
  SchedulingQueue q;
  q.add("lab/fit", 0, false, 0);
  q.add("lab/cordoned", 0, false, 0);
  q.add("lab/extender", 0, false, 0);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(q.pop(0));
  q.unschedulable("lab/fit", {"NodeResourcesFit"}, 0);
  q.unschedulable("lab/cordoned", {"NodeUnschedulable"}, 0);
  q.unschedulable("lab/extender", {}, 0);
  auto moved = q.move_all(ClusterEvent::kAssignedPodDelete, 20);
  std::sort(moved.begin(), moved.end());
  EXPECT_EQ((std::vector<std::string>{"lab/extender", "lab/fit"}), moved);
  EXPECT_EQ(1u, q.unschedulable_count());
  EXPECT_EQ(std::vector<std::string>{"lab/cordoned"}, q.move_all(ClusterEvent::kNodeUpdate, 20));
}

TEST(SchedulingQueueTest, AnUpdateToTheParkedPodItselfRetriesIt) {
  SchedulingQueue q;
  q.add("lab/a", 0, false, 0);
  ASSERT_TRUE(q.pop(0));
  q.unschedulable("lab/a", {}, 0);
  EXPECT_TRUE(q.update("lab/a", 0, false, 5));  // an annotation patch
  EXPECT_EQ("lab/a", q.pop(5));
}

TEST(SchedulingQueueTest, BackoffDoublesToTenSeconds) {
  SchedulingQueue q;
  q.add("p", 0, false, 0);
  double now = 0;
  for (double backoff : {1.0, 2.0, 4.0, 8.0, 10.0, 10.0}) {
    ASSERT_TRUE(q.pop(now)) << backoff;
    q.failed("p", now);
    EXPECT_FALSE(q.pop(now + backoff - 0.01)) << backoff;
    now += backoff;
  }
  EXPECT_TRUE(q.pop(now));
}

TEST(SchedulingQueueTest, GatedPodsAreNeverPoppedUntilTheGateGoes) {
  SchedulingQueue q;
  q.add("lab/g", 0, true, 0);
  EXPECT_FALSE(q.pop(1000));
  EXPECT_EQ(1u, q.gated());
  EXPECT_TRUE(q.move_all(ClusterEvent::kNodeAdd, 1000).empty());
  EXPECT_TRUE(q.update("lab/g", 0, false, 1001));
  EXPECT_EQ("lab/g", q.pop(1001));
}

TEST(SchedulingQueueTest, AMoveWhileThePodIsTriedSendsItToBackoffNotParking) {
  SchedulingQueue q;
  q.add("lab/a", 0, false, 0);
  ASSERT_TRUE(q.pop(0));
  q.move_all(ClusterEvent::kAssignedPodDelete, 0.01);  // a completion during its /filter
  q.unschedulable("lab/a", {}, 0.02);
  EXPECT_EQ(0u, q.unschedulable_count());
  EXPECT_EQ(1u, q.backoff());
  EXPECT_EQ("lab/a", q.pop(1.02));
}

TEST(SchedulingQueueTest, HigherPriorityFirstThenOldest) {
  SchedulingQueue q;
  q.add("old", 0, false, 1);
  q.add("new", 0, false, 2);
  q.add("urgent", 100, false, 3);
  EXPECT_EQ("urgent", q.pop(3));
  EXPECT_EQ("old", q.pop(3));
  EXPECT_EQ("new", q.pop(3));
}

}  // namespace
}  // namespace allox::emulator
