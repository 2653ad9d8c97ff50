// alloxd/control/action_queue.h: retries with back-off up to max_attempts, then gives up with one
// warning naming the action and its error (the worker has no caller to tell); admissions before
// tidying up; back-off that does not hold up new work; the latest intent per key.
#include "alloxd/control/action_queue.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <future>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "core/log.h"

namespace allox::extender {
namespace {

class ActionQueueTest : public ::testing::Test {
 protected:
  void TearDown() override { configure_log(LogOptions{}); }
};

TEST_F(ActionQueueTest, FailingActionIsRetriedThenGivenUpWithOneWarning) {
  std::ostringstream log;  // read once the worker has stopped
  configure_log({"alloxd", LogLevel::kDebug, LogFormat::kJson}, log);
  ActionQueue queue({.max_attempts = 3,
                     .backoff_initial = std::chrono::milliseconds(1),
                     .backoff_max = std::chrono::milliseconds(2)});
  std::atomic<int> runs{0};
  queue.start();
  ASSERT_TRUE(queue.submit("delete lab/bert-cpu", [&]() -> Status {
    ++runs;
    return Error{"HTTP 503"};
  }));
  ASSERT_TRUE(queue.wait_idle(std::chrono::seconds(10)));
  queue.stop();
  EXPECT_EQ(3, runs.load());
  EXPECT_EQ(1u, queue.counts().failed);
  EXPECT_EQ(2u, queue.counts().retried);

  int retries = 0, give_ups = 0;
  std::istringstream lines(log.str());
  for (std::string line; std::getline(lines, line);) {
    const auto event = nlohmann::json::parse(line);
    EXPECT_EQ("delete lab/bert-cpu", event["action"]) << line;
    EXPECT_EQ("HTTP 503", event["error"]) << line;
    if (event["level"] == "debug" && event["msg"] == "action failed; retrying") ++retries;
    if (event["level"] == "warning" && event["msg"] == "action failed; giving up") {
      ++give_ups;
      EXPECT_EQ(3, event["attempts"]) << line;
    }
  }
  EXPECT_EQ(2, retries) << log.str();
  EXPECT_EQ(1, give_ups) << log.str();
}

TEST_F(ActionQueueTest, SucceedingActionLogsNothingAtInfo) {
  std::ostringstream log;
  configure_log({"alloxd", LogLevel::kInfo, LogFormat::kText}, log);
  ActionQueue queue;
  queue.start();
  ASSERT_TRUE(queue.submit("ungate lab/a", [] { return OkStatus(); }));
  ASSERT_TRUE(queue.wait_idle(std::chrono::seconds(10)));
  queue.stop();
  EXPECT_EQ(1u, queue.counts().done);
  EXPECT_EQ("", log.str());
}

using std::chrono::milliseconds;

// Holds the worker inside one action until released, so the test can queue behind it.
struct Gate {
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  std::function<Status()> action() {
    return [this] {
      entered.set_value();
      released.wait();
      return OkStatus();
    };
  }
};

TEST_F(ActionQueueTest, AdmissionsRunBeforeWaitingDeletionsAndEvents) {
  ActionQueue queue({.workers = 1});  // one worker, held below, so that everything queues
  queue.start();
  Gate gate;
  ASSERT_TRUE(queue.submit("first", gate.action()));
  gate.entered.get_future().wait();

  std::mutex mu;
  std::vector<std::string> ran;
  auto record = [&](std::string name) {
    return [&, name]() -> Status {
      std::lock_guard lock(mu);
      ran.push_back(name);
      return OkStatus();
    };
  };
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(queue.submit("delete lab/big-" + std::to_string(i), record("delete")));
  }
  ASSERT_TRUE(queue.submit("ungate lab/small", record("ungate"), ActionPriority::kAdmit));
  ASSERT_TRUE(queue.submit("nudge lab/other", record("nudge"), ActionPriority::kAdmit));
  gate.release.set_value();
  ASSERT_TRUE(queue.wait_idle(std::chrono::seconds(10)));

  ASSERT_EQ(302u, ran.size());
  EXPECT_EQ("ungate", ran[0]);
  EXPECT_EQ("nudge", ran[1]);
  EXPECT_EQ(303u, queue.counts().done);  // "first" too
}

TEST_F(ActionQueueTest, ANewActionDoesNotWaitOutAnotherActionsBackOff) {
  ActionQueueOptions options;
  options.backoff_initial = std::chrono::seconds(30);
  options.backoff_max = std::chrono::seconds(30);
  ActionQueue queue(options);
  queue.start();
  std::promise<void> failed_once;
  int attempts = 0;
  ASSERT_TRUE(queue.submit("delete lab/stuck", [&]() -> Status {
    if (++attempts == 1) failed_once.set_value();
    return Error{"API server answered 500"};
  }));
  failed_once.get_future().wait();
  // The worker holds the queue's lock from counting the retry until it waits out the back-off,
  // so once the retry is counted the worker is asleep in that wait.
  while (queue.counts().retried == 0) std::this_thread::yield();

  // The failed deletion now backs off for 30 s; the gate removal submitted meanwhile runs now.
  std::promise<void> admitted;
  ASSERT_TRUE(queue.submit(
      "ungate lab/next",
      [&]() -> Status {
        admitted.set_value();
        return OkStatus();
      },
      ActionPriority::kAdmit));
  EXPECT_EQ(std::future_status::ready, admitted.get_future().wait_for(std::chrono::seconds(10)));
  EXPECT_EQ(1, attempts);
  queue.stop();
}

TEST_F(ActionQueueTest, TheLatestIntentPerKeyRunsOnceAndFailuresAreBounded) {
  ActionQueueOptions options;
  options.max_attempts = 3;
  options.backoff_initial = milliseconds(1);
  options.backoff_max = milliseconds(2);
  options.workers = 1;  // held below by the gate, so that both submissions of "a" wait
  ActionQueue queue(options);
  Gate gate;
  queue.start();
  ASSERT_TRUE(queue.submit("first", gate.action()));
  gate.entered.get_future().wait();

  std::atomic<int> old_runs{0}, new_runs{0}, failures{0};
  ASSERT_TRUE(queue.submit("delete lab/a", [&] {
    ++old_runs;
    return OkStatus();
  }));
  ASSERT_TRUE(queue.submit("delete lab/a", [&] {
    ++new_runs;
    return OkStatus();
  }));
  EXPECT_TRUE(queue.pending("delete lab/a"));
  ASSERT_TRUE(queue.submit("delete lab/b", [&]() -> Status {
    ++failures;
    return Error{"refused"};
  }));
  gate.release.set_value();
  ASSERT_TRUE(queue.wait_idle(std::chrono::seconds(10)));

  EXPECT_EQ(0, old_runs.load());
  EXPECT_EQ(1, new_runs.load());
  EXPECT_EQ(3, failures.load());
  const ActionQueue::Counts counts = queue.counts();
  EXPECT_EQ(2u, counts.done);
  EXPECT_EQ(1u, counts.failed);
  EXPECT_EQ(2u, counts.retried);
  EXPECT_FALSE(queue.pending("delete lab/a"));
}

TEST_F(ActionQueueTest, WorkersRunDifferentKeysAtOnceButAKeyNeverTwice) {
  // Four round trips that each wait on the network run side by side; a key re-submitted while
  // it runs waits for that run to end, then runs once more (its latest intent).
  ActionQueue queue({.workers = 4});
  queue.start();
  std::array<Gate, 4> gates;
  for (std::size_t i = 0; i < gates.size(); ++i) {
    ASSERT_TRUE(queue.submit("ungate lab/p" + std::to_string(i), gates[i].action(),
                             ActionPriority::kAdmit));
  }
  for (Gate& gate : gates) {  // all four entered while none has been released
    EXPECT_EQ(std::future_status::ready,
              gate.entered.get_future().wait_for(std::chrono::seconds(10)));
  }
  std::atomic<int> reruns{0};
  ASSERT_TRUE(queue.submit("ungate lab/p0", [&] {
    ++reruns;
    return OkStatus();
  }));
  EXPECT_TRUE(queue.pending("ungate lab/p0"));
  std::promise<void> later_ran;
  ASSERT_TRUE(queue.submit("event lab/p9", [&] {
    later_ran.set_value();
    return OkStatus();
  }));
  // One worker is freed; it passes over p0 (still running) to the action submitted after it.
  gates[1].release.set_value();
  ASSERT_EQ(std::future_status::ready, later_ran.get_future().wait_for(std::chrono::seconds(10)));
  EXPECT_EQ(0, reruns.load());
  for (std::size_t i : {0, 2, 3}) gates[i].release.set_value();
  ASSERT_TRUE(queue.wait_idle(std::chrono::seconds(10)));
  EXPECT_EQ(1, reruns.load());
  EXPECT_EQ(6u, queue.counts().done);
}

}  // namespace
}  // namespace allox::extender
