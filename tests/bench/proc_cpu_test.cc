#include "bench/proc_cpu.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <condition_variable>
#include <ctime>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace allox::bench {
namespace {

// This thread's own CPU clock, which the kernel's tick counts in /proc follow.
double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

TEST(ProcCpuTest, ReadsUtimeAndStimeAfterTheLastParenthesis) {
  // A command name may hold spaces and ')': fields 14 and 15 count from the last ')'.
  EXPECT_EQ(7 + 5, stat_cpu_ticks("42 (a) b (c) S 1 42 42 0 -1 4194560 100 0 0 0 7 5 0 0 20 0 1"));
  EXPECT_EQ(0, stat_cpu_ticks("1 (init) S 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1"));
  EXPECT_EQ(-1, stat_cpu_ticks(""));
  EXPECT_EQ(-1, stat_cpu_ticks("42 no parenthesis 1 2 3"));
  EXPECT_EQ(-1, stat_cpu_ticks("42 (short) S 1 2 3"));
  EXPECT_EQ(-1, stat_cpu_ticks("42 (x) S 1 42 42 0 -1 4194560 100 0 0 0 seven 5 0"));
}

TEST(ProcCpuTest, AThreadsCpuIsCountedUnderItsName) {
  // Each thread burns 0.3 s of its own CPU, says so, then stays alive, idle, until /proc was
  // read. (A mutex and a condition variable, not std::latch: GCC 12's can lose a wake-up.)
  std::mutex mu;
  std::condition_variable cv;
  double burned = 0;  // under mu
  int done = 0;       // threads that burned their share (under mu)
  bool read = false;  // /proc was read: the threads may end (under mu)
  auto burn = [&](const char* name) {
    pthread_setname_np(pthread_self(), name);
    volatile unsigned long sink = 0;
    while (thread_cpu_seconds() < 0.3) {
      for (int i = 0; i < 100000; ++i) sink = sink + static_cast<unsigned long>(i);
    }
    std::unique_lock lock(mu);
    burned += thread_cpu_seconds();
    ++done;
    cv.notify_all();
    cv.wait(lock, [&] { return read; });
  };
  const auto before = cpu_by_thread_name(::getpid());
  std::thread first(burn, "proc-cpu-burn");
  std::thread second(burn, "proc-cpu-burn");
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return done == 2; });
  }
  const auto after = cpu_by_thread_name(::getpid());
  const double process = process_cpu_seconds(::getpid());
  {
    std::lock_guard lock(mu);
    read = true;
  }
  cv.notify_all();
  first.join();
  second.join();

  ASSERT_TRUE(after.count("proc-cpu-burn"));
  const ThreadGroupCpu& group = after.at("proc-cpu-burn");
  EXPECT_EQ(2, group.threads);
  // /proc counts in clock ticks (10 ms at 100 Hz): 0.6 s burned shows as at least 0.5 s.
  EXPECT_GE(group.seconds, 0.5);
  EXPECT_LE(group.seconds, burned + 0.05);
  EXPECT_FALSE(before.count("proc-cpu-burn"));
  double live = 0;
  for (const auto& [name, g] : after) live += g.seconds;
  EXPECT_LE(live, process + 0.05) << "the live threads' sum is within the process's total";

  const auto delta = cpu_between(before, after);
  EXPECT_NEAR(group.seconds, delta.at("proc-cpu-burn").seconds, 1e-9) << "new since before";
}

TEST(ProcCpuTest, BetweenSubtractsByNameAndNeverGoesNegative) {
  const std::map<std::string, ThreadGroupCpu> before{
      {"a", {2.0, 1}}, {"gone", {1.0, 1}}, {"shrunk", {5.0, 3}}};
  const std::map<std::string, ThreadGroupCpu> after{
      {"a", {3.5, 1}}, {"new", {0.25, 2}}, {"shrunk", {4.0, 1}}};
  const auto delta = cpu_between(before, after);
  ASSERT_EQ(3u, delta.size());
  EXPECT_DOUBLE_EQ(1.5, delta.at("a").seconds);
  EXPECT_DOUBLE_EQ(0.25, delta.at("new").seconds);
  EXPECT_EQ(2, delta.at("new").threads);
  EXPECT_DOUBLE_EQ(0, delta.at("shrunk").seconds) << "its threads took their time with them";
  EXPECT_FALSE(delta.count("gone"));
}

TEST(ProcCpuTest, KeepLargestHoldsEachGroupsBestSample) {
  std::map<std::string, ThreadGroupCpu> seen{{"kubelets", {3.0, 2}}};
  keep_largest(seen, {{"kubelets", {4.0, 2}}, {"scheduler", {1.0, 1}}});
  keep_largest(seen, {{"scheduler", {0.5, 1}}});  // its threads ended and one came back
  EXPECT_DOUBLE_EQ(4.0, seen.at("kubelets").seconds);
  EXPECT_DOUBLE_EQ(1.0, seen.at("scheduler").seconds);
  EXPECT_EQ(2u, seen.size());
}

TEST(ProcCpuTest, AProcessThatIsNotThereReadsAsNothing) {
  EXPECT_EQ(0, process_cpu_seconds(-1));
  EXPECT_TRUE(cpu_by_thread_name(-1).empty());
}

}  // namespace
}  // namespace allox::bench
