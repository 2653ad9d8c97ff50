// kubesim/event_broadcaster.h: kube-scheduler's events written off the scheduling
// cycle, in order, and dropped (counted) when the API server falls 1,000 behind, as client-go's
// broadcaster does.
#include "kubesim/event_broadcaster.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>

namespace allox::emulator {
namespace {

PodEvent scheduled(const std::string& pod, double at) {
  return {"lab", pod, "uid-" + pod, "Normal", "Scheduled", "Successfully assigned lab/" + pod, at};
}

// Waits (bounded) for idle(), woken by the broadcaster's on_idle.
struct IdleWaiter {
  std::mutex mu;
  std::condition_variable cv;
  int idles = 0;
  std::function<void()> notifier() {
    return [this] {
      {
        std::lock_guard lock(mu);
        ++idles;
      }
      cv.notify_all();
    };
  }
  bool wait(const EventBroadcaster& events) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return events.idle(); });
  }
};

TEST(EventBroadcasterTest, WritesEachEventAsTheSchedulerRendersItInOrder) {
  ApiObjects objects{[] { return 1.7e9; }};
  IdleWaiter waiter;
  EventBroadcaster events(objects, waiter.notifier());
  for (int i = 0; i < 50; ++i) events.record(scheduled("p" + std::to_string(i), 1.7e9 + i));
  ASSERT_TRUE(waiter.wait(events));
  EXPECT_GE(waiter.idles, 1);
  EXPECT_EQ(0u, events.dropped());

  auto stored = objects.objects(events_v1_resource());
  ASSERT_EQ(50u, stored.size());
  std::sort(stored.begin(), stored.end(), [](const ObjectPtr& a, const ObjectPtr& b) {
    return std::stoull((*a)["metadata"]["resourceVersion"].get<std::string>()) <
           std::stoull((*b)["metadata"]["resourceVersion"].get<std::string>());
  });
  for (int i = 0; i < 50; ++i) {
    const nlohmann::json& e = *stored[static_cast<std::size_t>(i)];
    const std::string pod = "p" + std::to_string(i);
    EXPECT_EQ(pod, e["regarding"]["name"]);
    EXPECT_EQ("uid-" + pod, e["regarding"]["uid"]);
    EXPECT_EQ("Pod", e["regarding"]["kind"]);
    EXPECT_EQ("lab", e["metadata"]["namespace"]);
    EXPECT_EQ("Scheduled", e["reason"]);
    EXPECT_EQ("Normal", e["type"]);
    EXPECT_EQ("default-scheduler", e["reportingController"]);
    EXPECT_EQ(rfc3339(1.7e9 + i), e["eventTime"]);
  }
}

TEST(EventBroadcasterTest, AFullQueueDropsAndCountsWhatComesWhileTheApiServerIsStuck) {
  ApiObjects objects{[] { return 1.7e9; }};
  // The API server stalls on the first event: the writer is stuck inside its create.
  std::mutex mu;
  std::condition_variable cv;
  bool inside = false, released = false;
  objects.subscribe([&](const Change&) {
    std::unique_lock lock(mu);
    if (released) return;
    inside = true;
    cv.notify_all();
    cv.wait(lock, [&] { return released; });
  });
  IdleWaiter waiter;
  {
    EventBroadcaster events(objects, waiter.notifier(), /*queue_limit=*/3);
    events.record(scheduled("first", 1));
    {
      std::unique_lock lock(mu);
      ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return inside; }));
    }
    EXPECT_FALSE(events.idle());
    for (int i = 0; i < 5; ++i) events.record(scheduled("p" + std::to_string(i), 2));
    EXPECT_EQ(2u, events.dropped());  // p3 and p4: three were queued already
    {
      std::lock_guard lock(mu);
      released = true;
    }
    cv.notify_all();
    ASSERT_TRUE(waiter.wait(events));
    EXPECT_EQ(2u, events.dropped());
  }
  std::set<std::string> pods;
  for (const ObjectPtr& e : objects.objects(events_v1_resource())) {
    pods.insert((*e)["regarding"]["name"].get<std::string>());
  }
  EXPECT_EQ((std::set<std::string>{"first", "p0", "p1", "p2"}), pods);
}

TEST(EventBroadcasterTest, WhatIsQueuedAtDestructionIsWrittenFirst) {
  ApiObjects objects{[] { return 1.7e9; }};
  {
    EventBroadcaster events(objects);
    for (int i = 0; i < 200; ++i) events.record(scheduled("p" + std::to_string(i), 1));
  }
  EXPECT_EQ(200u, objects.objects(events_v1_resource()).size());
}

}  // namespace
}  // namespace allox::emulator
