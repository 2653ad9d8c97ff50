// alloxd/http/io_thread_inbox.h: work pushed from other threads runs once, on the I/O thread, in
// each pusher's order; work left when the io_context stops is destroyed, not run.
#include "alloxd/http/io_thread_inbox.h"

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace allox::extender {
namespace {

namespace asio = boost::asio;

TEST(IoThreadInboxTest, WorkFromManyThreadsRunsOnceOnTheIoThreadInEachPushersOrder) {
  asio::io_context io(1);
  auto guard = asio::make_work_guard(io);
  auto inbox = IoThreadInbox::open(io);
  ASSERT_TRUE(inbox.ok()) << inbox.message();
  std::thread io_thread([&] { io.run(); });

  constexpr int kPushers = 4;
  constexpr int kEach = 5000;
  std::mutex mu;
  std::condition_variable all_ran;
  std::map<int, std::vector<int>> ran;  // pusher -> the sequence numbers its work ran with
  int count = 0;
  bool off_thread = false;
  std::vector<std::thread> pushers;
  for (int p = 0; p < kPushers; ++p) {
    pushers.emplace_back([&, p] {
      for (int i = 0; i < kEach; ++i) {
        (*inbox)->push([&, p, i] {
          std::lock_guard lock(mu);
          if (std::this_thread::get_id() != io_thread.get_id()) off_thread = true;
          ran[p].push_back(i);
          if (++count == kPushers * kEach) all_ran.notify_all();
        });
      }
    });
  }
  for (std::thread& t : pushers) t.join();
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(
        all_ran.wait_for(lock, std::chrono::seconds(30), [&] { return count == kPushers * kEach; }))
        << count << " of " << kPushers * kEach << " ran";
  }
  io.stop();
  io_thread.join();
  EXPECT_FALSE(off_thread);
  EXPECT_EQ(kPushers * kEach, count);
  for (int p = 0; p < kPushers; ++p) {
    ASSERT_EQ(static_cast<std::size_t>(kEach), ran[p].size());
    for (int i = 0; i < kEach; ++i) ASSERT_EQ(i, ran[p][i]) << "pusher " << p;
  }
}

TEST(IoThreadInboxTest, WorkPushedAfterTheIoContextStoppedIsDestroyedNotRun) {
  auto held = std::make_shared<int>(0);
  bool ran = false;
  {
    asio::io_context io(1);
    auto inbox = IoThreadInbox::open(io);
    ASSERT_TRUE(inbox.ok()) << inbox.message();
    io.stop();
    (*inbox)->push([held, &ran] { ran = true; });
    EXPECT_EQ(2, held.use_count()) << "the inbox holds the work until it goes";
    io.run();  // stopped: returns at once
  }
  EXPECT_FALSE(ran);
  EXPECT_EQ(1, held.use_count()) << "destroyed with the inbox";
}

}  // namespace
}  // namespace allox::extender
