// alloxd/plan/planner.h's record_start under concurrent binds: the calls in flight together are
// recorded as one group (one hold of the writers' lock, one store transaction), and each caller
// still gets its own answer, durable as before. And complete_all, the watch's burst of ends:
// one transaction, an answer per job.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "alloxd/plan/planner.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

constexpr int kJobs = 48;

std::vector<NodeInventory> one_gpu_nodes(int n) {
  std::vector<NodeInventory> nodes;
  for (int i = 0; i < n; ++i) nodes.push_back({"n" + std::to_string(i), {{"gpu", 1}}});
  return nodes;
}

struct Books {
  testing::ScratchDir dir;
  ExtenderConfig config = testing::make_config(one_gpu_nodes(kJobs), dir.file("state.db"));
  Metrics metrics;

  std::unique_ptr<Planner> open() { return testing::open_fifo_planner(config, metrics); }
  // A planner over the store with jobs 0..kJobs-1 queued (null on a failure, reported).
  std::unique_ptr<Planner> open_with_jobs() {
    auto planner = open();
    for (int j = 0; planner && j < kJobs; ++j) {
      auto registered = planner->register_variant(variant(j), Durability::kWritten);
      EXPECT_TRUE(registered.ok()) << registered.message();
      if (!registered) return nullptr;
    }
    return planner;
  }
  JobVariant variant(int job) const {
    auto pod = testing::make_pod("lab", "p" + std::to_string(job), "nvidia.com/gpu",
                                 {{"allox.io/job", "j" + std::to_string(job)}});
    auto read = read_job_variant(pod, config.devices);
    EXPECT_TRUE(read.ok()) << read.message();
    return *read;
  }
};

// Every thread starts at once, so most calls find a group forming or being recorded.
template <class Call>
void all_at_once(int threads, Call call) {
  std::atomic<int> ready{0};
  std::vector<std::thread> running;
  for (int i = 0; i < threads; ++i) {
    running.emplace_back([&, i] {
      ++ready;
      while (ready.load() < threads) std::this_thread::yield();
      call(i);
    });
  }
  for (auto& t : running) t.join();
}

TEST(PlannerStartsTest, ConcurrentStartsAreEachAnsweredAndSurviveARestart) {
  Books books;
  {
    auto planner = books.open_with_jobs();
    ASSERT_NE(nullptr, planner);
    std::vector<std::string> errors(kJobs);
    std::vector<std::string> nodes(kJobs);
    all_at_once(kJobs, [&](int j) {
      auto started = planner->record_start(books.variant(j), "n" + std::to_string(j), -1,
                                           Durability::kWritten);
      if (!started) {
        errors[j] = started.message();
        return;
      }
      nodes[j] = started->record.node;
    });
    for (int j = 0; j < kJobs; ++j) {
      EXPECT_EQ("", errors[j]) << "job " << j;
      EXPECT_EQ("n" + std::to_string(j), nodes[j]) << "job " << j;
    }
    planner->read([&](const JobBook& book) {
      EXPECT_EQ(static_cast<std::size_t>(kJobs), book.running_count());
      for (int j = 0; j < kJobs; ++j) {
        EXPECT_EQ(0, book.capacity("n" + std::to_string(j), "gpu").free) << "node n" << j;
      }
    });
  }
  // The store has every start: a restart finds each job running where it was bound.
  auto reopened = books.open();
  ASSERT_NE(nullptr, reopened);
  reopened->read([&](const JobBook& book) {
    EXPECT_EQ(static_cast<std::size_t>(kJobs), book.running_count());
    for (int j = 0; j < kJobs; ++j) {
      const BookJob* job = book.job("lab/j" + std::to_string(j));
      ASSERT_NE(nullptr, job) << "job " << j;
      EXPECT_EQ(JobPhase::kRunning, job->record.phase) << "job " << j;
      EXPECT_EQ("n" + std::to_string(j), job->record.node) << "job " << j;
    }
  });
}

TEST(PlannerStartsTest, AGroupAnswersRepeatsAndRefusalsOneByOne) {
  Books books;
  auto planner = books.open_with_jobs();
  ASSERT_NE(nullptr, planner);
  // Threads 0-15 bind job 0 to n0 (the watch and /bind reporting one binding: a repeat, not a
  // second start); threads 16-31 bind jobs 1-16 onto n1 (one machine: a single one can win);
  // threads 32-47 bind jobs 17-32 to nodes of their own.
  std::vector<std::string> errors(kJobs);
  all_at_once(kJobs, [&](int i) {
    int job = 0;
    std::string node = "n0";
    if (i >= 16 && i < 32) {
      job = i - 15;
      node = "n1";
    } else if (i >= 32) {
      job = i - 15;
      node = "n" + std::to_string(job);
    }
    auto started = planner->record_start(books.variant(job), node, -1, Durability::kWritten);
    if (!started) errors[i] = started.message();
  });
  for (int i = 0; i < 16; ++i) EXPECT_EQ("", errors[i]) << "repeat " << i;
  int won_n1 = 0;
  for (int i = 16; i < 32; ++i) {
    if (errors[i].empty()) {
      ++won_n1;
    } else {
      EXPECT_NE(std::string::npos, errors[i].find("no free")) << errors[i];
    }
  }
  EXPECT_EQ(1, won_n1);
  for (int i = 32; i < kJobs; ++i) EXPECT_EQ("", errors[i]) << "thread " << i;
  planner->read([&](const JobBook& book) {
    EXPECT_EQ(static_cast<std::size_t>(1 + 1 + 16), book.running_count());
    EXPECT_EQ(JobPhase::kRunning, book.job("lab/j0")->record.phase);
  });
}

// An admin's removal racing a /bind of the same job: whichever the book sees first wins, the
// other is refused, and the book's counts stay whole (a removed job started anyway was counted
// out of the queue twice, and the next plan's snapshot reserved 2^64 jobs).
TEST(PlannerStartsTest, ARemovedJobIsNeitherBoundNorStarted) {
  Books books;
  auto planner = books.open_with_jobs();
  ASSERT_NE(nullptr, planner);
  const JobVariant removed = books.variant(0);
  ASSERT_TRUE(planner->remove(removed.job_id).ok());
  // /bind read the job queued before the removal: its intent is refused, so the API server
  // never hears of the bind.
  auto intent = planner->record_bind_intent(
      BindIntent{1, removed.job_id, removed.pod, "n0", "gpu", planner->now()});
  EXPECT_EQ("job lab/j0 is removed, not queued: not bound", intent.message());
  // Its intent was written before the removal: the start that follows is refused.
  auto started = planner->record_start(removed, "n0", -1, Durability::kWritten);
  EXPECT_EQ("job lab/j0 is removed; only a queued job starts", started.message());
  planner->read([&](const JobBook& book) {
    EXPECT_EQ(JobPhase::kRemoved, book.job("lab/j0")->record.phase);
    EXPECT_EQ(static_cast<std::size_t>(kJobs - 1), book.queued_count());
    EXPECT_EQ(0u, book.running_count());
    EXPECT_EQ(static_cast<std::size_t>(kJobs - 1), book.snapshot(planner->now()).state.queue.size());
  });
  // A queued job still binds and starts.
  const JobVariant queued = books.variant(1);
  EXPECT_TRUE(planner
                  ->record_bind_intent(
                      BindIntent{2, queued.job_id, queued.pod, "n1", "gpu", planner->now()})
                  .ok());
  EXPECT_TRUE(planner->record_start(queued, "n1", -1, Durability::kWritten).ok());
}

TEST(PlannerStartsTest, ABurstOfEndsAnswersEachJobAndSurvivesARestart) {
  Books books;
  {
    auto planner = books.open_with_jobs();
    ASSERT_NE(nullptr, planner);
    for (int j = 0; j < 4; ++j) {
      auto started = planner->record_start(books.variant(j), "n" + std::to_string(j), -1,
                                           Durability::kWritten);
      ASSERT_TRUE(started.ok()) << started.message();
    }
    const std::vector<Status> outcomes = planner->complete_all(
        {"lab/j0", "lab/j1", "lab/j0", "lab/j2", "lab/nobody", "lab/j20"}, Durability::kWritten);
    ASSERT_EQ(6u, outcomes.size());
    for (int i : {0, 1, 2, 3}) EXPECT_TRUE(outcomes[i].ok()) << i << ": " << outcomes[i].message();
    EXPECT_NE(std::string::npos, outcomes[4].message().find("unknown")) << outcomes[4].message();
    EXPECT_NE(std::string::npos, outcomes[5].message().find("queued, not running"))
        << outcomes[5].message();
    planner->read([&](const JobBook& book) {
      for (int j = 0; j < 3; ++j) {
        EXPECT_EQ(JobPhase::kDone, book.job("lab/j" + std::to_string(j))->record.phase) << j;
        EXPECT_EQ(1, book.capacity("n" + std::to_string(j), "gpu").free) << "node n" << j;
      }
      EXPECT_EQ(JobPhase::kRunning, book.job("lab/j3")->record.phase);
      EXPECT_EQ(JobPhase::kQueued, book.job("lab/j20")->record.phase);
    });
  }
  auto reopened = books.open();
  ASSERT_NE(nullptr, reopened);
  reopened->read([&](const JobBook& book) {
    for (int j = 0; j < 3; ++j) {
      EXPECT_EQ(JobPhase::kDone, book.job("lab/j" + std::to_string(j))->record.phase) << j;
    }
    EXPECT_EQ(JobPhase::kRunning, book.job("lab/j3")->record.phase);
  });
}

}  // namespace
}  // namespace allox::extender
