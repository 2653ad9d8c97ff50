// alloxd/store/store.h: what is recorded is what load() gives back, across reopenings; each change
// is one transaction; locks and failures are errors; runs, intents, history pruning, migration.
#include "alloxd/store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

JobRecord arrival(const std::string& id, const std::string& user, double at) {
  JobRecord job;
  job.id = id;
  job.user = user;
  job.arrival = at;
  return job;
}

JobVariant pod_of(const std::string& job_id, const std::string& name, const std::string& uid) {
  JobVariant variant;
  variant.pod = {name, "ns", uid};
  variant.job_id = job_id;
  variant.user = "alice";
  variant.device = "gpu";
  return variant;
}

// Records alice's jobs ns/j0 .. ns/j<count - 1>, each with its first variant, written (not
// synced): the stream of small commits the checkpoint tests need. `after_each` sees each index.
Status record_jobs(Store& store, int count, const std::function<void(int)>& after_each = {}) {
  for (int i = 0; i < count; ++i) {
    const std::string id = "ns/j" + std::to_string(i);
    auto row = store.record_arrival(arrival(id, "alice", 100.0 + i),
                                    pod_of(id, "p" + std::to_string(i), "u" + std::to_string(i)),
                                    Durability::kWritten);
    if (!row.ok()) return row.error();
    if (after_each) after_each(i);
  }
  return OkStatus();
}

// A second connection to the same file, for locks and for checking rows behind the Store's back.
class RawDb {
 public:
  explicit RawDb(const std::string& path) { sqlite3_open(path.c_str(), &db_); }
  ~RawDb() { sqlite3_close(db_); }
  int exec(const std::string& sql) {
    return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  }
  std::int64_t count(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr);
    std::int64_t n = sqlite3_step(stmt) == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : -1;
    sqlite3_finalize(stmt);
    return n;
  }

 private:
  sqlite3* db_ = nullptr;
};

TEST(StoreTest, LifecycleVariantsProfilesAndUsageSurviveReopening) {
  testing::ScratchDir dir;
  const std::string path = dir.file("state.db");
  {
    auto store = Store::open(path);
    ASSERT_TRUE(store.ok()) << store.message();
    JobRecord job = arrival("ns/j1", "alice", 100.0);
    JobVariant variant = pod_of("ns/j1", "j1-gpu", "uid-1");
    variant.iterations = 500;
    variant.time_hints = {{"gpu", 60}, {"cpu", 240}};
    auto row = (*store)->record_arrival(job, variant);
    ASSERT_TRUE(row.ok()) << row.message();
    job.row = *row;
    auto j2 = (*store)->record_arrival(arrival("ns/j2", "bob", 101.0), pod_of("ns/j2", "j2", "u2"));
    ASSERT_TRUE(j2.ok());
    job.phase = JobPhase::kRunning;
    job.pod_namespace = "ns";
    job.pod_name = "j1-gpu";
    job.pod_uid = "uid-1";
    job.node = "n1";
    job.device = "gpu";
    job.machine = 3;
    job.start = 110;
    ASSERT_TRUE((*store)->record_start(job).ok());
    ASSERT_TRUE(
        (*store)
            ->record_profile({"ns/j2", "cpu", ProfileSample::Kind::kProfile, 10, 5.5, 102, *j2})
            .ok());
    ASSERT_TRUE((*store)->record_finish(job.row, 170).ok());
    EXPECT_FALSE((*store)->record_finish(999, 170).ok()) << "no such run";
  }
  auto store = Store::open(path);
  ASSERT_TRUE(store.ok()) << store.message();
  auto state = (*store)->load();
  ASSERT_TRUE(state.ok()) << state.message();
  ASSERT_EQ(2u, state->jobs.size());
  const JobRecord& j1 = state->jobs[0];
  EXPECT_EQ("ns/j1", j1.id);
  EXPECT_EQ(JobPhase::kDone, j1.phase);
  EXPECT_EQ("n1", j1.node);
  EXPECT_EQ(3, j1.machine);
  EXPECT_DOUBLE_EQ(110, j1.start);
  EXPECT_DOUBLE_EQ(170, j1.finish);
  EXPECT_EQ(JobPhase::kQueued, state->jobs[1].phase);
  ASSERT_EQ(2u, state->variants.size());
  EXPECT_EQ("j1-gpu", state->variants[0].variant.pod.name);
  EXPECT_EQ(j1.row, state->variants[0].job_row);
  EXPECT_EQ(500, state->variants[0].variant.iterations.value());
  EXPECT_DOUBLE_EQ(240, state->variants[0].variant.time_hints.at("cpu"));
  ASSERT_EQ(1u, state->profiles.size());
  EXPECT_DOUBLE_EQ(5.5, state->profiles[0].seconds);
  EXPECT_EQ(state->jobs[1].row, state->profiles[0].job_row);

  auto usage = (*store)->usage_since(150);
  ASSERT_TRUE(usage.ok());
  ASSERT_EQ(1u, usage->size());
  EXPECT_DOUBLE_EQ(170, (*usage)[0].end.value());
  EXPECT_TRUE((*store)->usage_since(171)->empty());
}

TEST(StoreTest, AJobRowNeverExistsWithoutItsVariantRow) {
  testing::ScratchDir dir;
  auto store = Store::open(dir.file("state.db"));
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->record_arrival(arrival("ns/a", "u", 1), pod_of("ns/a", "a", "u1")).ok());
  // A second live run of the same id violates the unique index after the job insert: the
  // whole transaction, job row included, must roll back.
  auto twice = (*store)->record_arrival(arrival("ns/a", "u", 2), pod_of("ns/a", "a2", "u2"));
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(std::string::npos, twice.message().find("UNIQUE")) << twice.message();
  RawDb raw(dir.file("state.db"));
  EXPECT_EQ(1, raw.count("SELECT count(*) FROM jobs"));
  EXPECT_EQ(1, raw.count("SELECT count(*) FROM variants"));
  EXPECT_EQ(0, raw.count("SELECT count(*) FROM jobs j WHERE NOT EXISTS "
                         "(SELECT 1 FROM variants v WHERE v.job_row = j.row)"));
}

// batch(): the writes inside it are one transaction. When one fails, none of the others stays,
// including those that succeeded before it; a batch that succeeds keeps them all.
TEST(StoreTest, ABatchKeepsAllItsWritesOrNone) {
  testing::ScratchDir dir;
  auto store = Store::open(dir.file("state.db"));
  ASSERT_TRUE(store.ok());
  std::int64_t row = 0;
  Status kept = (*store)->batch([&]() -> Status {
    auto a = (*store)->record_arrival(arrival("ns/a", "u", 1), pod_of("ns/a", "a-gpu", "u1"));
    if (!a) return a.error();
    row = *a;
    if (auto v = (*store)->record_variant(row, pod_of("ns/a", "a-cpu", "u2")); !v) return v;
    auto b = (*store)->record_arrival(arrival("ns/b", "u", 1), pod_of("ns/b", "b-gpu", "u3"));
    return b ? OkStatus() : Status(b.error());
  });
  ASSERT_TRUE(kept.ok()) << kept.message();
  Status refused = (*store)->batch([&]() -> Status {
    auto c = (*store)->record_arrival(arrival("ns/c", "u", 2), pod_of("ns/c", "c-gpu", "u4"));
    if (!c) return c.error();
    // A second live run of ns/a: refused by the unique index, after ns/c was written.
    auto again = (*store)->record_arrival(arrival("ns/a", "u", 2), pod_of("ns/a", "a2", "u5"));
    return again ? OkStatus() : Status(again.error());
  });
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(std::string::npos, refused.message().find("UNIQUE")) << refused.message();
  RawDb raw(dir.file("state.db"));
  EXPECT_EQ(2, raw.count("SELECT count(*) FROM jobs"));
  EXPECT_EQ(3, raw.count("SELECT count(*) FROM variants"));
  EXPECT_EQ(0, raw.count("SELECT count(*) FROM jobs WHERE id = 'ns/c'"));
  // The store writes on, outside any batch.
  EXPECT_TRUE(
      (*store)->record_arrival(arrival("ns/c", "u", 3), pod_of("ns/c", "c-gpu", "u4")).ok());
}

TEST(StoreTest, ALockedDatabaseIsAnErrorAndLeavesNothingHalfWritten) {
  testing::ScratchDir dir;
  const std::string path = dir.file("state.db");
  auto store = Store::open(path, std::chrono::milliseconds(50));
  ASSERT_TRUE(store.ok());
  RawDb other(path);
  ASSERT_EQ(SQLITE_OK, other.exec("BEGIN IMMEDIATE"));
  auto blocked = (*store)->record_arrival(arrival("ns/a", "u", 1), pod_of("ns/a", "a", "u1"));
  ASSERT_FALSE(blocked.ok());
  EXPECT_NE(std::string::npos, blocked.message().find("locked")) << blocked.message();
  EXPECT_FALSE((*store)->record_finish(1, 5).ok());
  ASSERT_EQ(SQLITE_OK, other.exec("ROLLBACK"));
  // The store is usable again, and nothing of the refused write is there.
  auto state = (*store)->load();
  ASSERT_TRUE(state.ok()) << state.message();
  EXPECT_TRUE(state->jobs.empty());
  EXPECT_TRUE(state->variants.empty());
  EXPECT_TRUE((*store)->record_arrival(arrival("ns/a", "u", 1), pod_of("ns/a", "a", "u1")).ok());
}

// The write paths reuse their prepared statements (statement.h's StatementCache): a statement that
// failed is reset before its next use, and a thousand uses write a thousand rows.
TEST(StoreTest, AReusedStatementRecoversFromAFailureAndWritesEveryTime) {
  testing::ScratchDir dir;
  const std::string path = dir.file("state.db");
  {
    auto store = Store::open(path);
    ASSERT_TRUE(store.ok());
    JobRecord ghost = arrival("ns/ghost", "u", 1);
    ghost.row = 999;
    auto failed = (*store)->record_start(ghost, Durability::kWritten);
    ASSERT_FALSE(failed.ok());
    EXPECT_NE(std::string::npos, failed.message().find("no job run with row 999"))
        << failed.message();
    for (int i = 0; i < 1000; ++i) {
      const std::string id = "ns/j" + std::to_string(i);
      auto row = (*store)->record_arrival(
          arrival(id, "u", i), pod_of(id, "p" + std::to_string(i), "uid" + std::to_string(i)),
          Durability::kWritten);
      ASSERT_TRUE(row.ok()) << row.message();
      if (i % 2 == 0) {
        JobRecord run = arrival(id, "u", i);
        run.row = *row;
        run.pod_namespace = "ns";
        run.pod_name = "p" + std::to_string(i);
        run.node = "n1";
        run.device = "gpu";
        run.start = i + 0.5;
        ASSERT_TRUE((*store)->record_start(run, Durability::kWritten).ok());
      }
    }
  }
  RawDb raw(path);
  EXPECT_EQ(1000, raw.count("SELECT count(*) FROM jobs"));
  EXPECT_EQ(1000, raw.count("SELECT count(*) FROM variants"));
  EXPECT_EQ(500, raw.count("SELECT count(*) FROM jobs WHERE phase = 'running'"));
  EXPECT_EQ(500, raw.count("SELECT count(*) FROM usage"));
}

// Each write's durability reaches SQLite every time, not only the first time the level changes.
TEST(StoreTest, EveryWriteRunsAtItsOwnDurability) {
  testing::ScratchDir dir;
  auto store = Store::open(dir.file("state.db"));
  ASSERT_TRUE(store.ok());
  for (int i = 0; i < 3; ++i) {
    const std::string id = "ns/j" + std::to_string(i);
    ASSERT_TRUE((*store)
                    ->record_arrival(arrival(id, "u", i), pod_of(id, "w" + std::to_string(i), "w"),
                                     Durability::kWritten)
                    .ok());
    EXPECT_EQ(1, *(*store)->synchronous()) << "NORMAL after written write " << i;
    ASSERT_TRUE((*store)
                    ->record_arrival(arrival(id + "s", "u", i),
                                     pod_of(id + "s", "s" + std::to_string(i), "s"),
                                     Durability::kSynced)
                    .ok());
    EXPECT_EQ(2, *(*store)->synchronous()) << "FULL after synced write " << i;
  }
}

// The observer behind allox_store_write_duration_seconds: each committed write transaction once
// (a batch once, however many writes it groups), with its durability; reads, and writes that
// were rolled back, not at all.
TEST(StoreTest, EachCommittedWriteIsObservedOnceWithItsDurability) {
  testing::ScratchDir dir;
  auto store = Store::open(dir.file("state.db"));
  ASSERT_TRUE(store.ok());
  std::vector<bool> observed;  // synced, per observation
  (*store)->observe_writes([&](double seconds, bool synced) {
    EXPECT_GE(seconds, 0.0);
    EXPECT_LT(seconds, 60.0);
    observed.push_back(synced);
  });
  auto row = (*store)->record_arrival(arrival("ns/a", "u", 1), pod_of("ns/a", "a-gpu", "u1"));
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(std::vector<bool>({true}), observed);
  ASSERT_TRUE((*store)
                  ->batch(
                      [&]() -> Status {
                        if (auto v = (*store)->record_variant(*row, pod_of("ns/a", "a-cpu", "u2"));
                            !v)
                          return v;
                        return (*store)->record_variant(*row, pod_of("ns/a", "a-tpu", "u3"));
                      },
                      Durability::kWritten)
                  .ok());
  EXPECT_EQ(std::vector<bool>({true, false}), observed);
  ASSERT_TRUE((*store)->load().ok());
  // A second live run of ns/a is refused by the unique index and rolled back: not a commit.
  EXPECT_FALSE((*store)->record_arrival(arrival("ns/a", "u", 2), pod_of("ns/a", "a2", "u5")).ok());
  EXPECT_EQ(std::vector<bool>({true, false}), observed);
  ASSERT_TRUE((*store)->forget_variant({"a-tpu", "ns", "u3"}, *row, Durability::kWritten).ok());
  EXPECT_EQ(std::vector<bool>({true, false, false}), observed);
}

// WAL checkpoints run on the store's own thread (store.h), never inside a commit on a request
// path: past Store::kCheckpointPages of WAL the checkpointer runs, its pages reach the database
// file, and everything written is there after reopening.
TEST(StoreTest, TheWalIsCheckpointedByTheStoresThreadAndLosesNothing) {
  testing::ScratchDir dir;
  const std::string path = dir.file("state.db");
  constexpr int kJobs = 1500;  // several pages of WAL each: well past kCheckpointPages
  {
    auto store = Store::open(path);
    ASSERT_TRUE(store.ok()) << store.message();
    std::mutex mu;
    std::condition_variable cv;
    std::uint64_t seen = 0;
    (*store)->set_checkpoint_hook([&](std::uint64_t count) {
      std::lock_guard lock(mu);
      seen = count;
      cv.notify_all();
    });
    Status written = record_jobs(**store, kJobs);
    ASSERT_TRUE(written.ok()) << written.message();
    std::unique_lock lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return seen > 0; }))
        << "no checkpoint after " << kJobs << " commits";
    lock.unlock();
    (*store)->set_checkpoint_hook(nullptr);
    // A checkpoint that copied nothing (one whose connection never saw WAL mode) leaves the
    // database file at its first page. The first one runs once the WAL holds 1,000 pages, of
    // which the database then has about 90 KB (it may be the only one so far): 16 KB is well
    // past one page and well short of that.
    EXPECT_GT(std::filesystem::file_size(path), 16u * 1024)
        << "the checkpoints copied nothing into the database file";
  }
  auto store = Store::open(path);
  ASSERT_TRUE(store.ok()) << store.message();
  auto state = (*store)->load();
  ASSERT_TRUE(state.ok()) << state.message();
  EXPECT_EQ(static_cast<std::size_t>(kJobs), state->jobs.size());
  EXPECT_EQ(static_cast<std::size_t>(kJobs), state->variants.size());
}

// A PASSIVE checkpoint lets the WAL start over only when the writer happens to begin a commit
// after the checkpoint caught up with its last one, which nothing guarantees under a steady
// stream of commits; past Store::kRestartPages the checkpointer restarts it itself, and past
// Store::kWalCapPages (a checkpointer starved of a core or of the lock) the commit does. Here the
// writes come back to back, as fast as one thread can make them, so the file's bound holds
// whichever of the two gets there: it is rewritten in place, not grown with every page written.
TEST(StoreTest, TheWalStaysBoundedUnderBackToBackWrites) {
  testing::ScratchDir dir;
  const std::string path = dir.file("state.db");
  constexpr int kJobs = 8000;  // about 7 WAL pages each: over 3 times kWalCapPages in all
  constexpr std::uintmax_t kPageInWal = 1024 + 24;  // a 1 KB page and its frame header
  auto store = Store::open(path);
  ASSERT_TRUE(store.ok()) << store.message();
  std::uintmax_t largest_wal = 0;
  Status recorded = record_jobs(**store, kJobs, [&](int i) {
    if (i % 100 == 0) {
      largest_wal = std::max(largest_wal, std::filesystem::file_size(path + "-wal"));
    }
  });
  ASSERT_TRUE(recorded.ok()) << recorded.message();
  largest_wal = std::max(largest_wal, std::filesystem::file_size(path + "-wal"));
  const std::uintmax_t written = kPageInWal * 7 * kJobs;
  EXPECT_GE((*store)->wal_restarts(), 2u);
  EXPECT_LT(largest_wal, kPageInWal * (Store::kWalCapPages + 100))
      << "the WAL grew to " << largest_wal << " bytes of the about " << written << " written";
  store->reset();
  auto reopened = Store::open(path);
  ASSERT_TRUE(reopened.ok()) << reopened.message();
  auto state = (*reopened)->load();
  ASSERT_TRUE(state.ok()) << state.message();
  EXPECT_EQ(static_cast<std::size_t>(kJobs), state->jobs.size());
  EXPECT_EQ(static_cast<std::size_t>(kJobs), state->variants.size());
}

// empty_wal() runs at alloxd's start-up, and `allox report` may hold the file open meanwhile:
// another connection's transaction makes it an error at once, not a 5 s wait, and the store
// works on (the busy timeout is its own again).
TEST(StoreTest, EmptyingTheWalWaitsForNoOtherConnection) {
  testing::ScratchDir dir;
  const std::string path = dir.file("state.db");
  auto store = Store::open(path);  // a 5 s busy timeout
  ASSERT_TRUE(store.ok()) << store.message();
  ASSERT_TRUE(record_jobs(**store, 50).ok());
  ASSERT_GT(std::filesystem::file_size(path + "-wal"), 0u);
  RawDb other(path);
  ASSERT_EQ(SQLITE_OK, other.exec("BEGIN IMMEDIATE"));
  const auto asked = std::chrono::steady_clock::now();
  Status emptied = (*store)->empty_wal();
  EXPECT_FALSE(emptied.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::seconds(2));
  ASSERT_EQ(SQLITE_OK, other.exec("ROLLBACK"));
  emptied = (*store)->empty_wal();
  ASSERT_TRUE(emptied.ok()) << emptied.message();
  EXPECT_EQ(0u, std::filesystem::file_size(path + "-wal"));
  EXPECT_EQ(50, other.count("SELECT COUNT(*) FROM jobs"));
}

TEST(StoreTest, BindIntentsAreLoadedUntilTheStartClearsThem) {
  testing::ScratchDir dir;
  auto store = Store::open(dir.file("state.db"));
  ASSERT_TRUE(store.ok());
  JobRecord job = arrival("ns/a", "u", 1);
  job.row = *(*store)->record_arrival(job, pod_of("ns/a", "a", "u1"));
  ASSERT_TRUE(
      (*store)->record_bind_intent({job.row, job.id, {"a", "ns", "u1"}, "n1", "gpu", 2}).ok());
  auto state = (*store)->load();
  ASSERT_EQ(1u, state->intents.size());
  EXPECT_EQ("n1", state->intents[0].node);
  EXPECT_EQ("u1", state->intents[0].pod.uid);
  job.node = "n1";
  job.device = "gpu";
  job.start = 3;
  ASSERT_TRUE((*store)->record_start(job).ok());
  EXPECT_TRUE((*store)->load()->intents.empty());
  ASSERT_TRUE(
      (*store)->record_bind_intent({job.row, job.id, {"a", "ns", "u1"}, "n2", "gpu", 4}).ok());
  ASSERT_TRUE((*store)->drop_bind_intent(job.row).ok());
  EXPECT_TRUE((*store)->load()->intents.empty());
}

TEST(StoreTest, WrittenChangesSurviveAKill9OfTheProcess) {
  // kWritten skips the fsync, not the write: a burst of arrivals, a start and a completion
  // written that way, then SIGKILL (no close, no checkpoint), and every one is there, also once
  // the WAL is copied into the database.
  testing::ScratchDir dir;
  const std::string path = dir.file("state.db");
  constexpr int kJobs = 300;
  EXPECT_EXIT(
      {
        auto store = Store::open(path);
        if (!store.ok()) std::_Exit(1);
        for (int i = 0; i < kJobs; ++i) {
          const std::string id = "ns/j" + std::to_string(i);
          auto row = (*store)->record_arrival(arrival(id, "u", i),
                                              pod_of(id, "p" + std::to_string(i), "uid"),
                                              Durability::kWritten);
          if (!row.ok()) std::_Exit(2);
          if (i == 0) {
            JobRecord started = arrival(id, "u", i);
            started.row = *row;
            started.pod_namespace = "ns";
            started.pod_name = "p0";
            started.node = "n1";
            started.device = "gpu";
            started.start = 1000;
            if (!(*store)->record_start(started, Durability::kWritten).ok()) std::_Exit(3);
            if (!(*store)->record_finish(*row, 2000, Durability::kWritten).ok()) std::_Exit(4);
          }
        }
        std::raise(SIGKILL);
      },
      ::testing::KilledBySignal(SIGKILL), "");
  ASSERT_GT(std::filesystem::file_size(path + "-wal"), 0u) << "the kill left no WAL to recover";
  auto store = Store::open(path);
  ASSERT_TRUE(store.ok()) << store.message();
  // What alloxd does at start-up: the WAL the kill left goes into the database before any
  // request.
  ASSERT_TRUE((*store)->empty_wal().ok());
  EXPECT_EQ(0u, std::filesystem::file_size(path + "-wal"));
  auto state = (*store)->load();
  ASSERT_TRUE(state.ok()) << state.message();
  ASSERT_EQ(static_cast<std::size_t>(kJobs), state->jobs.size());
  EXPECT_EQ(static_cast<std::size_t>(kJobs), state->variants.size());
  EXPECT_EQ(JobPhase::kDone, state->jobs[0].phase);
  EXPECT_DOUBLE_EQ(2000, state->jobs[0].finish);
  EXPECT_EQ(JobPhase::kQueued, state->jobs[kJobs - 1].phase);
  // A synced write after written ones works as before (the connection is back to FULL).
  ASSERT_TRUE((*store)
                  ->record_bind_intent(
                      {state->jobs[1].row, state->jobs[1].id, {"p1", "ns", "uid"}, "n1", "gpu", 3})
                  .ok());
  EXPECT_EQ(1u, (*store)->load()->intents.size());
}

TEST(StoreTest, ASavepointThatFailsLeavesTheRestOfItsBatch) {
  // Planner::apply's transaction: each change in a savepoint, so the one the database refuses
  // (a trigger here) is rolled back alone and the batch commits the others.
  testing::ScratchDir dir;
  const std::string path = dir.file("state.db");
  auto store = Store::open(path);
  ASSERT_TRUE(store.ok());
  RawDb raw(path);
  ASSERT_EQ(SQLITE_OK, raw.exec("CREATE TRIGGER refuse BEFORE INSERT ON variants WHEN "
                                "NEW.pod_name = 'p1' BEGIN SELECT RAISE(ABORT, 'refused'); END"));
  std::vector<Status> outcomes;
  const Status together = (*store)->batch(
      [&]() -> Status {
        for (int i = 0; i < 3; ++i) {
          const std::string id = "ns/j" + std::to_string(i);
          outcomes.push_back((*store)->savepoint([&]() -> Status {
            auto row = (*store)->record_arrival(arrival(id, "u", i),
                                                pod_of(id, "p" + std::to_string(i), "u"));
            return row.ok() ? OkStatus() : Status(row.error());
          }));
        }
        return OkStatus();
      },
      Durability::kWritten);
  ASSERT_TRUE(together.ok()) << together.message();
  ASSERT_EQ(3u, outcomes.size());
  EXPECT_TRUE(outcomes[0].ok());
  EXPECT_NE(std::string::npos, outcomes[1].message().find("refused")) << outcomes[1].message();
  EXPECT_TRUE(outcomes[2].ok());
  // The refused arrival left no job row without its variant.
  auto state = (*store)->load();
  ASSERT_TRUE(state.ok());
  std::set<std::string> jobs;
  for (const JobRecord& job : state->jobs) jobs.insert(job.id);
  EXPECT_EQ((std::set<std::string>{"ns/j0", "ns/j2"}), jobs);
  EXPECT_EQ(2u, state->variants.size());
}

TEST(StoreTest, FinishedRunsGiveWayToANewRunAndAgeOutOfHistory) {
  testing::ScratchDir dir;
  auto store = Store::open(dir.file("state.db"));
  ASSERT_TRUE(store.ok());
  JobRecord first = arrival("ns/a", "u", 10);
  first.row = *(*store)->record_arrival(first, pod_of("ns/a", "a", "uid-old"));
  first.node = "n1";
  first.start = 20;
  ASSERT_TRUE((*store)->record_start(first).ok());
  ASSERT_TRUE((*store)->record_finish(first.row, 30).ok());
  // The pod is re-created under the same name: a new run of the same id.
  auto second = (*store)->record_arrival(arrival("ns/a", "u", 40), pod_of("ns/a", "a", "uid-new"));
  ASSERT_TRUE(second.ok()) << second.message();
  EXPECT_NE(first.row, *second);
  JobRecord other = arrival("ns/b", "u", 5);
  other.row = *(*store)->record_arrival(other, pod_of("ns/b", "b", "uid-b"));
  ASSERT_TRUE((*store)->record_removal(other.row, 6).ok());

  auto all = (*store)->load();
  ASSERT_EQ(3u, all->jobs.size());
  EXPECT_EQ(JobPhase::kDone, all->jobs[0].phase);
  EXPECT_EQ(JobPhase::kQueued, all->jobs[1].phase);
  EXPECT_EQ(JobPhase::kRemoved, all->jobs[2].phase);
  // Only the new run's variant row is left (same pod name): the old run keeps its job row.
  ASSERT_EQ(2u, all->variants.size());
  EXPECT_EQ(*second, all->variants[0].job_row);

  auto recent = (*store)->load(31);  // the done run finished at 30: not loaded
  ASSERT_EQ(2u, recent->jobs.size());
  EXPECT_EQ(*second, recent->jobs[0].row);
  EXPECT_EQ(JobPhase::kRemoved, recent->jobs[1].phase);

  auto pruned = (*store)->prune_history(31);
  ASSERT_TRUE(pruned.ok()) << pruned.message();
  EXPECT_EQ(2, *pruned);  // the done run and the removed one
  auto left = (*store)->load();
  ASSERT_EQ(1u, left->jobs.size());
  EXPECT_EQ(*second, left->jobs[0].row);
  EXPECT_TRUE((*store)->usage_since(0)->empty());
}

TEST(StoreTest, AVersionOneDatabaseIsMigrated) {
  testing::ScratchDir dir;
  const std::string path = dir.file("state.db");
  {
    RawDb v1(path);
    ASSERT_EQ(SQLITE_OK,
              v1.exec("CREATE TABLE jobs (id TEXT PRIMARY KEY, user TEXT NOT NULL, arrival REAL "
                      "NOT NULL, phase TEXT NOT NULL DEFAULT 'queued', pod_namespace TEXT NOT NULL "
                      "DEFAULT '', pod_name TEXT NOT NULL DEFAULT '', pod_uid TEXT NOT NULL "
                      "DEFAULT '', node TEXT NOT NULL DEFAULT '', device TEXT NOT NULL DEFAULT '', "
                      "machine INTEGER NOT NULL DEFAULT -1, start REAL NOT NULL DEFAULT 0, finish "
                      "REAL NOT NULL DEFAULT 0);"
                      "CREATE TABLE variants (pod_namespace TEXT NOT NULL, pod_name TEXT NOT NULL, "
                      "pod_uid TEXT NOT NULL, job_id TEXT NOT NULL, user TEXT NOT NULL, device "
                      "TEXT NOT NULL, iterations INTEGER, time_hints TEXT NOT NULL, PRIMARY KEY "
                      "(pod_namespace, pod_name));"
                      "CREATE TABLE profiles (seq INTEGER PRIMARY KEY AUTOINCREMENT, job_id TEXT "
                      "NOT NULL, device TEXT NOT NULL, kind TEXT NOT NULL, iterations INTEGER NOT "
                      "NULL, seconds REAL NOT NULL, at REAL NOT NULL);"
                      "CREATE TABLE usage (job_id TEXT PRIMARY KEY, user TEXT NOT NULL, device "
                      "TEXT NOT NULL, node TEXT NOT NULL, start REAL NOT NULL, end REAL);"
                      "INSERT INTO jobs (id, user, arrival) VALUES ('lab/a', 'lab', 7);"
                      "INSERT INTO variants VALUES ('lab', 'a', 'u', 'lab/a', 'lab', 'gpu', 10, "
                      "'{\"gpu\": 60}');"
                      "INSERT INTO profiles (job_id, device, kind, iterations, seconds, at) "
                      "VALUES ('lab/a', 'gpu', 'profile', 5, 3, 8);"));
  }
  auto store = Store::open(path);
  ASSERT_TRUE(store.ok()) << store.message();
  auto state = (*store)->load();
  ASSERT_TRUE(state.ok()) << state.message();
  ASSERT_EQ(1u, state->jobs.size());
  EXPECT_EQ("lab/a", state->jobs[0].id);
  ASSERT_EQ(1u, state->variants.size());
  EXPECT_EQ(state->jobs[0].row, state->variants[0].job_row);
  EXPECT_DOUBLE_EQ(60, state->variants[0].variant.time_hints.at("gpu"));
  ASSERT_EQ(1u, state->profiles.size());
  EXPECT_EQ(state->jobs[0].row, state->profiles[0].job_row);
  store->reset();
  EXPECT_TRUE(Store::open(path).ok()) << "a migrated database opens again";
}

// A job's variants load in the order they were recorded (the book keeps the last one's
// iterations), not in their key's order, and a variant recorded again moves to the end.
TEST(StoreTest, AJobsVariantsLoadInTheOrderTheyWereRecorded) {
  auto store = Store::open(":memory:");
  ASSERT_TRUE(store.ok()) << store.message();
  auto row = (*store)->record_arrival(arrival("lab/j", "lab", 1), pod_of("lab/j", "z-gpu", "u1"));
  ASSERT_TRUE(row.ok()) << row.message();
  auto other = (*store)->record_arrival(arrival("lab/k", "lab", 2), pod_of("lab/k", "k", "u9"));
  ASSERT_TRUE(other.ok()) << other.message();
  for (const char* name : {"m-cpu", "a-tpu", "z-gpu"}) {
    ASSERT_TRUE((*store)->record_variant(*row, pod_of("lab/j", name, name)).ok());
  }
  auto state = (*store)->load();
  ASSERT_TRUE(state.ok()) << state.message();
  std::vector<std::string> order;
  for (const StoredVariant& v : state->variants) {
    if (v.job_row == *row) order.push_back(v.variant.pod.name);
  }
  EXPECT_EQ((std::vector<std::string>{"m-cpu", "a-tpu", "z-gpu"}), order);
}

TEST(StoreTest, AVersionTwoDatabaseIsMigratedKeepingEachJobsVariantOrder) {
  testing::ScratchDir dir;
  const std::string path = dir.file("state.db");
  {
    RawDb v2(path);  // version 2's schema as it shipped, variants in a rowid table
    ASSERT_EQ(
        SQLITE_OK,
        v2.exec("CREATE TABLE jobs (row INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, "
                "user TEXT NOT NULL, arrival REAL NOT NULL, phase TEXT NOT NULL DEFAULT "
                "'queued', pod_namespace TEXT NOT NULL DEFAULT '', pod_name TEXT NOT NULL "
                "DEFAULT '', pod_uid TEXT NOT NULL DEFAULT '', node TEXT NOT NULL DEFAULT '', "
                "device TEXT NOT NULL DEFAULT '', machine INTEGER NOT NULL DEFAULT -1, start "
                "REAL NOT NULL DEFAULT 0, finish REAL NOT NULL DEFAULT 0);"
                "CREATE UNIQUE INDEX jobs_live_id ON jobs (id) WHERE phase IN ('queued', "
                "'running');"
                "CREATE INDEX jobs_finish ON jobs (finish) WHERE phase IN ('done', "
                "'removed');"
                "CREATE TABLE variants (pod_namespace TEXT NOT NULL, pod_name TEXT NOT NULL, "
                "pod_uid TEXT NOT NULL, job_row INTEGER NOT NULL, job_id TEXT NOT NULL, user "
                "TEXT NOT NULL, device TEXT NOT NULL, iterations INTEGER, time_hints TEXT NOT "
                "NULL, PRIMARY KEY (pod_namespace, pod_name));"
                "CREATE INDEX variants_job ON variants (job_row);"
                "CREATE TABLE profiles (seq INTEGER PRIMARY KEY AUTOINCREMENT, job_row "
                "INTEGER NOT NULL, job_id TEXT NOT NULL, device TEXT NOT NULL, kind TEXT NOT "
                "NULL, iterations INTEGER NOT NULL, seconds REAL NOT NULL, at REAL NOT NULL);"
                "CREATE INDEX profiles_job ON profiles (job_row);"
                "CREATE TABLE usage (job_row INTEGER PRIMARY KEY, job_id TEXT NOT NULL, user "
                "TEXT NOT NULL, device TEXT NOT NULL, node TEXT NOT NULL, start REAL NOT "
                "NULL, end REAL);"
                "CREATE TABLE bind_intents (job_row INTEGER PRIMARY KEY, job_id TEXT NOT "
                "NULL, pod_namespace TEXT NOT NULL, pod_name TEXT NOT NULL, pod_uid TEXT NOT "
                "NULL, node TEXT NOT NULL, device TEXT NOT NULL, at REAL NOT NULL);"
                "INSERT INTO jobs (id, user, arrival) VALUES ('lab/a', 'lab', 7);"
                "INSERT INTO variants VALUES ('lab', 'z-gpu', 'u1', 1, 'lab/a', 'lab', "
                "'gpu', 10, '{\"gpu\": 60}');"
                "INSERT INTO variants VALUES ('lab', 'a-cpu', 'u2', 1, 'lab/a', 'lab', "
                "'cpu', 20, '{\"cpu\": 240}');"
                "INSERT INTO profiles (job_row, job_id, device, kind, iterations, seconds, "
                "at) VALUES (1, 'lab/a', 'gpu', 'profile', 5, 3, 8);"
                "PRAGMA user_version = 2;"));
  }
  {
    auto store = Store::open(path);
    ASSERT_TRUE(store.ok()) << store.message();
    auto state = (*store)->load();
    ASSERT_TRUE(state.ok()) << state.message();
    ASSERT_EQ(1u, state->jobs.size());
    ASSERT_EQ(2u, state->variants.size());
    EXPECT_EQ("z-gpu", state->variants[0].variant.pod.name) << "recorded first, loads first";
    EXPECT_EQ(10, state->variants[0].variant.iterations);
    EXPECT_EQ("a-cpu", state->variants[1].variant.pod.name);
    EXPECT_DOUBLE_EQ(240, state->variants[1].variant.time_hints.at("cpu"));
    EXPECT_EQ(state->jobs[0].row, state->variants[1].job_row);
    ASSERT_EQ(1u, state->profiles.size());
    // A variant recorded after the migration comes after the migrated ones.
    ASSERT_TRUE((*store)->record_variant(state->jobs[0].row, pod_of("lab/a", "b-tpu", "u3")).ok());
    auto again = (*store)->load();
    ASSERT_TRUE(again.ok()) << again.message();
    ASSERT_EQ(3u, again->variants.size());
    EXPECT_EQ("b-tpu", again->variants[2].variant.pod.name);
  }
  RawDb migrated(path);
  EXPECT_EQ(5, migrated.count("PRAGMA user_version"));
  EXPECT_EQ(1, migrated.count("SELECT count(*) FROM sqlite_master WHERE name = 'variants' AND "
                              "sql LIKE '%WITHOUT ROWID%'"));
  EXPECT_EQ(1, migrated.count("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name "
                              "= 'variants_job' AND tbl_name = 'variants'"))
      << "the job index is rebuilt on the new table, not dropped with the old one";
  EXPECT_EQ(0, migrated.count("SELECT count(*) FROM sqlite_master WHERE name = 'variants_v2'"));
  EXPECT_TRUE(Store::open(path).ok()) << "a migrated database opens again";
}

TEST(StoreTest, AVersionThreeDatabaseGainsUnitsOfOneAndKeepsEveryRow) {
  testing::ScratchDir dir;
  const std::string path = dir.file("state.db");
  {
    RawDb v3(path);  // version 3's jobs and variants as they shipped, before units
    ASSERT_EQ(
        SQLITE_OK,
        v3.exec("CREATE TABLE jobs (row INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, "
                "user TEXT NOT NULL, arrival REAL NOT NULL, phase TEXT NOT NULL DEFAULT "
                "'queued', pod_namespace TEXT NOT NULL DEFAULT '', pod_name TEXT NOT NULL "
                "DEFAULT '', pod_uid TEXT NOT NULL DEFAULT '', node TEXT NOT NULL DEFAULT '', "
                "device TEXT NOT NULL DEFAULT '', machine INTEGER NOT NULL DEFAULT -1, start "
                "REAL NOT NULL DEFAULT 0, finish REAL NOT NULL DEFAULT 0);"
                "CREATE TABLE variants (pod_namespace TEXT NOT NULL, pod_name TEXT NOT NULL, "
                "pod_uid TEXT NOT NULL, job_row INTEGER NOT NULL, job_id TEXT NOT NULL, user "
                "TEXT NOT NULL, device TEXT NOT NULL, iterations INTEGER, time_hints TEXT NOT "
                "NULL, seq INTEGER NOT NULL, PRIMARY KEY (pod_namespace, pod_name)) WITHOUT "
                "ROWID;"
                "INSERT INTO jobs (id, user, arrival, phase, node, device, machine, start) "
                "VALUES ('lab/a', 'lab', 7, 'running', 'g1', 'gpu', 1, 9);"
                "INSERT INTO jobs (id, user, arrival) VALUES ('lab/b', 'lab', 8);"
                "INSERT INTO variants VALUES ('lab', 'b-gpu', 'u2', 2, 'lab/b', 'lab', 'gpu', "
                "NULL, '{}', 1);"
                "PRAGMA user_version = 3;"));
  }
  auto store = Store::open(path);
  ASSERT_TRUE(store.ok()) << store.message();
  auto state = (*store)->load();
  ASSERT_TRUE(state.ok()) << state.message();
  ASSERT_EQ(2u, state->jobs.size());
  EXPECT_EQ(1, state->jobs[0].units) << "a run before units held one";
  EXPECT_EQ(1, state->jobs[0].machine);
  ASSERT_EQ(1u, state->variants.size());
  EXPECT_EQ(1, state->variants[0].variant.units);
  // Units written after the migration are read back.
  JobVariant wide = pod_of("lab/b", "b-gpu", "u2");
  wide.units = 4;
  ASSERT_TRUE((*store)->record_variant(state->jobs[1].row, wide).ok());
  JobRecord started = state->jobs[1];
  started.phase = JobPhase::kRunning;
  started.node = "g4";
  started.device = "gpu";
  started.machine = 0;
  started.units = 4;
  ASSERT_TRUE((*store)->record_start(started).ok());
  auto again = (*store)->load();
  ASSERT_TRUE(again.ok()) << again.message();
  EXPECT_EQ(4, again->jobs[1].units);
  ASSERT_EQ(2u, again->variants.size());
  EXPECT_EQ(1, again->variants[0].variant.units) << "the migrated variant";
  EXPECT_EQ(4, again->variants[1].variant.units) << "the one recorded since";
  RawDb migrated(path);
  EXPECT_EQ(5, migrated.count("PRAGMA user_version"));
}

TEST(StoreTest, AVersionFourDatabaseGainsGangsOfOneAndKeepsEveryRow) {
  testing::ScratchDir dir;
  const std::string path = dir.file("state.db");
  {
    RawDb v4(path);  // version 4's jobs and variants as they shipped, before gangs
    ASSERT_EQ(
        SQLITE_OK,
        v4.exec("CREATE TABLE jobs (row INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, "
                "user TEXT NOT NULL, arrival REAL NOT NULL, phase TEXT NOT NULL DEFAULT "
                "'queued', pod_namespace TEXT NOT NULL DEFAULT '', pod_name TEXT NOT NULL "
                "DEFAULT '', pod_uid TEXT NOT NULL DEFAULT '', node TEXT NOT NULL DEFAULT '', "
                "device TEXT NOT NULL DEFAULT '', machine INTEGER NOT NULL DEFAULT -1, start "
                "REAL NOT NULL DEFAULT 0, finish REAL NOT NULL DEFAULT 0, units INTEGER NOT NULL "
                "DEFAULT 1);"
                "CREATE TABLE variants (pod_namespace TEXT NOT NULL, pod_name TEXT NOT NULL, "
                "pod_uid TEXT NOT NULL, job_row INTEGER NOT NULL, job_id TEXT NOT NULL, user "
                "TEXT NOT NULL, device TEXT NOT NULL, iterations INTEGER, time_hints TEXT NOT "
                "NULL, seq INTEGER NOT NULL, units INTEGER NOT NULL DEFAULT 1, PRIMARY KEY "
                "(pod_namespace, pod_name)) WITHOUT ROWID;"
                "INSERT INTO jobs (id, user, arrival, phase, node, device, machine, start, units) "
                "VALUES ('lab/a', 'lab', 7, 'running', 'g1', 'gpu', 1, 9, 2);"
                "INSERT INTO jobs (id, user, arrival) VALUES ('lab/b', 'lab', 8);"
                "INSERT INTO variants VALUES ('lab', 'a-gpu', 'u1', 1, 'lab/a', 'lab', 'gpu', "
                "NULL, '{}', 1, 2);"
                "INSERT INTO variants VALUES ('lab', 'b-0', 'u2', 2, 'lab/b', 'lab', 'gpu', "
                "NULL, '{}', 1, 1);"
                "PRAGMA user_version = 4;"));
  }
  auto store = Store::open(path);
  ASSERT_TRUE(store.ok()) << store.message();
  auto state = (*store)->load();
  ASSERT_TRUE(state.ok()) << state.message();
  ASSERT_EQ(2u, state->jobs.size());
  EXPECT_EQ(1, state->jobs[0].gang) << "a run before gangs was one pod";
  EXPECT_EQ(2, state->jobs[0].units);
  EXPECT_EQ("g1", state->jobs[0].node);
  ASSERT_EQ(2u, state->variants.size());
  EXPECT_EQ(1, state->variants[0].variant.gang);
  EXPECT_EQ(2, state->variants[0].variant.units);
  EXPECT_EQ("", state->variants[0].node) << "no member node";
  // A gang recorded after the migration is read back with its members' nodes.
  JobVariant second = pod_of("lab/b", "b-1", "u3");
  second.gang = 2;
  JobVariant first = pod_of("lab/b", "b-0", "u2");
  first.gang = 2;
  ASSERT_TRUE((*store)->record_variant(state->jobs[1].row, first).ok());
  ASSERT_TRUE((*store)->record_variant(state->jobs[1].row, second).ok());
  JobRecord started = state->jobs[1];
  started.phase = JobPhase::kRunning;
  started.node = "g2";
  started.device = "gpu";
  started.machine = 0;
  started.gang = 2;
  ASSERT_TRUE((*store)->record_gang_start(started, {{"ns/b-0", "g2"}, {"ns/b-1", "g3"}}).ok());
  auto again = (*store)->load();
  ASSERT_TRUE(again.ok()) << again.message();
  EXPECT_EQ(2, again->jobs[1].gang);
  ASSERT_EQ(4u, again->variants.size());
  EXPECT_EQ("", again->variants[0].node) << "the migrated one-pod run";
  EXPECT_EQ("", again->variants[1].node) << "a migrated pod no start named";
  EXPECT_EQ(2, again->variants[2].variant.gang);
  EXPECT_EQ("g2", again->variants[2].node);
  EXPECT_EQ("g3", again->variants[3].node);
  RawDb migrated(path);
  EXPECT_EQ(5, migrated.count("PRAGMA user_version"));
}

// A rolled-back gang's members leave the store (forget_member) and its run stays queued without
// variants until its owner makes them again: reopened meanwhile, it is read back as that gang,
// and the new members join the same run.
TEST(StoreTest, AGangRunWhoseMembersWereForgottenIsReadBackAsTheGangWaitingForThem) {
  testing::ScratchDir dir;
  const std::string path = dir.file("state.db");
  std::int64_t row = 0;
  {
    auto store = Store::open(path);
    ASSERT_TRUE(store.ok()) << store.message();
    JobVariant first = pod_of("ns/big", "big-0", "u0");
    JobVariant second = pod_of("ns/big", "big-1", "u1");
    first.gang = second.gang = 2;
    auto recorded = (*store)->record_arrival(arrival("ns/big", "alice", 5), first);
    ASSERT_TRUE(recorded.ok()) << recorded.message();
    row = *recorded;
    ASSERT_TRUE((*store)->record_variant(row, second).ok());
    ASSERT_TRUE((*store)->forget_member(first.pod, row).ok());
    ASSERT_TRUE((*store)->forget_member(second.pod, row).ok());
  }
  auto store = Store::open(path);
  ASSERT_TRUE(store.ok()) << store.message();
  auto state = (*store)->load();
  ASSERT_TRUE(state.ok()) << state.message();
  ASSERT_EQ(1u, state->jobs.size());
  EXPECT_EQ(row, state->jobs[0].row);
  EXPECT_EQ(JobPhase::kQueued, state->jobs[0].phase);
  EXPECT_EQ(2, state->jobs[0].gang) << "still a gang of 2, waiting for its members";
  EXPECT_TRUE(state->variants.empty());
  JobVariant again = pod_of("ns/big", "big-0-again", "u2");
  again.gang = 2;
  ASSERT_TRUE((*store)->record_variant(row, again).ok());
  state = (*store)->load();
  ASSERT_TRUE(state.ok()) << state.message();
  ASSERT_EQ(1u, state->jobs.size());
  ASSERT_EQ(1u, state->variants.size());
  EXPECT_EQ(row, state->variants[0].job_row);
  EXPECT_EQ("big-0-again", state->variants[0].variant.pod.name);
}

TEST(StoreTest, ANewStoreUsesSmallPagesAndAnOldOneKeepsItsOwn) {
  testing::ScratchDir dir;
  const std::string fresh = dir.file("fresh.db");
  {
    auto store = Store::open(fresh);
    ASSERT_TRUE(store.ok()) << store.message();
    ASSERT_TRUE(
        (*store)->record_arrival(arrival("lab/a", "lab", 1), pod_of("lab/a", "a", "u")).ok());
  }
  EXPECT_EQ(1024, RawDb(fresh).count("PRAGMA page_size"));

  const std::string old = dir.file("old.db");
  {
    RawDb four_kb(old);
    // A file laid out in 4 KB pages that holds no table (another application's is refused).
    ASSERT_EQ(SQLITE_OK, four_kb.exec("PRAGMA page_size=4096; CREATE TABLE t (x INTEGER);"
                                      "DROP TABLE t;"));
  }
  {
    auto store = Store::open(old);
    ASSERT_TRUE(store.ok()) << store.message();
    ASSERT_TRUE(
        (*store)->record_arrival(arrival("lab/b", "lab", 2), pod_of("lab/b", "b", "v")).ok());
  }
  EXPECT_EQ(4096, RawDb(old).count("PRAGMA page_size"));
  auto reopened = Store::open(old);
  ASSERT_TRUE(reopened.ok()) << reopened.message();
  auto state = (*reopened)->load();
  ASSERT_TRUE(state.ok()) << state.message();
  ASSERT_EQ(1u, state->jobs.size());
  EXPECT_EQ("lab/b", state->jobs[0].id);
}

// Each unusable database path is refused naming the path and its cause.
TEST(StoreTest, UnusablePathsAreErrorsNamingTheirCause) {
  testing::ScratchDir dir;
  const std::string not_sqlite = dir.file("not-sqlite.db");
  std::ofstream(not_sqlite) << std::string(4096, 'x');
  const std::string directory = dir.file("a-directory");
  std::filesystem::create_directory(directory);
  struct Case {
    std::string path, error;
  };
  const Case cases[] = {
      {"/nonexistent-dir/x/state.db",
       "store: cannot use '/nonexistent-dir/x/state.db' as the database: its directory "
       "/nonexistent-dir/x does not exist"},
      {directory, "store: cannot use '" + directory + "' as the database: it is a directory"},
      {"/dev/null",
       "store: cannot use '/dev/null' as the database: it is not a regular file (a device, FIFO "
       "or socket)"},
      {not_sqlite,
       "store: cannot use '" + not_sqlite + "' as the database: file is not a database"},
  };
  for (const Case& c : cases) {
    auto store = Store::open(c.path);
    ASSERT_FALSE(store.ok()) << c.path;
    EXPECT_EQ(c.error, store.message());
  }
}

// One writer per database: a second open waits for nothing and is refused, naming the holder;
// once the first store closes, the database opens again (as it does after a kill -9, which
// drops the lock with the process: WrittenChangesSurviveAKill9OfTheProcess reopens it).
TEST(StoreTest, ASecondOpenOfOneDatabaseIsRefusedWhileTheFirstHoldsIt) {
  testing::ScratchDir dir;
  const std::string path = dir.file("state.db");
  auto first = Store::open(path);
  ASSERT_TRUE(first.ok()) << first.message();
  auto second = Store::open(path);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ("store: '" + path + "' is in use by another alloxd (pid " + std::to_string(::getpid()) +
                "): one alloxd per database",
            second.message());
  auto reader = Store::open_for_reading(path);
  EXPECT_TRUE(reader.ok()) << "a report reads beside the writer: " << reader.message();
  first->reset();
  auto again = Store::open(path);
  EXPECT_TRUE(again.ok()) << again.message();
}

TEST(StoreTest, AnotherApplicationsDatabaseIsRefusedAndLeftUnchanged) {
  testing::ScratchDir dir;
  const std::string path = dir.file("theirs.db");
  {
    RawDb theirs(path);
    ASSERT_EQ(SQLITE_OK, theirs.exec("CREATE TABLE orders (id INTEGER); CREATE TABLE t (x);"
                                     "CREATE TABLE u (x); CREATE TABLE v (x);"));
  }
  auto store = Store::open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ("store: cannot use '" + path +
                "' as the database: holds another application's tables (orders, t, u, ...), not "
                "allox's: give a new file or an allox store",
            store.message());
  RawDb after(path);
  EXPECT_EQ(4, after.count("SELECT count(*) FROM sqlite_master"));
  EXPECT_EQ(0, after.count("PRAGMA user_version"));
}

TEST(StoreTest, ReadingOpensOnlyAnAlloxStoreOfThisVersionAndWritesNothing) {
  testing::ScratchDir dir;
  const std::string ours = dir.file("state.db");
  {
    auto store = Store::open(ours);
    ASSERT_TRUE(store.ok()) << store.message();
    ASSERT_TRUE(record_jobs(**store, 3).ok());
  }
  auto reader = Store::open_for_reading(ours);
  ASSERT_TRUE(reader.ok()) << reader.message();
  auto state = (*reader)->load();
  ASSERT_TRUE(state.ok()) << state.message();
  EXPECT_EQ(3u, state->jobs.size());
  auto write =
      (*reader)->record_arrival(arrival("ns/late", "alice", 1), pod_of("ns/late", "q", "v"));
  EXPECT_FALSE(write.ok());
  EXPECT_NE(std::string::npos, write.message().find("readonly")) << write.message();
  reader->reset();
  EXPECT_EQ(3u, (*Store::open(ours))->load()->jobs.size());

  const std::string missing = dir.file("missing.db");
  EXPECT_EQ("store: cannot use '" + missing + "' as the database: it does not exist",
            Store::open_for_reading(missing).message());
  EXPECT_FALSE(std::filesystem::exists(missing));

  const std::string empty = dir.file("empty.db");
  std::ofstream{empty};
  EXPECT_EQ("store: cannot use '" + empty + "' as the database: empty: no allox tables",
            Store::open_for_reading(empty).message());
  EXPECT_EQ(0u, std::filesystem::file_size(empty));

  const std::string theirs = dir.file("theirs.db");
  RawDb(theirs).exec("CREATE TABLE orders (id INTEGER)");
  EXPECT_EQ("store: cannot use '" + theirs +
                "' as the database: holds another application's tables (orders), not allox's",
            Store::open_for_reading(theirs).message());

  const std::string old = dir.file("old.db");
  RawDb(old).exec("CREATE TABLE jobs (id TEXT PRIMARY KEY)");
  EXPECT_EQ("store: cannot use '" + old +
                "' as the database: schema version 1, older than this allox's (5): start alloxd "
                "on it once to migrate it",
            Store::open_for_reading(old).message());
  RawDb(old).exec("PRAGMA user_version = 99");
  EXPECT_EQ("store: cannot use '" + old +
                "' as the database: schema version 99 is newer than this allox (5)",
            Store::open_for_reading(old).message());
}

}  // namespace
}  // namespace allox::extender
