#include "alloxd/store/store.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "core/log.h"
#include "core/thread_priority.h"

namespace allox::extender {
namespace {

// Schema version 2: job runs keyed by row (version 1 keyed jobs by id, so a re-created pod
// could never start a new run, and a job row and its variant row were two transactions).
// Version 3: variants WITHOUT ROWID, stored in their primary key's b-tree alone: a rowid table
// kept the rows in one b-tree and the key in another, and a variant deleted when its job starts
// elsewhere dirtied a page in each (docs/performance.md, "Store writes"). `seq` keeps the
// order a job's variants were recorded in, which version 2 read off the rowid.
constexpr int kSchemaVersion = 3;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS jobs (
  row INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL,
  user TEXT NOT NULL,
  arrival REAL NOT NULL,
  phase TEXT NOT NULL DEFAULT 'queued',
  pod_namespace TEXT NOT NULL DEFAULT '',
  pod_name TEXT NOT NULL DEFAULT '',
  pod_uid TEXT NOT NULL DEFAULT '',
  node TEXT NOT NULL DEFAULT '',
  device TEXT NOT NULL DEFAULT '',
  machine INTEGER NOT NULL DEFAULT -1,
  start REAL NOT NULL DEFAULT 0,
  finish REAL NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX IF NOT EXISTS jobs_live_id ON jobs (id) WHERE phase IN ('queued', 'running');
CREATE INDEX IF NOT EXISTS jobs_finish ON jobs (finish) WHERE phase IN ('done', 'removed');
CREATE TABLE IF NOT EXISTS variants (
  pod_namespace TEXT NOT NULL,
  pod_name TEXT NOT NULL,
  pod_uid TEXT NOT NULL,
  job_row INTEGER NOT NULL,
  job_id TEXT NOT NULL,
  user TEXT NOT NULL,
  device TEXT NOT NULL,
  iterations INTEGER,
  time_hints TEXT NOT NULL,
  seq INTEGER NOT NULL,
  PRIMARY KEY (pod_namespace, pod_name)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS variants_job ON variants (job_row, seq);
CREATE TABLE IF NOT EXISTS profiles (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  job_row INTEGER NOT NULL,
  job_id TEXT NOT NULL,
  device TEXT NOT NULL,
  kind TEXT NOT NULL,
  iterations INTEGER NOT NULL,
  seconds REAL NOT NULL,
  at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS profiles_job ON profiles (job_row);
CREATE TABLE IF NOT EXISTS usage (
  job_row INTEGER PRIMARY KEY,
  job_id TEXT NOT NULL,
  user TEXT NOT NULL,
  device TEXT NOT NULL,
  node TEXT NOT NULL,
  start REAL NOT NULL,
  end REAL
);
CREATE TABLE IF NOT EXISTS bind_intents (
  job_row INTEGER PRIMARY KEY,
  job_id TEXT NOT NULL,
  pod_namespace TEXT NOT NULL,
  pod_name TEXT NOT NULL,
  pod_uid TEXT NOT NULL,
  node TEXT NOT NULL,
  device TEXT NOT NULL,
  at REAL NOT NULL
);
)sql";

// Version 1 tables renamed aside, copied into version 2 (one row per job id), then dropped.
constexpr const char* kMigrateFromVersion1 = R"sql(
ALTER TABLE jobs RENAME TO jobs_v1;
ALTER TABLE variants RENAME TO variants_v1;
ALTER TABLE profiles RENAME TO profiles_v1;
ALTER TABLE usage RENAME TO usage_v1;
)sql";
constexpr const char* kCopyFromVersion1 = R"sql(
INSERT INTO jobs (id, user, arrival, phase, pod_namespace, pod_name, pod_uid, node, device,
                  machine, start, finish)
  SELECT id, user, arrival, phase, pod_namespace, pod_name, pod_uid, node, device, machine,
         start, finish FROM jobs_v1 ORDER BY arrival, id;
INSERT INTO variants (pod_namespace, pod_name, pod_uid, job_row, job_id, user, device,
                      iterations, time_hints, seq)
  SELECT v.pod_namespace, v.pod_name, v.pod_uid, j.row, v.job_id, v.user, v.device,
         v.iterations, v.time_hints, v.rowid FROM variants_v1 v JOIN jobs j ON j.id = v.job_id;
INSERT INTO profiles (job_row, job_id, device, kind, iterations, seconds, at)
  SELECT j.row, p.job_id, p.device, p.kind, p.iterations, p.seconds, p.at
  FROM profiles_v1 p JOIN jobs j ON j.id = p.job_id ORDER BY p.seq;
INSERT INTO usage (job_row, job_id, user, device, node, start, end)
  SELECT j.row, u.job_id, u.user, u.device, u.node, u.start, u.end
  FROM usage_v1 u JOIN jobs j ON j.id = u.job_id;
DROP TABLE jobs_v1;
DROP TABLE variants_v1;
DROP TABLE profiles_v1;
DROP TABLE usage_v1;
)sql";

// Version 2's variants renamed aside (its index first: the name is the new table's), copied
// into version 3 with the rowid as the order, then dropped.
constexpr const char* kMigrateFromVersion2 = R"sql(
DROP INDEX IF EXISTS variants_job;
ALTER TABLE variants RENAME TO variants_v2;
)sql";
constexpr const char* kCopyFromVersion2 = R"sql(
INSERT INTO variants (pod_namespace, pod_name, pod_uid, job_row, job_id, user, device,
                      iterations, time_hints, seq)
  SELECT pod_namespace, pod_name, pod_uid, job_row, job_id, user, device, iterations,
         time_hints, rowid FROM variants_v2;
DROP TABLE variants_v2;
)sql";

// Runs load() brings back (? = finished_since), and runs prune_history() deletes
// (? = finished_before).
#define ALLOX_STORE_LOADED_RUNS "(phase IN ('queued', 'running', 'removed') OR finish >= ?1)"
#define ALLOX_STORE_PRUNED_RUNS "(phase IN ('done', 'removed') AND finish < ?1)"

}  // namespace

// The write paths' prepared statements, kept for the connection's life: a 50,000-job backlog
// runs the same dozen statements hundreds of thousands of times, and parsing each one every
// time was a tenth of alloxd's CPU at that scale. Keyed by the SQL text; used under the store's
// mutex only. A statement is lent to one user at a time: a nested use of the same SQL (none
// today) would prepare its own.
class StatementCache {
 public:
  explicit StatementCache(sqlite3* db) : db_(db) {}
  ~StatementCache() {
    for (auto& [sql, entry] : entries_) sqlite3_finalize(entry.stmt);
  }
  StatementCache(const StatementCache&) = delete;
  StatementCache& operator=(const StatementCache&) = delete;

  sqlite3* db() const { return db_; }
  // The statement for `sql`, or null when it is lent out (the caller prepares its own). rc is
  // SQLite's result of preparing it (on first use).
  sqlite3_stmt* lend(const char* sql, int& rc) {
    rc = SQLITE_OK;
    auto it = entries_.find(std::string_view(sql));  // no key built: a lookup allocates nothing
    if (it == entries_.end()) {
      sqlite3_stmt* stmt = nullptr;
      rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
      if (rc != SQLITE_OK) {
        sqlite3_finalize(stmt);
        return nullptr;
      }
      // Keyed by the statement's own copy of its SQL, which lives as long as it does.
      it = entries_.emplace(std::string_view(sqlite3_sql(stmt)), Entry{stmt, false}).first;
    }
    if (it->second.lent) return nullptr;
    it->second.lent = true;
    return it->second.stmt;
  }
  // Back from a user: reset (a statement left mid-step would hold its read open) and unbound.
  void give_back(sqlite3_stmt* stmt) {
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    entries_.at(std::string_view(sqlite3_sql(stmt))).lent = false;
  }

 private:
  struct Entry {
    sqlite3_stmt* stmt = nullptr;
    bool lent = false;
  };
  sqlite3* db_;
  std::unordered_map<std::string_view, Entry> entries_;
};

namespace {

// One prepared statement: its own, finalized on scope exit, or (from a StatementCache) lent and
// given back on scope exit. The first failure (prepare or bind) is kept and reported by the
// first step, so a statement is never run half-bound.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) { prepare(sql); }
  Statement(StatementCache& cache, const char* sql) : db_(cache.db()) {
    stmt_ = cache.lend(sql, rc_);
    if (stmt_ != nullptr) {
      cache_ = &cache;
    } else if (rc_ == SQLITE_OK) {
      prepare(sql);  // lent out already
    } else {
      error_ = sqlite3_errmsg(db_);
    }
  }
  ~Statement() {
    if (cache_ != nullptr) {
      cache_->give_back(stmt_);
    } else {
      sqlite3_finalize(stmt_);
    }
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, const std::string& v) {
    return check(
        sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  Statement& bind(int i, double v) { return check(sqlite3_bind_double(stmt_, i, v)); }
  Statement& bind(int i, std::int64_t v) { return check(sqlite3_bind_int64(stmt_, i, v)); }
  Statement& bind_null(int i) { return check(sqlite3_bind_null(stmt_, i)); }
  template <class T>
  Statement& bind(int i, const std::optional<T>& v) {
    return v ? bind(i, *v) : bind_null(i);
  }
  // Binds the arguments to ?1, ?2, ... in order: one call per statement, so a column added to
  // the SQL and not to the call shows up as a count mismatch in one place.
  template <class... Args>
  Statement& bind_all(const Args&... args) {
    int i = 0;
    (bind(++i, args), ...);
    return *this;
  }

  // Advances to the next row: true with a row, false at the end or on an error (see status()).
  bool next() {
    if (rc_ != SQLITE_OK && rc_ != SQLITE_ROW) return false;
    rc_ = sqlite3_step(stmt_);
    if (rc_ == SQLITE_ROW) return true;
    if (rc_ != SQLITE_DONE) error_ = sqlite3_errmsg(db_);
    return false;
  }
  // Runs a statement that returns no rows.
  Status run(const std::string& what) {
    next();
    return status(what);
  }
  // OK once the statement ran to its end; the error otherwise (BUSY, IOERR, a constraint).
  Status status(const std::string& what) const {
    if (rc_ == SQLITE_DONE) return OkStatus();
    if (rc_ == SQLITE_ROW) return Error{"store: " + what + ": rows left unread"};
    return Error{"store: " + what + ": " + error_ + " (SQLite code " + std::to_string(rc_) + ")"};
  }
  std::string text(int col) const {
    const unsigned char* s = sqlite3_column_text(stmt_, col);
    return s == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(s));
  }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  std::int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  // Reads the current row's columns 0, 1, ... into the arguments in order (bind_all's mirror).
  template <class... Args>
  void columns(Args&... out) const {
    int col = 0;
    (column(col++, out), ...);
  }

 private:
  void column(int col, std::string& out) const { out = text(col); }
  void column(int col, double& out) const { out = real(col); }
  void column(int col, std::int64_t& out) const { out = integer(col); }
  void column(int col, int& out) const { out = static_cast<int>(integer(col)); }
  void column(int col, std::optional<std::int64_t>& out) const {
    out = is_null(col) ? std::nullopt : std::optional<std::int64_t>(integer(col));
  }

  Statement& check(int rc) {
    if (rc != SQLITE_OK && rc_ == SQLITE_OK) {
      rc_ = rc;
      error_ = sqlite3_errmsg(db_);
    }
    return *this;
  }

  void prepare(const char* sql) {
    rc_ = sqlite3_prepare_v2(db_, sql, -1, &stmt_, nullptr);
    if (rc_ != SQLITE_OK) error_ = sqlite3_errmsg(db_);
  }

  sqlite3* db_;
  StatementCache* cache_ = nullptr;  // set when the statement is the cache's
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_OK;
  std::string error_;
};

// An UPDATE that must touch exactly one run.
Status run_on_one_row(sqlite3* db, Statement& statement, const std::string& what,
                      std::int64_t row) {
  if (auto s = statement.run(what); !s) return s;
  if (sqlite3_changes(db) != 1) {
    return Error{"store: " + what + ": no job run with row " + std::to_string(row)};
  }
  return OkStatus();
}

// Every path that ends a bind (the pod started, the run ended, the intent was dropped) clears it.
Status clear_bind_intent(StatementCache& db, std::int64_t job_row, const std::string& what) {
  Statement intent(db, "DELETE FROM bind_intents WHERE job_row = ?");
  intent.bind(1, job_row);
  return intent.run(what);
}

JobPhase phase_from(const std::string& name) {
  if (name == "running") return JobPhase::kRunning;
  if (name == "done") return JobPhase::kDone;
  if (name == "removed") return JobPhase::kRemoved;
  return JobPhase::kQueued;
}

Status insert_variant(StatementCache& db, std::int64_t job_row, const JobVariant& variant) {
  Statement s(db,
              "INSERT OR REPLACE INTO variants (pod_namespace, pod_name, pod_uid, job_row, "
              "job_id, user, device, iterations, time_hints, seq) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
              "?7, ?8, ?9, (SELECT coalesce(max(seq), 0) + 1 FROM variants WHERE job_row = ?4))");
  s.bind_all(variant.pod.namespace_name, variant.pod.name, variant.pod.uid, job_row, variant.job_id,
             variant.user, variant.device, variant.iterations,
             nlohmann::json(variant.time_hints).dump());
  return s.run("record variant");
}

}  // namespace

const char* phase_name(JobPhase phase) {
  switch (phase) {
    case JobPhase::kQueued:
      return "queued";
    case JobPhase::kRunning:
      return "running";
    case JobPhase::kDone:
      return "done";
    case JobPhase::kRemoved:
      return "removed";
  }
  return "queued";
}

Store::Store(sqlite3* db) : db_(db), statements_(std::make_unique<StatementCache>(db)) {}

namespace {

// Why `path` cannot hold alloxd's database, checked before SQLite sees it: SQLite's own words for
// these ("unable to open database file", "disk I/O error") do not say which is the case.
std::optional<std::string> unusable_database_path(const std::string& path) {
  if (path == ":memory:" || path.empty()) return std::nullopt;
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::exists(status)) {
    if (fs::is_directory(status)) return "it is a directory";
    if (!fs::is_regular_file(status)) return "it is not a regular file (a device, FIFO or socket)";
    return std::nullopt;
  }
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  const fs::file_status dir = fs::status(parent, ec);
  if (!fs::exists(dir)) return "its directory " + parent.string() + " does not exist";
  if (!fs::is_directory(dir)) return parent.string() + " is not a directory";
  return std::nullopt;
}

}  // namespace

Expected<std::unique_ptr<Store>> Store::open(const std::string& path,
                                             std::chrono::milliseconds busy_timeout) {
  if (auto problem = unusable_database_path(path)) {
    return Error{"store: cannot use '" + path + "' as the database: " + *problem};
  }
  auto opened = open_sqlite(path, busy_timeout);
  if (!opened) {
    // SQLite's own message ("file is not a database") with the path it is about.
    std::string message = opened.message();
    if (message.find(path) == std::string::npos) {
      message = "store: cannot use '" + path + "' as the database: " +
                (message.rfind("store: ", 0) == 0 ? message.substr(7) : message);
    }
    return Error{message};
  }
  return opened;
}

Expected<std::unique_ptr<Store>> Store::open_sqlite(const std::string& path,
                                                    std::chrono::milliseconds busy_timeout) {
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Error{"store: cannot open '" + path + "': " + message};
  }
  std::unique_ptr<Store> store(new Store(db));
  sqlite3_busy_timeout(db, static_cast<int>(busy_timeout.count()));
  // 1 KB pages for a new file (an existing one keeps its own): every commit writes each page it
  // touches whole to the WAL, and alloxd's commits change a row or two, so 4 KB pages wrote 2.6x
  // the bytes (1.66 GB against 0.64 GB for 50,000 jobs in `allox bench cluster`) and kept the
  // kernel's writeback busy on the cores the request threads need. Set before journal_mode=WAL,
  // which fixes the page size of the file.
  for (const char* pragma :
       {"PRAGMA page_size=1024", "PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL"}) {
    if (auto s = store->exec(pragma); !s) return s.error();
  }
  if (auto s = store->migrate(); !s) return s.error();
  if (path != ":memory:" && !path.empty()) {
    if (auto s = store->start_checkpointer(path); !s) return s.error();
  }
  return store;
}

Status Store::start_checkpointer(const std::string& path) {
  int rc = sqlite3_open_v2(path.c_str(), &checkpoint_db_,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = checkpoint_db_ != nullptr ? sqlite3_errmsg(checkpoint_db_) : "no memory";
    return Error{"store: cannot open '" + path + "' for checkpoints: " + message};
  }
  sqlite3_busy_timeout(checkpoint_db_, 5000);
  // A connection reads the file's header, and so knows it is in WAL mode, only at its first
  // statement: until then sqlite3_wal_checkpoint_v2 returns OK having copied nothing (a log of
  // -1 frames), and the WAL grew without end (226 MB in one `allox bench cluster` run, the
  // database file never past its first page).
  {
    Statement mode(checkpoint_db_, "PRAGMA journal_mode");
    if (!mode.next() || mode.text(0) != "wal") {
      return Error{"store: the checkpointer's connection to '" + path +
                   "' does not see WAL mode: " + sqlite3_errmsg(checkpoint_db_)};
    }
  }
  // No busy wait: PASSIVE never waits, and RESTART and TRUNCATE run holding the store's lock
  // (checkpoint_holding_writes), so only another connection could make them wait; they then give
  // up (BUSY) rather than stall every write behind them, and a later round tries again.
  sqlite3_busy_timeout(checkpoint_db_, 0);
  // Replaces the writing connection's automatic checkpoint (sqlite3_wal_autocheckpoint is a WAL
  // hook too): its commits only say when one is due.
  sqlite3_wal_hook(db_, &Store::on_wal_commit, this);
  std::promise<void> named;
  std::future<void> running = named.get_future();
  checkpointer_ = std::thread([this, named = std::move(named)]() mutable {
    become_background_thread("allox-wal");
    named.set_value();
    checkpoint_loop();
  });
  running.wait();
  return OkStatus();
}

int Store::on_wal_commit(void* store, sqlite3* db, const char*, int pages) {
  auto* self = static_cast<Store*>(store);
  if (pages >= kWalCapPages) {
    // The checkpointer has fallen this far behind (its thread starved of a core, or of the
    // store's lock by back-to-back writes): this commit restarts the WAL itself, as SQLite's own
    // automatic checkpoint would, rather than let the file grow without bound.
    auto restart = [db] {
      return sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_RESTART, nullptr, nullptr);
    };
    int rc = restart();
    if (rc == SQLITE_BUSY) {
      // The checkpointer's PASSIVE copy holds the checkpoint lock: on a starved machine it can
      // take long enough for the writes to outgrow the cap. This commit waits for that copy to
      // end (never for the checkpointer's own restart, which needs the lock this commit holds)
      // and restarts then: the bound holds whatever the load, at the cost of this one commit.
      std::unique_lock lock(self->checkpoint_mu_);
      self->passive_done_.wait_for(lock, std::chrono::seconds(2),
                                   [self] { return !self->passive_running_; });
      lock.unlock();
      rc = restart();
    }
    if (rc == SQLITE_OK) self->wal_restarts_.fetch_add(1, std::memory_order_relaxed);
    return SQLITE_OK;
  }
  if (pages >= self->next_checkpoint_at_.load(std::memory_order_relaxed)) {
    {
      std::lock_guard lock(self->checkpoint_mu_);
      self->checkpoint_due_ = true;
    }
    self->checkpoint_cv_.notify_one();
  }
  return SQLITE_OK;
}

void Store::checkpoint_loop() {
  std::unique_lock lock(checkpoint_mu_);
  while (true) {
    checkpoint_cv_.wait(lock, [&] { return checkpoint_due_ || checkpoint_stop_; });
    if (checkpoint_stop_) return;
    checkpoint_due_ = false;
    lock.unlock();
    next_checkpoint_at_.store(checkpoint_wal(), std::memory_order_relaxed);
    lock.lock();
    ++checkpoints_;
    if (checkpoint_hook_) {
      auto hook = checkpoint_hook_;
      const std::uint64_t count = checkpoints_;
      lock.unlock();
      hook(count);
      lock.lock();
    }
  }
}

int Store::checkpoint_wal() {
  // PASSIVE: as much of the WAL as no reader still needs, without waiting for anyone, beside the
  // writes. It lets the WAL start over only when the writer happens to begin a commit after the
  // checkpoint caught up with its last one, which nothing guarantees under a steady stream of
  // commits; until then the file grows, each commit appending to new blocks (on ext4, a block
  // written for the first time costs a kworker's extent conversion on the request threads' cores).
  int frames = -1;
  {
    std::lock_guard lock(checkpoint_mu_);
    passive_running_ = true;
  }
  int rc = sqlite3_wal_checkpoint_v2(checkpoint_db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, &frames,
                                     nullptr);
  {
    std::lock_guard lock(checkpoint_mu_);
    passive_running_ = false;
  }
  passive_done_.notify_all();
  if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
    log_warn("store: WAL checkpoint failed", {{"error", sqlite3_errmsg(checkpoint_db_)}});
  }
  if (frames < kRestartPages) return std::max(frames, 0) + kCheckpointPages;
  // RESTART: what is left to copy is what was committed since the PASSIVE one, and the next
  // commit writes the WAL from its start, over blocks the file already has.
  rc = checkpoint_holding_writes(SQLITE_CHECKPOINT_RESTART, &frames);
  if (rc != SQLITE_OK) {
    if (rc != SQLITE_BUSY) {
      log_warn("store: WAL restart failed", {{"error", sqlite3_errmsg(checkpoint_db_)}});
    }
    return std::max(frames, 0) + kCheckpointPages;
  }
  wal_restarts_.fetch_add(1, std::memory_order_relaxed);
  return kCheckpointPages;
}

int Store::checkpoint_holding_writes(int mode, int* frames) {
  // Under the store's lock no transaction of this store is open or can begin, so only another
  // connection's could make it wait, and the checkpointer's connection waits for no one: BUSY.
  std::lock_guard writes(mu_);
  return sqlite3_wal_checkpoint_v2(checkpoint_db_, nullptr, mode, frames, nullptr);
}

Status Store::empty_wal() {
  if (checkpoint_db_ == nullptr) return OkStatus();  // in memory: no WAL file
  if (checkpoint_holding_writes(SQLITE_CHECKPOINT_TRUNCATE, nullptr) != SQLITE_OK) {
    return Error{std::string("store: cannot empty the WAL: ") + sqlite3_errmsg(checkpoint_db_)};
  }
  return OkStatus();
}

std::uint64_t Store::wal_restarts() const {
  return wal_restarts_.load(std::memory_order_relaxed);
}

void Store::observe_writes(WriteObserver observer) {
  std::lock_guard lock(mu_);
  write_observer_ = std::move(observer);
}

void Store::set_checkpoint_hook(std::function<void(std::uint64_t)> hook) {
  std::lock_guard lock(checkpoint_mu_);
  checkpoint_hook_ = std::move(hook);
}

std::uint64_t Store::checkpoints() const {
  std::lock_guard lock(checkpoint_mu_);
  return checkpoints_;
}

Status Store::migrate() {
  // The reads are finished (their statements finalized) before the transaction: an open
  // statement on sqlite_master would lock the tables the migration renames and drops.
  std::int64_t found = 0;
  bool from_v1 = false;
  {
    Statement version(db_, "PRAGMA user_version");
    if (!version.next()) return version.status("read schema version");
    found = version.integer(0);
  }
  if (found > kSchemaVersion) {
    return Error{"store: schema version " + std::to_string(found) + " is newer than this alloxd (" +
                 std::to_string(kSchemaVersion) + ")"};
  }
  if (found == 0) {  // version 1 never set user_version: a jobs table at 0 is version 1's
    Statement v1(db_, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'jobs'");
    from_v1 = v1.next();
    if (!from_v1) {
      if (auto s = v1.status("inspect schema"); !s) return s;
    }
  }
  const bool from_v2 = found == 2;
  return transaction([&]() -> Status {
    if (from_v1) {
      if (auto s = exec(kMigrateFromVersion1); !s) return s;
    }
    if (from_v2) {
      if (auto s = exec(kMigrateFromVersion2); !s) return s;
    }
    if (auto s = exec(kSchema); !s) return s;
    if (from_v1) {
      if (auto s = exec(kCopyFromVersion1); !s) return s;
    }
    if (from_v2) {
      if (auto s = exec(kCopyFromVersion2); !s) return s;
    }
    return exec(("PRAGMA user_version = " + std::to_string(kSchemaVersion)).c_str());
  });
}

Store::~Store() {
  if (checkpointer_.joinable()) {
    {
      std::lock_guard lock(checkpoint_mu_);
      checkpoint_stop_ = true;
    }
    checkpoint_cv_.notify_one();
    checkpointer_.join();
  }
  sqlite3_close(checkpoint_db_);  // before db_: the last connection to close checkpoints
  statements_.reset();            // finalized before their connection closes
  sqlite3_close(db_);
}

Status Store::exec(const char* sql) {
  char* message = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    std::string text = message != nullptr ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    return Error{"store: " + text};
  }
  return OkStatus();
}

Expected<int> Store::synchronous() {
  std::lock_guard lock(mu_);
  Statement level(db_, "PRAGMA synchronous");
  if (!level.next()) return level.status("read synchronous").error();
  return static_cast<int>(level.integer(0));
}

Status Store::step(const char* sql) {
  Statement statement(*statements_, sql);
  return statement.run(sql);
}

Status Store::batch(const std::function<Status()>& body, Durability durability) {
  std::lock_guard lock(mu_);
  if (batch_depth_ > 0) return body();
  return transaction(
      [&]() -> Status {
        ++batch_depth_;
        Status status = body();
        --batch_depth_;
        return status;
      },
      Mode::kWrite, durability);
}

Status Store::transaction(const std::function<Status()>& body, Mode mode, Durability durability) {
  if (batch_depth_ > 0) return body();  // part of the batch's transaction
  // WAL + NORMAL commits without an fsync (durable across a crash of alloxd, not of the OS); the
  // next FULL commit fsyncs the WAL, and with it every earlier commit. Changed only between
  // transactions, where SQLite allows it, and through exec, never a reused statement: a setting
  // is not a write path, and whether a re-stepped PRAGMA applies its value again is not
  // something to lean on for durability.
  const bool full = mode == Mode::kRead || durability == Durability::kSynced;
  if (mode == Mode::kWrite && full != synchronous_full_) {
    if (auto s = exec(full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL"); !s) return s;
    synchronous_full_ = full;
  }
  const auto began = std::chrono::steady_clock::now();
  if (auto s = step(mode == Mode::kWrite ? "BEGIN IMMEDIATE" : "BEGIN"); !s) return s;
  Status status = body();
  if (status) status = step("COMMIT");
  // A failed COMMIT (BUSY, IOERR) leaves the transaction open: roll it back so the next write
  // does not silently join it. get_autocommit is nonzero once no transaction is open.
  if (!status && sqlite3_get_autocommit(db_) == 0) (void)step("ROLLBACK");
  if (status && mode == Mode::kWrite && write_observer_) {
    write_observer_(std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(),
                    full);
  }
  return status;
}

Expected<std::int64_t> Store::record_arrival(const JobRecord& job, const JobVariant& first,
                                             Durability durability) {
  std::lock_guard lock(mu_);
  std::int64_t row = 0;
  Status status = transaction(
      [&]() -> Status {
        Statement s(*statements_, "INSERT INTO jobs (id, user, arrival) VALUES (?, ?, ?)");
        s.bind_all(job.id, job.user, job.arrival);
        if (auto r = s.run("record arrival of " + job.id); !r) return r;
        row = sqlite3_last_insert_rowid(db_);
        return insert_variant(*statements_, row, first);
      },
      Mode::kWrite, durability);
  if (!status) return status.error();
  return row;
}

Status Store::record_variant(std::int64_t job_row, const JobVariant& variant,
                             Durability durability) {
  std::lock_guard lock(mu_);
  return transaction([&] { return insert_variant(*statements_, job_row, variant); }, Mode::kWrite,
                     durability);
}

// The group new intents join while another group is being committed; its members wait.
struct Store::IntentGroup {
  std::vector<BindIntent> intents;
  std::vector<Status> outcomes;  // one per intent, once done
  bool done = false;
  // Its members wait here, not on one condition of the store: the end of a commit wakes the
  // members it wrote and one member of the next group (its leader), not every waiting bind.
  std::condition_variable cv;
};

Status Store::record_bind_intent(const BindIntent& intent) {
  std::unique_lock lock(group_mu_);
  if (!forming_) forming_ = std::make_shared<IntentGroup>();
  std::shared_ptr<IntentGroup> group = forming_;
  const std::size_t mine = group->intents.size();
  group->intents.push_back(intent);
  if (hooks_.joined) hooks_.joined(group->intents.size());
  // Leader/follower: whoever finds no commit running commits the whole forming group (its own
  // intent is in it), so while one fsync runs, the intents that arrive meanwhile gather into
  // the next group, and each group costs one fsync however large it is.
  while (!group->done) {
    if (committing_) {
      group->cv.wait(lock);
      continue;
    }
    committing_ = true;
    std::shared_ptr<IntentGroup> taken = std::move(forming_);  // == group: ours is not done
    lock.unlock();
    std::vector<Status> outcomes = commit_intents(taken->intents);
    lock.lock();
    taken->outcomes = std::move(outcomes);
    taken->done = true;
    committing_ = false;
    // Every member of the group written is done; the group formed meanwhile needs one of its
    // members to commit it (the others wait for that commit).
    taken->cv.notify_all();
    if (forming_) forming_->cv.notify_one();
  }
  return group->outcomes[mine];
}

std::uint64_t Store::intent_commits() const {
  std::lock_guard lock(group_mu_);
  return intent_commits_;
}

void Store::set_intent_hooks(IntentHooks hooks) {
  std::lock_guard lock(group_mu_);
  hooks_ = std::move(hooks);
}

std::vector<Status> Store::commit_intents(const std::vector<BindIntent>& intents) {
  std::function<void(std::size_t)> hook;
  {
    std::lock_guard lock(group_mu_);
    ++intent_commits_;
    hook = hooks_.before_commit;
  }
  if (hook) hook(intents.size());
  auto insert = [this](const BindIntent& intent) {
    Statement s(*statements_,
                "INSERT OR REPLACE INTO bind_intents (job_row, job_id, pod_namespace, pod_name, "
                "pod_uid, node, device, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    s.bind_all(intent.job_row, intent.job_id, intent.pod.namespace_name, intent.pod.name,
               intent.pod.uid, intent.node, intent.device, intent.at);
    return s.run("record bind intent of " + intent.job_id);
  };
  std::lock_guard lock(mu_);
  Status all = transaction([&]() -> Status {
    for (const BindIntent& intent : intents) {
      if (auto s = insert(intent); !s) return s;
    }
    return OkStatus();
  });
  if (all || intents.size() == 1) return std::vector<Status>(intents.size(), all);
  // One bad intent must not fail the others: each alone, in its own synced transaction.
  std::vector<Status> outcomes;
  outcomes.reserve(intents.size());
  for (const BindIntent& intent : intents) {
    outcomes.push_back(transaction([&] { return insert(intent); }));
  }
  return outcomes;
}

Status Store::drop_bind_intent(std::int64_t job_row) {
  std::lock_guard lock(mu_);
  return transaction([&] { return clear_bind_intent(*statements_, job_row, "drop bind intent"); });
}

Status Store::forget_variant(const PodIdentity& pod, std::int64_t job_row, Durability durability) {
  std::lock_guard lock(mu_);
  return transaction(
      [&]() -> Status {
        Statement variant(
            *statements_,
            "DELETE FROM variants WHERE pod_namespace = ? AND pod_name = ? AND job_row = ?");
        variant.bind_all(pod.namespace_name, pod.name, job_row);
        if (auto s = variant.run("forget variant"); !s) return s;
        // A queued run left without variants goes with its samples (no orphan rows).
        for (const char* sql :
             {"DELETE FROM profiles WHERE job_row = ?1 AND EXISTS (SELECT 1 FROM jobs WHERE row = "
              "?1 "
              "AND phase = 'queued') AND NOT EXISTS (SELECT 1 FROM variants WHERE job_row = ?1)",
              "DELETE FROM jobs WHERE row = ?1 AND phase = 'queued' AND NOT EXISTS "
              "(SELECT 1 FROM variants WHERE job_row = ?1)"}) {
          Statement statement(*statements_, sql);
          statement.bind(1, job_row);
          if (auto s = statement.run("forget run"); !s) return s;
        }
        return OkStatus();
      },
      Mode::kWrite, durability);
}

Status Store::record_start(const JobRecord& job, Durability durability) {
  std::lock_guard lock(mu_);
  return transaction(
      [&]() -> Status {
        Statement update(*statements_,
                         "UPDATE jobs SET phase = 'running', pod_namespace = ?, pod_name = ?, "
                         "pod_uid = ?, node = ?, device = ?, machine = ?, start = ? WHERE row = ?");
        update.bind_all(job.pod_namespace, job.pod_name, job.pod_uid, job.node, job.device,
                        static_cast<std::int64_t>(job.machine), job.start, job.row);
        if (auto s = run_on_one_row(db_, update, "record start of " + job.id, job.row); !s)
          return s;
        Statement usage(*statements_,
                        "INSERT OR REPLACE INTO usage (job_row, job_id, user, device, node, start, "
                        "end) VALUES (?, ?, ?, ?, ?, ?, NULL)");
        usage.bind_all(job.row, job.id, job.user, job.device, job.node, job.start);
        if (auto s = usage.run("record usage"); !s) return s;
        return clear_bind_intent(*statements_, job.row, "clear bind intent");
      },
      Mode::kWrite, durability);
}

Status Store::record_finish(std::int64_t job_row, double finish, Durability durability) {
  return end_run(job_row, "done", finish, durability);
}

Status Store::record_removal(std::int64_t job_row, double at) {
  return end_run(job_row, "removed", at, Durability::kSynced);
}

Status Store::end_run(std::int64_t job_row, const char* phase, double at, Durability durability) {
  std::lock_guard lock(mu_);
  const std::string what = std::string("record ") + phase;
  return transaction(
      [&]() -> Status {
        Statement update(*statements_, "UPDATE jobs SET phase = ?, finish = ? WHERE row = ?");
        update.bind_all(std::string(phase), at, job_row);
        if (auto s = run_on_one_row(db_, update, what, job_row); !s) return s;
        // A finished run has a usage row and no intent, a removed (queued) one the other way round;
        // either statement touches no row where there is nothing to end.
        Statement usage(*statements_, "UPDATE usage SET end = ? WHERE job_row = ?");
        usage.bind_all(at, job_row);
        if (auto s = usage.run("close usage"); !s) return s;
        return clear_bind_intent(*statements_, job_row, "clear bind intent");
      },
      Mode::kWrite, durability);
}

Status Store::record_profile(const ProfileSample& sample) {
  std::lock_guard lock(mu_);
  return transaction([&]() -> Status {
    Statement s(*statements_,
                "INSERT INTO profiles (job_row, job_id, device, kind, iterations, seconds, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)");
    s.bind_all(sample.job_row, sample.job_id, sample.device,
               std::string(sample.kind == ProfileSample::Kind::kProfile ? "profile" : "progress"),
               sample.iterations, sample.seconds, sample.at);
    return s.run("record profile");
  });
}

Expected<StoredState> Store::load(double finished_since) {
  std::lock_guard lock(mu_);
  StoredState state;
  // One read transaction: the four reads see one consistent state.
  Status status = transaction(
      [&]() -> Status {
        Statement jobs(
            db_,
            "SELECT row, id, user, arrival, phase, pod_namespace, pod_name, pod_uid, "
            "node, device, machine, start, finish FROM jobs WHERE " ALLOX_STORE_LOADED_RUNS
            " ORDER BY row");
        jobs.bind(1, finished_since);
        while (jobs.next()) {
          JobRecord job;
          std::string phase;
          jobs.columns(job.row, job.id, job.user, job.arrival, phase, job.pod_namespace,
                       job.pod_name, job.pod_uid, job.node, job.device, job.machine, job.start,
                       job.finish);
          job.phase = phase_from(phase);
          state.jobs.push_back(std::move(job));
        }
        if (auto s = jobs.status("read jobs"); !s) return s;

        Statement variants(
            db_,
            "SELECT pod_namespace, pod_name, pod_uid, job_row, job_id, user, device, "
            "iterations, time_hints FROM variants "
            "WHERE job_row IN (SELECT row FROM jobs WHERE " ALLOX_STORE_LOADED_RUNS
            ") ORDER BY job_row, seq");
        variants.bind(1, finished_since);
        while (variants.next()) {
          StoredVariant stored;
          JobVariant& v = stored.variant;
          std::string hints_text;
          variants.columns(v.pod.namespace_name, v.pod.name, v.pod.uid, stored.job_row, v.job_id,
                           v.user, v.device, v.iterations, hints_text);
          auto hints = nlohmann::json::parse(hints_text, nullptr, false);
          if (hints.is_object()) {
            for (const auto& [device, seconds] : hints.items()) {
              if (seconds.is_number()) v.time_hints[device] = seconds.get<double>();
            }
          }
          state.variants.push_back(std::move(stored));
        }
        if (auto s = variants.status("read variants"); !s) return s;

        Statement profiles(
            db_,
            "SELECT job_row, job_id, device, kind, iterations, seconds, at "
            "FROM profiles WHERE job_row IN (SELECT row FROM jobs WHERE " ALLOX_STORE_LOADED_RUNS
            ") "
            "ORDER BY seq");
        profiles.bind(1, finished_since);
        while (profiles.next()) {
          ProfileSample p;
          std::string kind;
          profiles.columns(p.job_row, p.job_id, p.device, kind, p.iterations, p.seconds, p.at);
          p.kind =
              kind == "progress" ? ProfileSample::Kind::kProgress : ProfileSample::Kind::kProfile;
          state.profiles.push_back(std::move(p));
        }
        if (auto s = profiles.status("read profiles"); !s) return s;

        Statement intents(db_,
                          "SELECT job_row, job_id, pod_namespace, pod_name, pod_uid, node, device, "
                          "at FROM bind_intents ORDER BY job_row");
        while (intents.next()) {
          BindIntent intent;
          intents.columns(intent.job_row, intent.job_id, intent.pod.namespace_name, intent.pod.name,
                          intent.pod.uid, intent.node, intent.device, intent.at);
          state.intents.push_back(std::move(intent));
        }
        return intents.status("read bind intents");
      },
      Mode::kRead);
  if (!status) return status.error();
  return state;
}

Expected<int> Store::prune_history(double finished_before) {
  std::lock_guard lock(mu_);
  int pruned = 0;
  Status status = transaction([&]() -> Status {
    Statement count(db_, "SELECT count(*) FROM jobs WHERE " ALLOX_STORE_PRUNED_RUNS);
    count.bind(1, finished_before);
    if (!count.next()) return count.status("count runs to prune");
    pruned = static_cast<int>(count.integer(0));
    for (const char* sql :
         {"DELETE FROM variants WHERE job_row IN (SELECT row FROM jobs "
          "WHERE " ALLOX_STORE_PRUNED_RUNS ")",
          "DELETE FROM profiles WHERE job_row IN (SELECT row FROM jobs "
          "WHERE " ALLOX_STORE_PRUNED_RUNS ")",
          "DELETE FROM usage WHERE job_row IN (SELECT row FROM jobs WHERE " ALLOX_STORE_PRUNED_RUNS
          ")",
          "DELETE FROM jobs WHERE " ALLOX_STORE_PRUNED_RUNS}) {
      Statement s(db_, sql);
      s.bind(1, finished_before);
      if (auto r = s.run("prune history"); !r) return r;
    }
    return OkStatus();
  });
  if (!status) return status.error();
  return pruned;
}

Expected<std::vector<UsageRecord>> Store::usage_since(double since) {
  std::lock_guard lock(mu_);
  Statement s(db_,
              "SELECT job_id, user, device, node, start, end FROM usage "
              "WHERE end IS NULL OR end >= ? ORDER BY start");
  s.bind(1, since);
  std::vector<UsageRecord> out;
  while (s.next()) {
    UsageRecord u{s.text(0), s.text(1), s.text(2), s.text(3), s.real(4), std::nullopt};
    if (!s.is_null(5)) u.end = s.real(5);
    out.push_back(std::move(u));
  }
  if (auto status = s.status("read usage"); !status) return status.error();
  return out;
}

}  // namespace allox::extender
#undef ALLOX_STORE_LOADED_RUNS
#undef ALLOX_STORE_PRUNED_RUNS
