#include "extender/store.h"

#include <sqlite3.h>

#include <nlohmann/json.hpp>

namespace allox::extender {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS jobs (
  id TEXT PRIMARY KEY,
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
CREATE TABLE IF NOT EXISTS variants (
  pod_namespace TEXT NOT NULL,
  pod_name TEXT NOT NULL,
  pod_uid TEXT NOT NULL,
  job_id TEXT NOT NULL,
  user TEXT NOT NULL,
  device TEXT NOT NULL,
  iterations INTEGER,
  time_hints TEXT NOT NULL,
  PRIMARY KEY (pod_namespace, pod_name)
);
CREATE TABLE IF NOT EXISTS profiles (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id TEXT NOT NULL,
  device TEXT NOT NULL,
  kind TEXT NOT NULL,
  iterations INTEGER NOT NULL,
  seconds REAL NOT NULL,
  at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS usage (
  job_id TEXT PRIMARY KEY,
  user TEXT NOT NULL,
  device TEXT NOT NULL,
  node TEXT NOT NULL,
  start REAL NOT NULL,
  end REAL
);
)sql";

// One prepared statement, finalized on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) stmt_ = nullptr;
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  bool ok() const { return stmt_ != nullptr; }
  Statement& bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  Statement& bind(int i, std::int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Statement& bind_null(int i) {
    sqlite3_bind_null(stmt_, i);
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return sqlite3_step(stmt_); }
  std::string text(int col) const {
    const unsigned char* s = sqlite3_column_text(stmt_, col);
    return s == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(s));
  }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  std::int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string error() const { return sqlite3_errmsg(db_); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

Status run(Statement& statement, const char* what) {
  if (!statement.ok()) return Error{std::string("store: cannot prepare ") + what};
  int rc = statement.step();
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
    return Error{std::string("store: ") + what + ": " + statement.error()};
  }
  return OkStatus();
}

JobPhase phase_from(const std::string& name) {
  if (name == "running") return JobPhase::kRunning;
  if (name == "done") return JobPhase::kDone;
  return JobPhase::kQueued;
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
  }
  return "queued";
}

Expected<std::unique_ptr<Store>> Store::open(const std::string& path) {
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
  sqlite3_busy_timeout(db, 5000);
  for (const char* pragma : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL"}) {
    if (auto s = store->exec(pragma); !s) return s.error();
  }
  if (auto s = store->exec(kSchema); !s) return s.error();
  return store;
}

Store::~Store() {
  sqlite3_close(db_);
}

Status Store::exec(const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message != nullptr ? message : "unknown error";
    sqlite3_free(message);
    return Error{"store: " + text};
  }
  return OkStatus();
}

Status Store::record_arrival(const JobRecord& job) {
  std::lock_guard lock(mu_);
  Statement s(db_, "INSERT OR IGNORE INTO jobs (id, user, arrival) VALUES (?, ?, ?)");
  s.bind(1, job.id).bind(2, job.user).bind(3, job.arrival);
  return run(s, "record arrival");
}

Status Store::record_variant(const JobVariant& variant) {
  std::lock_guard lock(mu_);
  Statement s(db_,
              "INSERT OR REPLACE INTO variants (pod_namespace, pod_name, pod_uid, job_id, user, "
              "device, iterations, time_hints) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  s.bind(1, variant.pod.namespace_name)
      .bind(2, variant.pod.name)
      .bind(3, variant.pod.uid)
      .bind(4, variant.job_id)
      .bind(5, variant.user)
      .bind(6, variant.device);
  if (variant.iterations) {
    s.bind(7, *variant.iterations);
  } else {
    s.bind_null(7);
  }
  s.bind(8, nlohmann::json(variant.time_hints).dump());
  return run(s, "record variant");
}

Status Store::forget_variant(const PodIdentity& pod, const std::string& job_id) {
  std::lock_guard lock(mu_);
  if (auto s = exec("BEGIN IMMEDIATE"); !s) return s;
  Statement variant(db_, "DELETE FROM variants WHERE pod_namespace = ? AND pod_name = ?");
  variant.bind(1, pod.namespace_name).bind(2, pod.name);
  Statement job(db_,
                "DELETE FROM jobs WHERE id = ? AND phase = 'queued' AND NOT EXISTS "
                "(SELECT 1 FROM variants WHERE job_id = ?)");
  job.bind(1, job_id).bind(2, job_id);
  Status status = run(variant, "forget variant");
  if (status) status = run(job, "forget job");
  if (status) status = exec("COMMIT");
  if (!status) (void)exec("ROLLBACK");
  return status;
}

Status Store::record_start(const JobRecord& job) {
  std::lock_guard lock(mu_);
  if (auto s = exec("BEGIN IMMEDIATE"); !s) return s;
  Statement update(db_,
                   "UPDATE jobs SET phase = 'running', pod_namespace = ?, pod_name = ?, "
                   "pod_uid = ?, node = ?, device = ?, machine = ?, start = ? WHERE id = ?");
  update.bind(1, job.pod_namespace)
      .bind(2, job.pod_name)
      .bind(3, job.pod_uid)
      .bind(4, job.node)
      .bind(5, job.device)
      .bind(6, static_cast<std::int64_t>(job.machine))
      .bind(7, job.start)
      .bind(8, job.id);
  Statement usage(db_,
                  "INSERT OR REPLACE INTO usage (job_id, user, device, node, start, end) "
                  "VALUES (?, ?, ?, ?, ?, NULL)");
  usage.bind(1, job.id).bind(2, job.user).bind(3, job.device).bind(4, job.node).bind(5, job.start);
  Status status = run(update, "record start");
  if (status) status = run(usage, "record usage");
  if (!status) {
    (void)exec("ROLLBACK");
    return status;
  }
  return exec("COMMIT");
}

Status Store::record_finish(const std::string& job_id, double finish) {
  std::lock_guard lock(mu_);
  if (auto s = exec("BEGIN IMMEDIATE"); !s) return s;
  Statement update(db_, "UPDATE jobs SET phase = 'done', finish = ? WHERE id = ?");
  update.bind(1, finish).bind(2, job_id);
  Statement usage(db_, "UPDATE usage SET end = ? WHERE job_id = ?");
  usage.bind(1, finish).bind(2, job_id);
  Status status = run(update, "record finish");
  if (status) status = run(usage, "close usage");
  if (!status) {
    (void)exec("ROLLBACK");
    return status;
  }
  return exec("COMMIT");
}

Status Store::record_profile(const ProfileSample& sample) {
  std::lock_guard lock(mu_);
  Statement s(db_,
              "INSERT INTO profiles (job_id, device, kind, iterations, seconds, at) "
              "VALUES (?, ?, ?, ?, ?, ?)");
  s.bind(1, sample.job_id)
      .bind(2, sample.device)
      .bind(3, std::string(sample.kind == ProfileSample::Kind::kProfile ? "profile" : "progress"))
      .bind(4, sample.iterations)
      .bind(5, sample.seconds)
      .bind(6, sample.at);
  return run(s, "record profile");
}

Expected<StoredState> Store::load() {
  std::lock_guard lock(mu_);
  StoredState state;
  Statement jobs(db_,
                 "SELECT id, user, arrival, phase, pod_namespace, pod_name, pod_uid, node, "
                 "device, machine, start, finish FROM jobs ORDER BY arrival, id");
  if (!jobs.ok()) return Error{"store: cannot read jobs"};
  while (jobs.step() == SQLITE_ROW) {
    JobRecord job;
    job.id = jobs.text(0);
    job.user = jobs.text(1);
    job.arrival = jobs.real(2);
    job.phase = phase_from(jobs.text(3));
    job.pod_namespace = jobs.text(4);
    job.pod_name = jobs.text(5);
    job.pod_uid = jobs.text(6);
    job.node = jobs.text(7);
    job.device = jobs.text(8);
    job.machine = static_cast<int>(jobs.integer(9));
    job.start = jobs.real(10);
    job.finish = jobs.real(11);
    state.jobs.push_back(std::move(job));
  }
  Statement variants(db_,
                     "SELECT pod_namespace, pod_name, pod_uid, job_id, user, device, iterations, "
                     "time_hints FROM variants ORDER BY rowid");
  if (!variants.ok()) return Error{"store: cannot read variants"};
  while (variants.step() == SQLITE_ROW) {
    JobVariant v;
    v.pod = {variants.text(1), variants.text(0), variants.text(2)};
    v.job_id = variants.text(3);
    v.user = variants.text(4);
    v.device = variants.text(5);
    if (!variants.is_null(6)) v.iterations = variants.integer(6);
    auto hints = nlohmann::json::parse(variants.text(7), nullptr, false);
    if (hints.is_object()) {
      for (const auto& [device, seconds] : hints.items()) {
        if (seconds.is_number()) v.time_hints[device] = seconds.get<double>();
      }
    }
    state.variants.push_back(std::move(v));
  }
  Statement profiles(db_,
                     "SELECT job_id, device, kind, iterations, seconds, at FROM profiles "
                     "ORDER BY seq");
  if (!profiles.ok()) return Error{"store: cannot read profiles"};
  while (profiles.step() == SQLITE_ROW) {
    ProfileSample p;
    p.job_id = profiles.text(0);
    p.device = profiles.text(1);
    p.kind = profiles.text(2) == "progress" ? ProfileSample::Kind::kProgress
                                            : ProfileSample::Kind::kProfile;
    p.iterations = profiles.integer(3);
    p.seconds = profiles.real(4);
    p.at = profiles.real(5);
    state.profiles.push_back(std::move(p));
  }
  return state;
}

Expected<std::vector<UsageRecord>> Store::usage_since(double since) {
  std::lock_guard lock(mu_);
  Statement s(db_,
              "SELECT job_id, user, device, node, start, end FROM usage "
              "WHERE end IS NULL OR end >= ? ORDER BY start");
  if (!s.ok()) return Error{"store: cannot read usage"};
  s.bind(1, since);
  std::vector<UsageRecord> out;
  while (s.step() == SQLITE_ROW) {
    UsageRecord u{s.text(0), s.text(1), s.text(2), s.text(3), s.real(4), std::nullopt};
    if (!s.is_null(5)) u.end = s.real(5);
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace allox::extender
