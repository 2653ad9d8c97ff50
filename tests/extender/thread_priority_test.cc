// extender/thread_priority.h: a thread's own nice value and name, and the planner thread's.
#include "extender/thread_priority.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "extender/planner.h"
#include "tests/extender/test_support.h"

namespace allox::extender {
namespace {

TEST(ThreadPriorityTest, NiceChangesOnlyTheCallingThread) {
  const int before = this_thread_nice();
  int seen = -100;
  std::thread([&] {
    ASSERT_TRUE(set_this_thread_nice(before + 5).ok());
    seen = this_thread_nice();
  }).join();
  EXPECT_EQ(before + 5, seen);
  EXPECT_EQ(before, this_thread_nice());
}

// A round's CPU against its wall time: sleeping costs the thread (almost) nothing; spinning
// costs it, never more than the wall time the spin took. The spin runs until the clock moves,
// so a busy machine makes it longer, not a failure.
TEST(ThreadPriorityTest, AThreadsCpuTimeCountsItsWorkNotItsWaits) {
  const std::optional<double> start = this_thread_cpu_seconds();
  ASSERT_TRUE(start.has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const std::optional<double> slept = this_thread_cpu_seconds();
  ASSERT_TRUE(slept.has_value());
  EXPECT_LT(*slept - *start, 0.05);
  const auto spin_start = std::chrono::steady_clock::now();
  double cpu = *slept;
  volatile std::uint64_t spins = 0;
  while (cpu - *slept < 0.02 &&
         std::chrono::steady_clock::now() - spin_start < std::chrono::seconds(30)) {
    for (int i = 0; i < 10000; ++i) spins = spins + 1;
    cpu = this_thread_cpu_seconds().value_or(cpu);
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - spin_start).count();
  EXPECT_GE(cpu - *slept, 0.02);
  EXPECT_LE(cpu - *slept, wall + 0.002);
}

TEST(ThreadPriorityTest, AnOutOfRangeNiceIsAnErrorNamingIt) {
  const Status refused = set_this_thread_nice(42);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(std::string::npos, refused.message().find("nice must be in -20..19, got 42"));
}

// The nice value (field 19 of /proc/self/task/TID/stat) of this process's thread named `name`;
// -100 when there is none.
int nice_of_thread_named(const std::string& name) {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string seen;
    std::getline(comm, seen);
    if (seen != name) continue;
    std::ifstream stat(task.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    // After "(comm)", fields 3.. are space separated; nice is field 19.
    std::istringstream rest(text.substr(text.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 19 && rest >> field; ++i) {
    }
    return std::stoi(field);
  }
  return -100;
}

TEST(ThreadPriorityTest, ThePlannerThreadRunsBehindTheRequestThreads) {
  testing::ScratchDir dir;
  ExtenderConfig config = testing::make_config({}, dir.file("state.db"));
  Metrics metrics;
  auto planner = Planner::create(config, make_policy("fifo", PolicyOptions{}).value(), metrics);
  ASSERT_TRUE(planner.ok()) << planner.message();
  (*planner)->start();
  // Lowered to 10, never raised (a process already at 15 stays at 15).
  const int expected = std::max(this_thread_nice(), 10);
  int seen = -100;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (seen != expected && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    seen = nice_of_thread_named("allox-planner");
  }
  EXPECT_EQ(expected, seen);
  (*planner)->stop();
}

}  // namespace
}  // namespace allox::extender
