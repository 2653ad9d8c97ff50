#include "extender/store.h"

#include <sqlite3.h>

#include <nlohmann/json.hpp>

namespace allox::extender {
namespace {

// Schema version 2: job runs keyed by row (version 1 keyed jobs by id, so a re-created pod
// could never start a new run, and a job row and its variant row were two transactions).
constexpr int kSchemaVersion = 2;

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
  PRIMARY KEY (pod_namespace, pod_name)
);
CREATE INDEX IF NOT EXISTS variants_job ON variants (job_row);
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
                      iterations, time_hints)
  SELECT v.pod_namespace, v.pod_name, v.pod_uid, j.row, v.job_id, v.user, v.device,
         v.iterations, v.time_hints FROM variants_v1 v JOIN jobs j ON j.id = v.job_id;
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

// Runs load() brings back (? = finished_since), and runs prune_history() deletes
// (? = finished_before).
#define ALLOX_STORE_LOADED_RUNS "(phase IN ('queued', 'running', 'removed') OR finish >= ?1)"
#define ALLOX_STORE_PRUNED_RUNS "(phase IN ('done', 'removed') AND finish < ?1)"

// One prepared statement, finalized on scope exit. The first failure (prepare or bind) is kept
// and reported by the first step, so a statement is never run half-bound.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
    if (rc_ != SQLITE_OK) error_ = sqlite3_errmsg(db);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, const std::string& v) {
    return check(
        sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  Statement& bind(int i, double v) { return check(sqlite3_bind_double(stmt_, i, v)); }
  Statement& bind(int i, std::int64_t v) { return check(sqlite3_bind_int64(stmt_, i, v)); }
  Statement& bind_null(int i) { return check(sqlite3_bind_null(stmt_, i)); }

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

 private:
  Statement& check(int rc) {
    if (rc != SQLITE_OK && rc_ == SQLITE_OK) {
      rc_ = rc;
      error_ = sqlite3_errmsg(db_);
    }
    return *this;
  }

  sqlite3* db_;
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

JobPhase phase_from(const std::string& name) {
  if (name == "running") return JobPhase::kRunning;
  if (name == "done") return JobPhase::kDone;
  if (name == "removed") return JobPhase::kRemoved;
  return JobPhase::kQueued;
}

Status insert_variant(sqlite3* db, std::int64_t job_row, const JobVariant& variant) {
  Statement s(db,
              "INSERT OR REPLACE INTO variants (pod_namespace, pod_name, pod_uid, job_row, "
              "job_id, user, device, iterations, time_hints) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  s.bind(1, variant.pod.namespace_name)
      .bind(2, variant.pod.name)
      .bind(3, variant.pod.uid)
      .bind(4, job_row)
      .bind(5, variant.job_id)
      .bind(6, variant.user)
      .bind(7, variant.device);
  if (variant.iterations) {
    s.bind(8, *variant.iterations);
  } else {
    s.bind_null(8);
  }
  s.bind(9, nlohmann::json(variant.time_hints).dump());
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

Expected<std::unique_ptr<Store>> Store::open(const std::string& path,
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
  for (const char* pragma : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL"}) {
    if (auto s = store->exec(pragma); !s) return s.error();
  }
  if (auto s = store->migrate(); !s) return s.error();
  return store;
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
  return transaction([&]() -> Status {
    if (from_v1) {
      if (auto s = exec(kMigrateFromVersion1); !s) return s;
    }
    if (auto s = exec(kSchema); !s) return s;
    if (from_v1) {
      if (auto s = exec(kCopyFromVersion1); !s) return s;
    }
    return exec(("PRAGMA user_version = " + std::to_string(kSchemaVersion)).c_str());
  });
}

Store::~Store() {
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

Status Store::transaction(const std::function<Status()>& body, Mode mode) {
  if (auto s = exec(mode == Mode::kWrite ? "BEGIN IMMEDIATE" : "BEGIN"); !s) return s;
  Status status = body();
  if (status) status = exec("COMMIT");
  // A failed COMMIT (BUSY, IOERR) leaves the transaction open: roll it back so the next write
  // does not silently join it. get_autocommit is nonzero once no transaction is open.
  if (!status && sqlite3_get_autocommit(db_) == 0) (void)exec("ROLLBACK");
  return status;
}

Expected<std::int64_t> Store::record_arrival(const JobRecord& job, const JobVariant& first) {
  std::lock_guard lock(mu_);
  std::int64_t row = 0;
  Status status = transaction([&]() -> Status {
    Statement s(db_, "INSERT INTO jobs (id, user, arrival) VALUES (?, ?, ?)");
    s.bind(1, job.id).bind(2, job.user).bind(3, job.arrival);
    if (auto r = s.run("record arrival of " + job.id); !r) return r;
    row = sqlite3_last_insert_rowid(db_);
    return insert_variant(db_, row, first);
  });
  if (!status) return status.error();
  return row;
}

Status Store::record_variant(std::int64_t job_row, const JobVariant& variant) {
  std::lock_guard lock(mu_);
  return transaction([&] { return insert_variant(db_, job_row, variant); });
}

Status Store::record_bind_intent(const BindIntent& intent) {
  std::lock_guard lock(mu_);
  return transaction([&]() -> Status {
    Statement s(db_,
                "INSERT OR REPLACE INTO bind_intents (job_row, job_id, pod_namespace, pod_name, "
                "pod_uid, node, device, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    s.bind(1, intent.job_row)
        .bind(2, intent.job_id)
        .bind(3, intent.pod.namespace_name)
        .bind(4, intent.pod.name)
        .bind(5, intent.pod.uid)
        .bind(6, intent.node)
        .bind(7, intent.device)
        .bind(8, intent.at);
    return s.run("record bind intent");
  });
}

Status Store::drop_bind_intent(std::int64_t job_row) {
  std::lock_guard lock(mu_);
  return transaction([&]() -> Status {
    Statement s(db_, "DELETE FROM bind_intents WHERE job_row = ?");
    s.bind(1, job_row);
    return s.run("drop bind intent");
  });
}

Status Store::forget_variant(const PodIdentity& pod, std::int64_t job_row) {
  std::lock_guard lock(mu_);
  return transaction([&]() -> Status {
    Statement variant(
        db_, "DELETE FROM variants WHERE pod_namespace = ? AND pod_name = ? AND job_row = ?");
    variant.bind(1, pod.namespace_name).bind(2, pod.name).bind(3, job_row);
    if (auto s = variant.run("forget variant"); !s) return s;
    // A queued run left without variants goes with its samples (no orphan rows).
    for (const char* sql :
         {"DELETE FROM profiles WHERE job_row = ?1 AND EXISTS (SELECT 1 FROM jobs WHERE row = ?1 "
          "AND phase = 'queued') AND NOT EXISTS (SELECT 1 FROM variants WHERE job_row = ?1)",
          "DELETE FROM jobs WHERE row = ?1 AND phase = 'queued' AND NOT EXISTS "
          "(SELECT 1 FROM variants WHERE job_row = ?1)"}) {
      Statement statement(db_, sql);
      statement.bind(1, job_row);
      if (auto s = statement.run("forget run"); !s) return s;
    }
    return OkStatus();
  });
}

Status Store::record_start(const JobRecord& job) {
  std::lock_guard lock(mu_);
  return transaction([&]() -> Status {
    Statement update(db_,
                     "UPDATE jobs SET phase = 'running', pod_namespace = ?, pod_name = ?, "
                     "pod_uid = ?, node = ?, device = ?, machine = ?, start = ? WHERE row = ?");
    update.bind(1, job.pod_namespace)
        .bind(2, job.pod_name)
        .bind(3, job.pod_uid)
        .bind(4, job.node)
        .bind(5, job.device)
        .bind(6, static_cast<std::int64_t>(job.machine))
        .bind(7, job.start)
        .bind(8, job.row);
    if (auto s = run_on_one_row(db_, update, "record start of " + job.id, job.row); !s) return s;
    Statement usage(db_,
                    "INSERT OR REPLACE INTO usage (job_row, job_id, user, device, node, start, "
                    "end) VALUES (?, ?, ?, ?, ?, ?, NULL)");
    usage.bind(1, job.row)
        .bind(2, job.id)
        .bind(3, job.user)
        .bind(4, job.device)
        .bind(5, job.node)
        .bind(6, job.start);
    if (auto s = usage.run("record usage"); !s) return s;
    Statement intent(db_, "DELETE FROM bind_intents WHERE job_row = ?");
    intent.bind(1, job.row);
    return intent.run("clear bind intent");
  });
}

Status Store::record_finish(std::int64_t job_row, double finish) {
  return end_run(job_row, "done", finish);
}

Status Store::record_removal(std::int64_t job_row, double at) {
  return end_run(job_row, "removed", at);
}

Status Store::end_run(std::int64_t job_row, const char* phase, double at) {
  std::lock_guard lock(mu_);
  const std::string what = std::string("record ") + phase;
  return transaction([&]() -> Status {
    Statement update(db_, "UPDATE jobs SET phase = ?, finish = ? WHERE row = ?");
    update.bind(1, std::string(phase)).bind(2, at).bind(3, job_row);
    if (auto s = run_on_one_row(db_, update, what, job_row); !s) return s;
    // A finished run has a usage row and no intent, a removed (queued) one the other way round;
    // either statement touches no row where there is nothing to end.
    Statement usage(db_, "UPDATE usage SET end = ? WHERE job_row = ?");
    usage.bind(1, at).bind(2, job_row);
    if (auto s = usage.run("close usage"); !s) return s;
    Statement intent(db_, "DELETE FROM bind_intents WHERE job_row = ?");
    intent.bind(1, job_row);
    return intent.run("clear bind intent");
  });
}

Status Store::record_profile(const ProfileSample& sample) {
  std::lock_guard lock(mu_);
  return transaction([&]() -> Status {
    Statement s(db_,
                "INSERT INTO profiles (job_row, job_id, device, kind, iterations, seconds, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)");
    s.bind(1, sample.job_row)
        .bind(2, sample.job_id)
        .bind(3, sample.device)
        .bind(4, std::string(sample.kind == ProfileSample::Kind::kProfile ? "profile" : "progress"))
        .bind(5, sample.iterations)
        .bind(6, sample.seconds)
        .bind(7, sample.at);
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
          job.row = jobs.integer(0);
          job.id = jobs.text(1);
          job.user = jobs.text(2);
          job.arrival = jobs.real(3);
          job.phase = phase_from(jobs.text(4));
          job.pod_namespace = jobs.text(5);
          job.pod_name = jobs.text(6);
          job.pod_uid = jobs.text(7);
          job.node = jobs.text(8);
          job.device = jobs.text(9);
          job.machine = static_cast<int>(jobs.integer(10));
          job.start = jobs.real(11);
          job.finish = jobs.real(12);
          state.jobs.push_back(std::move(job));
        }
        if (auto s = jobs.status("read jobs"); !s) return s;

        Statement variants(
            db_,
            "SELECT pod_namespace, pod_name, pod_uid, job_row, job_id, user, device, "
            "iterations, time_hints FROM variants "
            "WHERE job_row IN (SELECT row FROM jobs WHERE " ALLOX_STORE_LOADED_RUNS
            ") ORDER BY rowid");
        variants.bind(1, finished_since);
        while (variants.next()) {
          StoredVariant stored;
          JobVariant& v = stored.variant;
          v.pod = {variants.text(1), variants.text(0), variants.text(2)};
          stored.job_row = variants.integer(3);
          v.job_id = variants.text(4);
          v.user = variants.text(5);
          v.device = variants.text(6);
          if (!variants.is_null(7)) v.iterations = variants.integer(7);
          auto hints = nlohmann::json::parse(variants.text(8), nullptr, false);
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
          p.job_row = profiles.integer(0);
          p.job_id = profiles.text(1);
          p.device = profiles.text(2);
          p.kind = profiles.text(3) == "progress" ? ProfileSample::Kind::kProgress
                                                  : ProfileSample::Kind::kProfile;
          p.iterations = profiles.integer(4);
          p.seconds = profiles.real(5);
          p.at = profiles.real(6);
          state.profiles.push_back(std::move(p));
        }
        if (auto s = profiles.status("read profiles"); !s) return s;

        Statement intents(db_,
                          "SELECT job_row, job_id, pod_namespace, pod_name, pod_uid, node, device, "
                          "at FROM bind_intents ORDER BY job_row");
        while (intents.next()) {
          BindIntent intent;
          intent.job_row = intents.integer(0);
          intent.job_id = intents.text(1);
          intent.pod = {intents.text(3), intents.text(2), intents.text(4)};
          intent.node = intents.text(5);
          intent.device = intents.text(6);
          intent.at = intents.real(7);
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
