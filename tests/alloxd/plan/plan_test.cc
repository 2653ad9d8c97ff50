// alloxd/plan/plan.h: starts map to slots; waiting jobs get positions and estimated starts, the
// policy's where it gave them, else a list schedule onto machines as they free up. PlanBoard
// frees replaced plans on the publisher's thread, outside its lock.
#include "alloxd/plan/plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <random>
#include <thread>
#include <tuple>

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

// The list schedule against the rule it states, machine by machine: each job in order to the
// machine where it finishes first (ties: the lowest machine), on random clusters of three types
// with busy machines and this round's starts. Whole seconds, so ties are exact.
TEST(PlanTest, TheListScheduleIsEachJobOnItsEarliestFinishingMachine) {
  std::mt19937 random(11);
  auto draw = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(random); };
  const std::vector<DeviceType> types = {"a100", "cpu", "h100"};
  for (int instance = 0; instance < 200; ++instance) {
    PlanInput input;
    ClusterState& state = input.state;
    state.now = 1000;
    std::vector<MachineSlot> slots;
    const int machines = draw(1, 12);
    for (int m = 0; m < machines; ++m) {
      const DeviceType& device = types[static_cast<std::size_t>(draw(0, 2))];
      const bool busy = draw(0, 2) == 0;
      state.machines.push_back({"n" + std::to_string(m) + "/" + device, device,
                                busy ? 1000.0 + draw(1, 300) : 0.0, "n" + std::to_string(m)});
      state.idle.push_back(!busy);
      slots.push_back({"n" + std::to_string(m), device, 0, ""});
    }
    const int jobs = draw(1, 30);
    for (int j = 0; j < jobs; ++j) {
      Job job;
      job.id = "j" + std::to_string(100 + j);
      job.arrival = 900 + draw(0, 5);
      for (const DeviceType& device : types) {
        if (draw(0, 2) > 0) job.time[device] = draw(1, 100);
      }
      input.jobs.push_back(std::make_shared<const Job>(job));
      state.queue.push_back({input.jobs.back().get(), job.arrival, 0, {}});
    }
    // The first idle machine starts the first job that runs there, as a policy would.
    Decision decision;
    for (std::size_t m = 0; m < state.machines.size() && decision.start.empty(); ++m) {
      if (!state.idle[m]) continue;
      for (const QueuedJob& q : state.queue) {
        if (q.job->time_on(state.machines[m].device)) {
          decision.start.push_back({q.job->id, m});
          break;
        }
      }
    }
    const Plan plan = make_plan(input, decision, slots, 0);

    // The rule, machine by machine.
    std::vector<double> free_at(state.machines.size(), state.now);
    for (std::size_t m = 0; m < free_at.size(); ++m) {
      if (!state.idle[m]) free_at[m] = state.machines[m].busy_until;
    }
    std::vector<const Job*> waiting;
    for (const auto& job : input.jobs) {
      if (!decision.start.empty() && decision.start[0].job_id == job->id) {
        const std::size_t m = decision.start[0].machine;
        free_at[m] = state.now + *job->time_on(state.machines[m].device);
        continue;
      }
      waiting.push_back(job.get());
    }
    std::stable_sort(waiting.begin(), waiting.end(), [](const Job* x, const Job* y) {
      return std::tie(x->arrival, x->id) < std::tie(y->arrival, y->id);
    });
    for (const Job* job : waiting) {
      std::size_t best = free_at.size();
      double best_finish = std::numeric_limits<double>::infinity();
      for (std::size_t m = 0; m < free_at.size(); ++m) {
        auto p = job->time_on(state.machines[m].device);
        if (p && free_at[m] + *p < best_finish) best = m, best_finish = free_at[m] + *p;
      }
      ASSERT_EQ(1u, plan.waiting.count(job->id)) << instance << " " << job->id;
      const PlannedWait& wait = plan.waiting.at(job->id);
      if (best == free_at.size()) {
        EXPECT_FALSE(wait.estimated_start.has_value()) << instance << " " << job->id;
        continue;
      }
      ASSERT_TRUE(wait.estimated_start.has_value()) << instance << " " << job->id;
      EXPECT_EQ(free_at[best], *wait.estimated_start) << instance << " " << job->id;
      free_at[best] = best_finish;
    }
  }
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
