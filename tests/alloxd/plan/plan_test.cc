// alloxd/plan/plan.h: starts map to slots; waiting jobs get positions and estimated starts, the
// policy's where it gave them, else a list schedule onto machines as they free up. PlanBoard
// frees replaced plans on the publisher's thread, outside its lock.
#include "alloxd/plan/plan.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace allox::extender {
namespace {

PlanInput two_machine_input() {
  PlanInput input;
  input.version = 7;
  ClusterState& s = input.state;
  s.now = 1000;
  s.machines = {{"n1/gpu-0", "gpu", 1100}, {"n2/cpu-0", "cpu", 1000}};
  s.idle = {false, true};
  for (auto [id, gpu, cpu] :
       {std::tuple{"a", 50.0, 400.0}, std::tuple{"b", 30.0, 300.0}, std::tuple{"c", 20.0, 0.0}}) {
    Job job;
    job.id = id;
    job.arrival = 900;
    job.time["gpu"] = gpu;
    if (cpu > 0) job.time["cpu"] = cpu;
    input.jobs.push_back(std::make_shared<const Job>(job));
  }
  for (const auto& job : input.jobs) s.queue.push_back({job.get(), 900, 0, {}});
  return input;
}

std::vector<MachineSlot> slots() {
  return {{"n1", "gpu", 0, "x"}, {"n2", "cpu", 0, ""}};
}

TEST(PlanTest, StartsMapToSlotsAndMissingEstimatesAreListScheduled) {
  PlanInput input = two_machine_input();
  Decision decision;
  decision.start = {{"a", 1}};  // a starts now on the CPU bundle, busy until 1400
  Plan plan = make_plan(input, decision, slots(), 0.001);
  EXPECT_EQ(7u, plan.version);
  ASSERT_EQ(1u, plan.starts.count("a"));
  EXPECT_EQ("n2", plan.starts.at("a").node);
  EXPECT_EQ("cpu", plan.starts.at("a").device);
  // In arrival-then-id order: b on the GPU at 1100 (done 1130), then c on the GPU at 1130.
  ASSERT_EQ(2u, plan.waiting.size());
  EXPECT_EQ(1, plan.waiting.at("b").position);
  EXPECT_DOUBLE_EQ(1100, plan.waiting.at("b").estimated_start.value());
  EXPECT_EQ(2, plan.waiting.at("c").position);
  EXPECT_DOUBLE_EQ(1130, plan.waiting.at("c").estimated_start.value());
  EXPECT_EQ(2, plan.waiting.at("c").queue_length);
}

TEST(PlanTest, PolicyEstimatesWinAndOrderPositions) {
  PlanInput input = two_machine_input();
  Decision decision;
  decision.estimated_start = {{"a", 2000}, {"b", 1500}, {"c", 1800}};
  Plan plan = make_plan(input, decision, slots(), 0);
  EXPECT_EQ(1, plan.waiting.at("b").position);
  EXPECT_EQ(2, plan.waiting.at("c").position);
  EXPECT_EQ(3, plan.waiting.at("a").position);
  EXPECT_DOUBLE_EQ(1800, plan.waiting.at("c").estimated_start.value());
}

TEST(PlanTest, PolicyErrorIsKept) {
  Plan plan = make_plan(two_machine_input(), Error{"matcher failed"}, slots(), 0);
  EXPECT_EQ("matcher failed", plan.error);
  EXPECT_TRUE(plan.starts.empty());
}

// Records where and how a plan was freed: on which thread, and whether another thread could take
// the board's lock meanwhile (latest() answered within a second).
struct FreeRecord {
  std::atomic<bool> freed{false};
  std::thread::id on;
  bool lock_free = false;
  std::thread probe;
};

std::shared_ptr<const Plan> recorded_plan(PlanBoard& board, FreeRecord& record,
                                          std::uint64_t version) {
  auto* plan = new Plan;
  plan->version = version;
  return std::shared_ptr<const Plan>(plan, [&board, &record](const Plan* p) {
    std::atomic<bool> answered{false};
    record.probe = std::thread([&board, &answered] {
      (void)board.latest();
      answered = true;
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (!answered && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    record.lock_free = answered;
    record.on = std::this_thread::get_id();
    if (answered) record.probe.join();  // else joined by the test, once the lock is released
    delete p;
    record.freed = true;
  });
}

TEST(PlanBoardTest, AReplacedPlanNoReaderHoldsIsFreedByThePublisherOutsideTheLock) {
  PlanBoard board;
  FreeRecord a;
  board.publish(recorded_plan(board, a, 1));
  board.publish(std::make_shared<const Plan>());
  ASSERT_TRUE(a.freed);
  if (a.probe.joinable()) a.probe.join();
  EXPECT_TRUE(a.lock_free) << "freed under the board's lock";
  EXPECT_EQ(std::this_thread::get_id(), a.on);
  EXPECT_EQ(0u, board.retired());
}

TEST(PlanBoardTest, TheLastReaderOfAReplacedPlanNeverFreesIt) {
  PlanBoard board;
  FreeRecord a;
  board.publish(recorded_plan(board, a, 1));
  std::shared_ptr<const Plan> held = board.latest();  // a /filter reading plan 1
  board.publish(std::make_shared<const Plan>());      // plan 2 replaces it meanwhile
  EXPECT_FALSE(a.freed);
  EXPECT_EQ(1u, board.retired());
  std::thread([held = std::move(held)]() mutable { held.reset(); }).join();  // the reader ends
  EXPECT_FALSE(a.freed) << "freed by its last reader";
  board.publish(std::make_shared<const Plan>());  // the next plan frees it, here
  ASSERT_TRUE(a.freed);
  if (a.probe.joinable()) a.probe.join();
  EXPECT_TRUE(a.lock_free);
  EXPECT_EQ(std::this_thread::get_id(), a.on);
  EXPECT_EQ(0u, board.retired());
  EXPECT_EQ(0u, board.latest()->version);
}

// plan_needed: a plan is skipped only where it would repeat the latest one; one that may
// differ (a new book version, a caller's request, the tick with jobs whose estimates move with
// the clock) is always solved.
TEST(PlanNeededTest, OnlyAPlanThatWouldRepeatTheLatestIsSkipped) {
  struct Case {
    const char* what;
    PlanCause cause;
    std::uint64_t latest, book;
    std::size_t queued;
    bool needed;
  };
  const Case cases[] = {
      {"a change at a new version", PlanCause::kChange, 7, 8, 0, true},
      {"a change at a new version, jobs queued", PlanCause::kChange, 7, 8, 3, true},
      {"a wake at the plan's version", PlanCause::kChange, 8, 8, 3, false},
      {"a wake at the plan's version, nothing queued", PlanCause::kChange, 8, 8, 0, false},
      {"the tick with jobs queued", PlanCause::kTick, 8, 8, 3, true},
      {"the tick with nothing queued", PlanCause::kTick, 8, 8, 0, false},
      {"the tick at a new version", PlanCause::kTick, 7, 8, 0, true},
      {"asked for", PlanCause::kAsked, 8, 8, 0, true},
      {"the first plan", PlanCause::kAsked, 0, 1, 0, true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.needed, plan_needed(c.cause, c.latest, c.book, c.queued)) << c.what;
  }
}

}  // namespace
}  // namespace allox::extender
