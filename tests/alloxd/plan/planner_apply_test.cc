// alloxd/plan/planner.h's one write path, apply(): a batch of mixed changes is one store
// transaction with an outcome each, a change the database refuses fails alone, concurrent
// callers share one group commit as durable as its strictest change, an answered change survives
// a kill -9, and the lock order (the writers', the store's, the book's) lets readers in while a
// group commits.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "alloxd/plan/planner.h"
#include "fairness/policy.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

constexpr int kJobs = 8;

template <class T>
Status status_of(const Expected<T>& e) {
  return e.ok() ? OkStatus() : Status(e.error());
}

// A second connection to the store's file: a trigger that refuses a row, like a broken disk
// would refuse one change and not the others.
class RawDb {
 public:
  explicit RawDb(const std::string& path) { sqlite3_open(path.c_str(), &db_); }
  ~RawDb() { sqlite3_close(db_); }
  int exec(const std::string& sql) {
    return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  }

 private:
  sqlite3* db_ = nullptr;
};

struct Books {
  testing::ScratchDir dir;
  ExtenderConfig config = testing::make_config(nodes(), dir.file("state.db"));
  Metrics metrics;

  static std::vector<NodeInventory> nodes() {
    std::vector<NodeInventory> out;
    for (int i = 0; i < kJobs; ++i) out.push_back({"n" + std::to_string(i), {{"gpu", 1}}});
    return out;
  }
  std::unique_ptr<Planner> open(PlannerOptions::GroupHooks hooks = {}) {
    PlannerOptions options;
    options.inventory = config.nodes;
    options.group_hooks = std::move(hooks);
    auto made =
        Planner::create(config, make_policy("fifo", PolicyOptions{}).value(), metrics, options);
    EXPECT_TRUE(made.ok()) << made.message();
    return made.ok() ? std::move(*made) : nullptr;
  }
  JobVariant variant(int job, const std::string& suffix = "") const {
    auto pod = testing::make_pod("lab", "p" + std::to_string(job) + suffix, "nvidia.com/gpu",
                                 {{"allox.io/job", "j" + std::to_string(job)}});
    auto read = read_job_variant(pod, config.devices);
    EXPECT_TRUE(read.ok()) << read.message();
    return *read;
  }
  std::string job(int j) const { return "lab/j" + std::to_string(j); }
  BindIntent intent(const Planner& planner, int j) const {
    const std::int64_t row =
        planner.read([&](const JobBook& book) { return book.job(job(j))->record.row; });
    return {row, job(j), variant(j).pod, "n" + std::to_string(j), "gpu", 1};
  }
  // Store commits so far, synced and written (/metrics' allox_store_write_duration_seconds).
  std::pair<std::uint64_t, std::uint64_t> commits() const {
    const std::string text = metrics.render();
    auto count = [&](const char* labels) -> std::uint64_t {
      auto buckets = read_histogram(text, "allox_store_write_duration_seconds", labels);
      return buckets.empty() ? 0 : buckets.back().cumulative;
    };
    return {count("durability=\"synced\""), count("durability=\"written\"")};
  }
};

// Jobs 0..n-1 registered; jobs 0 and 1 started on n0 and n1.
void queue_and_start_two(Books& books, Planner& planner, int n) {
  for (int j = 0; j < n; ++j) {
    ASSERT_TRUE(planner.register_variant(books.variant(j), Durability::kWritten).ok());
  }
  for (int j = 0; j < 2; ++j) {
    ASSERT_TRUE(
        planner.record_start(books.variant(j), "n" + std::to_string(j), -1, Durability::kWritten)
            .ok());
  }
}

TEST(PlannerApplyTest, AMixedBatchIsOneTransactionWithAnOutcomeEach) {
  Books books;
  {
    auto planner = books.open();
    ASSERT_NE(nullptr, planner);
    queue_and_start_two(books, *planner, 6);
    ASSERT_TRUE(planner->register_variant(books.variant(5, "-b"), Durability::kWritten).ok());
    const auto before = books.commits();
    // A new job and a second pod of job 2, a completion, an intent, a start and an admission,
    // all in one batch: one transaction, synced (the intent's), and every change in the book.
    const std::vector<BookChange> batch = {
        book::RegisterVariant{books.variant(7), Durability::kWritten},
        book::RegisterVariant{books.variant(2, "-b"), Durability::kWritten},
        book::Complete{books.job(0), Durability::kWritten},
        book::RecordBindIntent{books.intent(*planner, 3)},
        book::Start{books.variant(4), "n4", -1, Durability::kWritten},
        book::Admit{books.job(5), "lab/p5", PlannedStart{"n5", "gpu", 5}},
    };
    const std::vector<Status> outcomes = planner->apply(batch);
    ASSERT_EQ(batch.size(), outcomes.size());
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
      EXPECT_TRUE(outcomes[i].ok()) << i << ": " << outcomes[i].message();
    }
    const auto after = books.commits();
    EXPECT_EQ(before.first + 1, after.first) << "synced commits";
    EXPECT_EQ(before.second, after.second) << "written commits";
    planner->read([&](const JobBook& book) {
      ASSERT_NE(nullptr, book.job(books.job(7)));
      EXPECT_EQ(JobPhase::kQueued, book.job(books.job(7))->record.phase);
      EXPECT_EQ(JobPhase::kDone, book.job(books.job(0))->record.phase);
      EXPECT_EQ(JobPhase::kRunning, book.job(books.job(4))->record.phase);
      EXPECT_EQ(2u, book.job(books.job(2))->variants.size());
      EXPECT_EQ(1u, book.job(books.job(5))->variants.size());  // the admission's sibling left
    });
    EXPECT_EQ("lab/p5", planner->admitted_as(books.job(5)).value_or("(none)"));
  }
  auto reopened = books.open();
  ASSERT_NE(nullptr, reopened);
  reopened->read([&](const JobBook& book) {
    EXPECT_EQ(JobPhase::kQueued, book.job(books.job(7))->record.phase);
    EXPECT_EQ(JobPhase::kDone, book.job(books.job(0))->record.phase);
    EXPECT_EQ(JobPhase::kRunning, book.job(books.job(4))->record.phase);
    EXPECT_EQ(2u, book.job(books.job(2))->variants.size());
    EXPECT_EQ(1u, book.job(books.job(5))->variants.size());
    ASSERT_TRUE(book.job(books.job(3))->intent.has_value());
    EXPECT_EQ("n3", book.job(books.job(3))->intent->node);
  });
}

TEST(PlannerApplyTest, AChangeTheStoreRefusesFailsOnlyItself) {
  Books books;
  {
    auto planner = books.open();
    ASSERT_NE(nullptr, planner);
    queue_and_start_two(books, *planner, 4);
    RawDb raw(books.config.database);
    ASSERT_EQ(SQLITE_OK,
              raw.exec("CREATE TRIGGER refuse BEFORE INSERT ON bind_intents WHEN "
                       "NEW.job_id = 'lab/j2' BEGIN SELECT RAISE(ABORT, 'refused'); END"));
    const auto before = books.commits();
    const std::vector<BookChange> batch = {
        book::RegisterVariant{books.variant(6), Durability::kWritten},
        book::RecordBindIntent{books.intent(*planner, 2)},
        book::RecordBindIntent{books.intent(*planner, 3)},
        book::Complete{books.job(1), Durability::kWritten},
        book::Complete{books.job(5), Durability::kWritten},  // never registered: the book says no
    };
    const std::vector<Status> outcomes = planner->apply(batch);
    ASSERT_EQ(batch.size(), outcomes.size());
    EXPECT_TRUE(outcomes[0].ok()) << outcomes[0].message();
    EXPECT_NE(std::string::npos, outcomes[1].message().find("refused")) << outcomes[1].message();
    EXPECT_TRUE(outcomes[2].ok()) << outcomes[2].message();
    EXPECT_TRUE(outcomes[3].ok()) << outcomes[3].message();
    EXPECT_NE(std::string::npos, outcomes[4].message().find("unknown")) << outcomes[4].message();
    // Still one transaction: the refused row was rolled back to its savepoint alone.
    EXPECT_EQ(before.first + 1, books.commits().first);
    planner->read([&](const JobBook& book) {
      EXPECT_NE(nullptr, book.job(books.job(6)));
      EXPECT_EQ(JobPhase::kDone, book.job(books.job(1))->record.phase);
    });
  }
  auto reopened = books.open();
  ASSERT_NE(nullptr, reopened);
  reopened->read([&](const JobBook& book) {
    EXPECT_NE(nullptr, book.job(books.job(6)));
    EXPECT_EQ(JobPhase::kDone, book.job(books.job(1))->record.phase);
    EXPECT_FALSE(book.job(books.job(2))->intent.has_value());
    EXPECT_TRUE(book.job(books.job(3))->intent.has_value());
  });
}

TEST(PlannerApplyTest, ConcurrentCallersShareOneCommitAndKeepTheirOwnOutcome) {
  // The first caller's group is held (before its transaction) until the other callers, of
  // several kinds, all synced, have queued: they are then committed together, as one group, one
  // transaction. One of them is refused by the database: only its caller gets the error.
  Books books;
  std::mutex mu;
  std::condition_variable cv;
  std::size_t queued = 0;
  std::vector<std::size_t> groups;
  bool armed = false;  // the hooks look only at the calls after the set-up's
  constexpr std::size_t kOthers = 5;
  auto planner = books.open({[&](std::size_t n) {
                               std::lock_guard lock(mu);
                               if (!armed) return;
                               queued = n;
                               cv.notify_all();
                             },
                             [&](std::size_t batches) {
                               std::unique_lock lock(mu);
                               if (!armed) return;
                               groups.push_back(batches);
                               cv.notify_all();  // the test starts the others now
                               if (groups.size() == 1) {
                                 // Bounded only so that a broken grouping fails instead of
                                 // hanging.
                                 cv.wait_for(lock, std::chrono::seconds(10),
                                             [&] { return queued == kOthers; });
                               }
                             }});
  ASSERT_NE(nullptr, planner);
  queue_and_start_two(books, *planner, 6);
  RawDb raw(books.config.database);
  ASSERT_EQ(SQLITE_OK, raw.exec("CREATE TRIGGER refuse BEFORE INSERT ON bind_intents WHEN "
                                "NEW.job_id = 'lab/j3' BEGIN SELECT RAISE(ABORT, 'refused'); END"));
  {
    std::lock_guard lock(mu);
    armed = true;
  }
  const auto before = books.commits();
  std::vector<Status> outcomes(1 + kOthers, OkStatus());
  std::vector<std::thread> threads;
  threads.emplace_back(
      [&] { outcomes[0] = planner->record_bind_intent(books.intent(*planner, 2)); });
  {
    std::unique_lock lock(mu);  // the first group has begun before the others arrive
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return !groups.empty(); }));
  }
  const BindIntent refused = books.intent(*planner, 3);
  const BindIntent fourth = books.intent(*planner, 4);
  const JobVariant fifth = books.variant(5);
  threads.emplace_back([&] { outcomes[1] = planner->record_bind_intent(refused); });
  threads.emplace_back([&] { outcomes[2] = planner->record_bind_intent(fourth); });
  threads.emplace_back([&] { outcomes[3] = planner->complete(books.job(0), Durability::kSynced); });
  threads.emplace_back([&] {
    outcomes[4] = status_of(planner->record_start(fifth, "n5", -1, Durability::kSynced));
  });
  threads.emplace_back([&] {
    outcomes[5] = status_of(planner->register_variant(books.variant(7), Durability::kSynced));
  });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ((std::vector<std::size_t>{1, kOthers}), groups);
  EXPECT_EQ(before.first + 2, books.commits().first) << "one synced commit per group";
  EXPECT_EQ(before.second, books.commits().second);
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    EXPECT_EQ(i != 1, outcomes[i].ok()) << i << ": " << outcomes[i].message();
  }
  planner->read([&](const JobBook& book) {
    EXPECT_EQ(JobPhase::kDone, book.job(books.job(0))->record.phase);
    EXPECT_EQ(JobPhase::kRunning, book.job(books.job(5))->record.phase);
    EXPECT_NE(nullptr, book.job(books.job(7)));
  });
  auto state = Store::open_for_reading(books.config.database).value()->load();
  ASSERT_TRUE(state.ok()) << state.message();
  std::set<std::string> intents;
  for (const BindIntent& intent : state->intents) intents.insert(intent.job_id);
  EXPECT_EQ((std::set<std::string>{books.job(2), books.job(4)}), intents);
}

TEST(PlannerApplyTest, AWrittenBatchQueuedBesideSyncedOnesIsNotHeldForTheirFsync) {
  // While a synced group commits, a written batch (the watch's) and a synced one (a bind's
  // intent) queue in that order: each goes in a group of its own class, the written one first
  // and as a written commit, so the watch never waits for a bind's fsync.
  Books books;
  std::mutex mu;
  std::condition_variable cv;
  std::size_t queued = 0;
  std::vector<std::size_t> groups;
  bool armed = false;  // the hooks look only at the calls after the set-up's
  auto planner =
      books.open({[&](std::size_t n) {
                    std::lock_guard lock(mu);
                    if (!armed) return;
                    queued = n;
                    cv.notify_all();
                  },
                  [&](std::size_t batches) {
                    std::unique_lock lock(mu);
                    if (!armed) return;
                    groups.push_back(batches);
                    cv.notify_all();
                    if (groups.size() == 1) {
                      cv.wait_for(lock, std::chrono::seconds(10), [&] { return queued == 2; });
                    }
                  }});
  ASSERT_NE(nullptr, planner);
  queue_and_start_two(books, *planner, 4);
  {
    std::lock_guard lock(mu);
    armed = true;
  }
  const BindIntent first = books.intent(*planner, 2);
  const BindIntent last = books.intent(*planner, 3);
  const auto before = books.commits();
  std::vector<Status> outcomes(3, OkStatus());
  std::vector<std::thread> threads;
  threads.emplace_back([&] { outcomes[0] = planner->record_bind_intent(first); });
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return !groups.empty(); }));
  }
  threads.emplace_back(
      [&] { outcomes[1] = planner->complete(books.job(0), Durability::kWritten); });
  {
    std::unique_lock lock(mu);  // the written batch is queued first
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return queued == 1; }));
  }
  threads.emplace_back([&] { outcomes[2] = planner->record_bind_intent(last); });
  for (std::thread& t : threads) t.join();
  for (const Status& s : outcomes) EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ((std::vector<std::size_t>{1, 1, 1}), groups);
  EXPECT_EQ(before.first + 2, books.commits().first);
  EXPECT_EQ(before.second + 1, books.commits().second);
}

TEST(PlannerApplyTest, AGroupIsAsDurableAsItsStrictestChange) {
  Books books;
  auto planner = books.open();
  ASSERT_NE(nullptr, planner);
  queue_and_start_two(books, *planner, 4);
  auto before = books.commits();
  // Written changes alone: one written commit.
  const std::vector<BookChange> written = {
      book::RegisterVariant{books.variant(5), Durability::kWritten},
      book::Complete{books.job(0), Durability::kWritten},
  };
  for (const Status& s : planner->apply(written)) ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(before.first, books.commits().first);
  EXPECT_EQ(before.second + 1, books.commits().second);
  // One synced change among written ones: the whole transaction is synced.
  before = books.commits();
  const std::vector<BookChange> mixed = {
      book::RegisterVariant{books.variant(6), Durability::kWritten},
      book::Complete{books.job(1), Durability::kSynced},
      book::Start{books.variant(2), "n2", -1, Durability::kWritten},
  };
  for (const Status& s : planner->apply(mixed)) ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(before.first + 1, books.commits().first);
  EXPECT_EQ(before.second, books.commits().second);
  // Nothing to write (a pod as it is, a repeated start): no transaction at all.
  before = books.commits();
  const std::vector<BookChange> unchanged = {
      book::RegisterVariant{books.variant(5), Durability::kSynced},
      book::Start{books.variant(2), "n2", -1, Durability::kSynced},
  };
  for (const Status& s : planner->apply(unchanged)) ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(before, books.commits());
}

TEST(PlannerApplyTest, ChangesToOneJobInOneGroupApplyInOrder) {
  // A start, its completion and the job's pod registered again, in one batch: as if applied
  // one after the other (the completion and the new run wait for the next group of the commit).
  Books books;
  auto planner = books.open();
  ASSERT_NE(nullptr, planner);
  queue_and_start_two(books, *planner, 4);
  JobVariant again = books.variant(3);
  again.pod.uid = "second-run";
  const std::vector<BookChange> batch = {
      book::Start{books.variant(3), "n3", -1, Durability::kWritten},
      book::Complete{books.job(3), Durability::kWritten},
      book::Complete{books.job(3), Durability::kWritten},  // a repeat: answered as the first
      book::RegisterVariant{again, Durability::kWritten},
  };
  const std::vector<Status> outcomes = planner->apply(batch);
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    EXPECT_TRUE(outcomes[i].ok()) << i << ": " << outcomes[i].message();
  }
  planner->read([&](const JobBook& book) {
    const BookJob* job = book.job(books.job(3));
    ASSERT_NE(nullptr, job);
    EXPECT_EQ(JobPhase::kQueued, job->record.phase) << "a new run of the finished job";
    EXPECT_EQ(1, book.capacity("n3", "gpu").free);
  });
}

TEST(PlannerApplyTest, ReadersAreNotHeldWhileAGroupHoldsTheWritersLock) {
  // The lock order: writers' lock, then the store's transaction, then the book's lock in
  // chunks. While a group holds the writers' lock (its hook runs there, before the store), the
  // book's lock is free: a reader on another thread reads at once, and the group then applies.
  Books books;
  std::unique_ptr<Planner> planner;
  std::atomic<bool> read_during_commit{false};
  planner = books.open({{}, [&](std::size_t) {
                          std::thread reader([&] {
                            planner->read([&](const JobBook&) { read_during_commit = true; });
                          });
                          reader.join();
                        }});
  ASSERT_NE(nullptr, planner);
  ASSERT_TRUE(planner->register_variant(books.variant(0), Durability::kWritten).ok());
  EXPECT_TRUE(read_during_commit.load());
  planner->read([&](const JobBook& book) { EXPECT_NE(nullptr, book.job(books.job(0))); });
}

TEST(PlannerApplyTest, AnAnsweredChangeSurvivesAKill9) {
  // Eight threads record intents and starts as binds would, each telling the "API server" (a
  // pipe) the moment its call returned; the process is killed mid-stream. Every change the pipe
  // heard of must be in the store: a group is never answered before it is written.
  testing::ScratchDir dir;
  constexpr int kMany = 400;
  constexpr int kThreads = 8;
  std::vector<NodeInventory> nodes;
  for (int i = 0; i < kMany; ++i) nodes.push_back({"n" + std::to_string(i), {{"gpu", 1}}});
  ExtenderConfig config = testing::make_config(nodes, dir.file("state.db"));
  auto variant = [&](int j) {
    return read_job_variant(testing::make_pod("lab", "p" + std::to_string(j), "nvidia.com/gpu",
                                              {{"allox.io/job", "j" + std::to_string(j)}}),
                            config.devices)
        .value();
  };
  {
    Metrics metrics;
    auto planner = testing::open_fifo_planner(config, metrics);
    ASSERT_NE(nullptr, planner);
    std::vector<JobVariant> all;
    for (int j = 0; j < kMany; ++j) all.push_back(variant(j));
    for (const Status& s : planner->register_variants(all, Durability::kWritten)) {
      ASSERT_TRUE(s.ok()) << s.message();
    }
  }
  int pipe_fds[2];
  ASSERT_EQ(0, ::pipe(pipe_fds));
  EXPECT_EXIT(
      {
        Metrics metrics;
        auto planner = testing::open_fifo_planner(config, metrics);
        if (planner == nullptr) std::_Exit(1);
        std::atomic<int> told{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
          threads.emplace_back([&, t] {
            for (int j = t; j < kMany; j += kThreads) {
              // Odd jobs: an intent (synced); even ones: a start (synced).
              Status s = OkStatus();
              if (j % 2) {
                const std::int64_t row = planner->read([&](const JobBook& b) {
                  return b.job("lab/j" + std::to_string(j))->record.row;
                });
                s = planner->record_bind_intent(
                    {row, "lab/j" + std::to_string(j), variant(j).pod, "n1", "gpu", 1});
              } else {
                s = status_of(planner->record_start(variant(j), "n" + std::to_string(j), -1));
              }
              if (!s.ok()) std::_Exit(3);
              if (::write(pipe_fds[1], &j, sizeof j) != sizeof j) std::_Exit(4);
              if (++told == kMany / 2) std::raise(SIGKILL);  // binds in full flow
            }
          });
        }
        for (std::thread& t : threads) t.join();
        std::_Exit(5);  // never reached: the kill came first
      },
      ::testing::KilledBySignal(SIGKILL), "");
  ::close(pipe_fds[1]);
  std::set<int> told;
  int j = 0;
  while (::read(pipe_fds[0], &j, sizeof j) == sizeof j) told.insert(j);
  ::close(pipe_fds[0]);
  ASSERT_GE(told.size(), static_cast<std::size_t>(kMany / 2));
  auto state = Store::open_for_reading(config.database).value()->load();
  ASSERT_TRUE(state.ok()) << state.message();
  std::set<std::string> intents;
  for (const BindIntent& intent : state->intents) intents.insert(intent.job_id);
  std::set<std::string> running;
  for (const JobRecord& job : state->jobs) {
    if (job.phase == JobPhase::kRunning) running.insert(job.id);
  }
  for (int k : told) {
    const std::string id = "lab/j" + std::to_string(k);
    if (k % 2) {
      EXPECT_TRUE(intents.count(id)) << "intent of " << id << " lost";
    } else {
      EXPECT_TRUE(running.count(id)) << "start of " << id << " lost";
    }
  }
}

// The book's own changes (the retention sweep here) go through apply like the others: a run
// finished before the retention window leaves the book at the next plan, one inside it stays,
// and the store keeps both (its history is pruned on its own schedule).
TEST(PlannerApplyTest, TheRetentionSweepLetsOnlyRunsFinishedBeforeTheWindowLeaveTheBook) {
  testing::ScratchDir dir;
  ExtenderConfig config = testing::make_config({{"n0", {{"gpu", 2}}}}, dir.file("state.db"));
  config.retention.finished_seconds = 600;
  auto clock = std::make_shared<double>(1000);
  Metrics metrics;
  PlannerOptions options;
  options.inventory = config.nodes;
  options.clock = [clock] { return *clock; };
  auto made = Planner::create(config, make_policy("fifo", {}).value(), metrics, options);
  ASSERT_TRUE(made.ok()) << made.message();
  std::unique_ptr<Planner> planner = std::move(*made);
  planner->start();
  auto run = [&](const std::string& name) {
    auto variant = read_job_variant(
        testing::make_pod("lab", name, "nvidia.com/gpu", {{"allox.io/job", name}}), config.devices);
    ASSERT_TRUE(variant.ok()) << variant.message();
    ASSERT_TRUE(planner->register_variant(*variant).ok());
    ASSERT_TRUE(planner->record_start(*variant, "n0", -1).ok());
    ASSERT_TRUE(planner->complete(variant->job_id).ok());
  };
  run("early");  // finished at 1000
  *clock = 1500;
  run("late");  // finished at 1500
  auto in_book = [&](const std::string& id) {
    return planner->read([&](const JobBook& book) { return book.job(id) != nullptr; });
  };
  // Each sweep is the first step of a plan; a new pod makes sure a plan follows each clock step.
  auto plan_after_a_change = [&](const std::string& name) {
    auto variant = read_job_variant(
        testing::make_pod("lab", name, "nvidia.com/gpu", {{"allox.io/job", name}}), config.devices);
    ASSERT_TRUE(variant.ok()) << variant.message();
    ASSERT_TRUE(planner->register_variant(*variant).ok());
    planner->solve_now();
  };
  plan_after_a_change("waiting-1");
  EXPECT_TRUE(in_book("lab/early"));  // 500 s ago: inside the window
  *clock = 1700;
  plan_after_a_change("waiting-2");
  EXPECT_FALSE(in_book("lab/early")) << "finished 700 s ago, past the 600 s window";
  EXPECT_TRUE(in_book("lab/late"));
  planner->stop();
  auto stored = (*Store::open_for_reading(config.database))->load();
  ASSERT_TRUE(stored.ok());
  std::set<std::string> ids;
  for (const JobRecord& job : stored->jobs) ids.insert(job.id);
  EXPECT_TRUE(ids.count("lab/early") && ids.count("lab/late"));
}

}  // namespace
}  // namespace allox::extender
