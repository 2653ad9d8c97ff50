// extender/action_queue.h: retries with back-off up to max_attempts, then gives up with one
// warning naming the action and its error (the worker has no caller to tell).
#include "extender/action_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <sstream>

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

}  // namespace
}  // namespace allox::extender
