// alloxd/control/work_queue.h: client-go's workqueue semantics. De-duplication of waiting keys,
// a key added while processed handed out once more after done() and never to two workers at
// once, admissions before background keys, delays and per-key back-off on an injected clock,
// a bound with counted drops, shutdown. Driven by try_get() and a stepped clock: no sleeps.
#include "alloxd/control/work_queue.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <functional>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace allox::extender {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// A clock that moves only when the test says so.
struct SteppedClock {
  Clock::time_point at = Clock::time_point{} + std::chrono::hours(1);
  std::function<Clock::time_point()> fn() {
    return [this] { return at; };
  }
};

std::vector<std::string> drain(WorkQueue& queue) {
  std::vector<std::string> keys;
  while (auto item = queue.try_get()) {
    keys.push_back(item->key);
    queue.done(item->key);
  }
  return keys;
}

TEST(WorkQueueTest, AWaitingKeyIsNotAddedTwiceAndKeepsItsPlace) {
  WorkQueue queue;
  EXPECT_TRUE(queue.add("lab/a"));
  EXPECT_TRUE(queue.add("lab/b"));
  EXPECT_TRUE(queue.add("lab/a"));
  EXPECT_EQ((std::vector<std::string>{"lab/a", "lab/b"}), drain(queue));
  const WorkQueue::Counts counts = queue.counts();
  EXPECT_EQ(2u, counts.added);
  EXPECT_EQ(1u, counts.merged);
  EXPECT_TRUE(queue.idle());
}

TEST(WorkQueueTest, AKeyAddedWhileProcessedIsHandedOutAgainOnlyAfterDone) {
  WorkQueue queue;
  ASSERT_TRUE(queue.add("job-1"));
  auto first = queue.try_get();
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(queue.pending("job-1"));

  ASSERT_TRUE(queue.add("job-1"));  // the state changed while a worker reads it
  ASSERT_TRUE(queue.add("job-1"));  // and again: still one more run, not two
  EXPECT_FALSE(queue.try_get().has_value()) << "never to a second worker while processed";
  queue.done("job-1");

  auto second = queue.try_get();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ("job-1", second->key);
  EXPECT_FALSE(queue.try_get().has_value());
  queue.done("job-1");
  EXPECT_TRUE(queue.idle());
}

TEST(WorkQueueTest, AnAdmissionIsHandedOutBeforeThousandsOfBackgroundKeys) {
  WorkQueue queue;
  for (int i = 0; i < 3000; ++i) ASSERT_TRUE(queue.add("big-" + std::to_string(i)));
  ASSERT_TRUE(queue.add("small", WorkPriority::kAdmit));
  // A waiting background key raised to an admission moves ahead too, and is handed out once.
  ASSERT_TRUE(queue.add("big-2999", WorkPriority::kAdmit));
  ASSERT_TRUE(queue.add("small", WorkPriority::kBackground));  // never lowered

  auto first = queue.try_get();
  auto second = queue.try_get();
  ASSERT_TRUE(first && second);
  EXPECT_EQ("small", first->key);
  EXPECT_EQ(WorkPriority::kAdmit, first->priority);
  EXPECT_EQ("big-2999", second->key);
  queue.done(first->key);
  queue.done(second->key);
  const std::vector<std::string> rest = drain(queue);
  ASSERT_EQ(2999u, rest.size());
  EXPECT_EQ("big-0", rest.front());
  EXPECT_EQ("big-2998", rest.back());
}

TEST(WorkQueueTest, AddAfterWaitsForTheInjectedClockAndTheEarliestDelayWins) {
  SteppedClock clock;
  WorkQueue queue({.now = clock.fn()});
  ASSERT_TRUE(queue.add_after("later", milliseconds(500)));
  ASSERT_TRUE(queue.add_after("soon", milliseconds(300)));
  ASSERT_TRUE(queue.add_after("soon", milliseconds(100)));   // earlier: wins
  ASSERT_TRUE(queue.add_after("later", milliseconds(900)));  // later: ignored
  EXPECT_EQ(2u, queue.counts().delayed);
  EXPECT_TRUE(queue.idle()) << "delayed keys are future work";
  EXPECT_FALSE(queue.try_get().has_value());

  clock.at += milliseconds(100);
  EXPECT_EQ((std::vector<std::string>{"soon"}), drain(queue));
  clock.at += milliseconds(399);
  EXPECT_TRUE(drain(queue).empty());
  clock.at += milliseconds(1);
  EXPECT_EQ((std::vector<std::string>{"later"}), drain(queue));
  EXPECT_TRUE(drain(queue).empty()) << "the stale later entry is not handed out";
  EXPECT_TRUE(queue.add_after("now", milliseconds(0)));  // no delay: added at once
  EXPECT_EQ((std::vector<std::string>{"now"}), drain(queue));
}

TEST(WorkQueueTest, ADelayedKeyAlreadyWaitingIsNotHandedOutTwice) {
  SteppedClock clock;
  WorkQueue queue({.now = clock.fn()});
  ASSERT_TRUE(queue.add_after("job", milliseconds(10)));
  ASSERT_TRUE(queue.add("job"));
  clock.at += milliseconds(10);
  EXPECT_EQ((std::vector<std::string>{"job"}), drain(queue));
}

TEST(WorkQueueTest, AddRateLimitedBacksOffExponentiallyPerKeyUntilForget) {
  SteppedClock clock;
  WorkQueue queue(
      {.backoff_initial = milliseconds(100), .backoff_max = milliseconds(350), .now = clock.fn()});
  // Delays 100, 200, 350 (the cap), 350: each due exactly then, not a millisecond before.
  for (int delay : {100, 200, 350, 350}) {
    ASSERT_TRUE(queue.add_rate_limited("failing"));
    clock.at += milliseconds(delay - 1);
    EXPECT_TRUE(drain(queue).empty()) << delay;
    clock.at += milliseconds(1);
    EXPECT_EQ((std::vector<std::string>{"failing"}), drain(queue)) << delay;
  }
  EXPECT_EQ(4, queue.retries("failing"));
  ASSERT_TRUE(queue.add_rate_limited("other"));  // its own back-off: from the start
  clock.at += milliseconds(100);
  EXPECT_EQ((std::vector<std::string>{"other"}), drain(queue));

  queue.forget("failing");
  EXPECT_EQ(0, queue.retries("failing"));
  ASSERT_TRUE(queue.add_rate_limited("failing"));
  clock.at += milliseconds(100);
  EXPECT_EQ((std::vector<std::string>{"failing"}), drain(queue));
  EXPECT_EQ(6u, queue.counts().retried);
}

// A key backing off does not hold up a key added after it, of either priority.
TEST(WorkQueueTest, AKeyBackingOffDoesNotHoldUpANewKey) {
  SteppedClock clock;
  WorkQueue queue({.backoff_initial = std::chrono::seconds(30),
                   .backoff_max = std::chrono::seconds(30),
                   .now = clock.fn()});
  ASSERT_TRUE(queue.add_rate_limited("stuck"));
  ASSERT_TRUE(queue.add("next", WorkPriority::kAdmit));
  ASSERT_TRUE(queue.add("later"));
  EXPECT_EQ((std::vector<std::string>{"next", "later"}), drain(queue));
  EXPECT_EQ(1u, queue.counts().delayed);
  clock.at += std::chrono::seconds(30);
  EXPECT_EQ((std::vector<std::string>{"stuck"}), drain(queue));
}

TEST(WorkQueueTest, ABoundedQueueDropsAndCountsNewKeysButNeverOneItHolds) {
  SteppedClock clock;
  WorkQueue queue({.capacity = 2, .now = clock.fn()});
  ASSERT_TRUE(queue.add("a"));
  ASSERT_TRUE(queue.add("b"));
  EXPECT_FALSE(queue.add("c"));
  EXPECT_TRUE(queue.add("a", WorkPriority::kAdmit)) << "a key waiting is never dropped";
  EXPECT_EQ(1u, queue.counts().dropped);
  // A key re-added while processed keeps its place past the bound.
  auto a = queue.try_get();
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(queue.add("d"));
  ASSERT_TRUE(queue.add(a->key));
  queue.done(a->key);
  EXPECT_EQ(3u, queue.counts().waiting);
  // Delays have their own bound.
  ASSERT_TRUE(queue.add_after("x", milliseconds(1)));
  ASSERT_TRUE(queue.add_after("y", milliseconds(1)));
  EXPECT_FALSE(queue.add_after("z", milliseconds(1)));
  EXPECT_EQ(2u, queue.counts().dropped);
}

TEST(WorkQueueTest, ShutdownWakesABlockedGetDropsWhatWaitsAndRefusesAdds) {
  WorkQueue queue;
  std::promise<bool> got;
  std::thread worker([&] { got.set_value(queue.get().has_value()); });
  queue.shutdown();  // whether the worker blocked yet or not, it returns empty-handed
  EXPECT_FALSE(got.get_future().get());
  worker.join();
  EXPECT_FALSE(queue.add("late"));
  EXPECT_FALSE(queue.add_after("later", milliseconds(5)));
  EXPECT_TRUE(queue.shutting_down());

  WorkQueue full;
  ASSERT_TRUE(full.add("a"));
  ASSERT_TRUE(full.add_after("b", std::chrono::hours(1)));
  full.shutdown();
  EXPECT_FALSE(full.get().has_value());
  EXPECT_EQ(2u, full.counts().dropped);
}

TEST(WorkQueueTest, ABlockedGetWakesForAKeyAddedLaterOrForADelayThatCameDue) {
  SteppedClock clock;
  WorkQueue queue({.now = clock.fn()});
  std::promise<std::string> got;
  std::thread worker([&] {
    auto item = queue.get();
    got.set_value(item ? item->key : "");
  });
  ASSERT_TRUE(queue.add_after("due", std::chrono::hours(1)));
  clock.at += std::chrono::hours(1);
  queue.tick();
  EXPECT_EQ("due", got.get_future().get());
  worker.join();
}

TEST(WorkQueueTest, ManyWorkersNeverHoldOneKeyAtOnceAndTheLastAddOfEachKeyIsSeen) {
  // Four workers drain keys that the test keeps re-adding, each add after a new version of the
  // key's state: no key is ever held by two workers, and each key's last run saw its last
  // version (an add while it ran was not lost).
  constexpr int kKeys = 7;
  WorkQueue queue;
  std::array<std::atomic<int>, kKeys> version{}, last_seen{};
  std::atomic<bool> overlap{false};
  std::atomic<int> runs{0};
  std::mutex mu;
  std::set<std::string> held;
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto item = queue.get()) {
        {
          std::lock_guard lock(mu);
          if (!held.insert(item->key).second) overlap = true;
        }
        const int k = std::stoi(item->key.substr(1));
        last_seen[k] = version[k].load();
        ++runs;
        {
          std::lock_guard lock(mu);
          held.erase(item->key);
        }
        queue.done(item->key);
      }
    });
  }
  for (int round = 1; round <= 2000; ++round) {
    version[round % kKeys] = round;
    queue.add("k" + std::to_string(round % kKeys));
  }
  ASSERT_TRUE(queue.wait_idle(std::chrono::seconds(20)));
  queue.shutdown();
  for (std::thread& worker : workers) worker.join();
  EXPECT_FALSE(overlap.load());
  EXPECT_LE(runs.load(), 2000);
  for (int k = 0; k < kKeys; ++k) EXPECT_EQ(version[k].load(), last_seen[k].load()) << k;
}

}  // namespace
}  // namespace allox::extender
