// alloxd/http/deadline.h: a connection's one deadline on one timer.
#include "alloxd/http/deadline.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>

namespace allox::extender {
namespace {

using namespace std::chrono_literals;
using Clock = Deadline::Clock;

struct Connection : std::enable_shared_from_this<Connection> {};

struct DeadlineTest : ::testing::Test {
  boost::asio::io_context io;
  int expirations = 0;
  Deadline deadline{io.get_executor(), [this] { ++expirations; }};
  std::shared_ptr<Connection> connection = std::make_shared<Connection>();
};

TEST_F(DeadlineTest, APassedDeadlineRunsItsExpiryOnceAndLetsGoOfItsConnection) {
  deadline.arm(5ms, *connection);
  EXPECT_EQ(2, connection.use_count()) << "the wait holds the connection";
  EXPECT_FALSE(deadline.timed_out());
  io.run();
  EXPECT_EQ(1, expirations);
  EXPECT_TRUE(deadline.timed_out());
  EXPECT_EQ(1, connection.use_count());
}

TEST_F(DeadlineTest, ADeadlineMovedLaterExpiresAtTheLaterTimeFromTheSameWait) {
  const auto begin = Clock::now();
  deadline.arm(5ms, *connection);
  deadline.arm(40ms, *connection);
  EXPECT_EQ(2, connection.use_count()) << "moved later: no second wait";
  io.run();
  EXPECT_EQ(1, expirations);
  EXPECT_GE(Clock::now() - begin, 40ms);
}

TEST_F(DeadlineTest, ADeadlineMovedEarlierReArmsTheTimer) {
  deadline.arm(std::chrono::hours(1), *connection);
  deadline.arm(5ms, *connection);
  io.run();  // returns: it would hang for an hour if the first wait were kept
  EXPECT_EQ(1, expirations);
  EXPECT_EQ(1, connection.use_count());
}

TEST_F(DeadlineTest, ADisarmedDeadlineEndsItsWaitWithoutExpiring) {
  deadline.arm(5ms, *connection);
  deadline.disarm();
  io.run();
  EXPECT_EQ(0, expirations);
  EXPECT_FALSE(deadline.timed_out());
  EXPECT_EQ(1, connection.use_count());
}

TEST_F(DeadlineTest, CancelEndsTheWaitAtOnceAndLetsGoOfItsConnection) {
  deadline.arm(std::chrono::hours(1), *connection);
  deadline.cancel();
  io.run();  // returns at once: no wait is left
  EXPECT_EQ(0, expirations);
  EXPECT_EQ(1, connection.use_count());
}

TEST_F(DeadlineTest, ArmingAgainClearsTimedOut) {
  deadline.arm(1ms, *connection);
  io.run();
  ASSERT_TRUE(deadline.timed_out());
  deadline.arm(std::chrono::hours(1), *connection);
  EXPECT_FALSE(deadline.timed_out());
  deadline.cancel();
  io.restart();
  io.run();
  EXPECT_EQ(1, expirations);
}

}  // namespace
}  // namespace allox::extender
