// alloxd/store/write_delegate.h: sections run one at a time on the delegate's own thread, started
// first; results come back and exceptions are rethrown to the caller.
#include "alloxd/store/write_delegate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace allox::extender {
namespace {

TEST(WriteDelegateTest, SectionsRunOnTheDelegatesStartedThreadAndReturnTheirResults) {
  std::thread::id started_on;
  WriteDelegate delegate([&] { started_on = std::this_thread::get_id(); });
  EXPECT_NE(std::thread::id{}, started_on) << "the constructor returns once the thread started";
  std::thread::id ran_on;
  const std::string answer = delegate.run([&] {
    ran_on = std::this_thread::get_id();
    return std::string("applied");
  });
  EXPECT_EQ("applied", answer);
  EXPECT_EQ(started_on, ran_on);
  EXPECT_NE(std::this_thread::get_id(), ran_on);
  int touched = 0;
  delegate.run([&] { touched = 7; });  // void sections too
  EXPECT_EQ(7, touched);
}

// Four callers each add 5,000 times to a plain int: only sections that never overlap and whose
// writes the callers see when run() returns give exactly 20,000.
TEST(WriteDelegateTest, SectionsFromManyThreadsRunOneAtATimeAndAreSeenByTheirCallers) {
  WriteDelegate delegate([] {});
  long total = 0;
  std::atomic<int> inside{0};
  std::atomic<bool> overlapped{false};
  std::vector<std::thread> callers;
  callers.reserve(4);
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int i = 0; i < 5'000; ++i) {
        const long seen = delegate.run([&] {
          if (inside.fetch_add(1) != 0) overlapped = true;
          const long now = ++total;
          inside.fetch_sub(1);
          return now;
        });
        ASSERT_GE(seen, 1);
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(20'000, total);
  EXPECT_FALSE(overlapped.load());
}

TEST(WriteDelegateTest, ASectionsExceptionIsRethrownToItsCallerAndTheThreadServesOn) {
  WriteDelegate delegate([] {});
  EXPECT_THROW(delegate.run([]() -> int { throw std::runtime_error("book full"); }),
               std::runtime_error);
  try {
    delegate.run([] { throw std::invalid_argument("no such job"); });
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ("no such job", e.what());
  }
  EXPECT_EQ(3, delegate.run([] { return 3; }));
}

}  // namespace
}  // namespace allox::extender
