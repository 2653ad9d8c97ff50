// alloxd/http/blocking_pool.h: every work posted runs once, on a pool thread that ran its start
// first; join() runs everything posted before it; posts may come from many threads at once.
#include "alloxd/http/blocking_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace allox::extender {
namespace {

TEST(BlockingPoolTest, EveryWorkPostedFromManyThreadsRunsOnceOnAStartedPoolThread) {
  std::mutex mu;
  std::set<std::thread::id> started;
  std::set<std::thread::id> ran_on;
  std::vector<int> runs(20'000, 0);
  bool before_start = false;
  {
    BlockingPool pool(4, [&] {
      std::lock_guard lock(mu);
      started.insert(std::this_thread::get_id());
    });
    {
      std::lock_guard lock(mu);
      EXPECT_EQ(4U, started.size()) << "the constructor returns once every thread started";
    }
    std::vector<std::thread> posters;
    for (int p = 0; p < 4; ++p) {
      posters.emplace_back([&, p] {
        for (int i = p; i < static_cast<int>(runs.size()); i += 4) {
          pool.post([&, i] {
            std::lock_guard lock(mu);
            if (started.count(std::this_thread::get_id()) == 0) before_start = true;
            ran_on.insert(std::this_thread::get_id());
            ++runs[static_cast<std::size_t>(i)];
          });
        }
      });
    }
    for (std::thread& t : posters) t.join();
    pool.join();  // runs what was posted, then ends the threads
    pool.join();  // idempotent
  }
  EXPECT_FALSE(before_start);
  for (const std::thread::id& id : ran_on) EXPECT_EQ(1U, started.count(id));
  for (std::size_t i = 0; i < runs.size(); ++i) ASSERT_EQ(1, runs[i]) << "work " << i;
}

TEST(BlockingPoolTest, WorkThatThrowsLeavesTheThreadServing) {
  std::atomic<int> ran{0};
  {
    BlockingPool pool(1, {});
    pool.post([] { throw std::runtime_error("work failed"); });
    pool.post([&] { ++ran; });
  }  // the destructor joins
  EXPECT_EQ(1, ran.load());
}

}  // namespace
}  // namespace allox::extender
