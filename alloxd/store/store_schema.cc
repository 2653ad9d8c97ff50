// The store's schema and its migrations from earlier versions, applied in one transaction when
// the database is opened.
#include "alloxd/store/store.h"

#include <string>

#include "alloxd/store/statement.h"

namespace allox::extender {
namespace {

// Schema version 2: job runs keyed by row (version 1 keyed jobs by id, so a re-created pod
// could never start a new run, and a job row and its variant row were two transactions).
// Version 3: variants WITHOUT ROWID, stored in their primary key's b-tree alone: a rowid table
// kept the rows in one b-tree and the key in another, and a variant deleted when its job starts
// elsewhere dirtied a page in each (docs/performance.md, "Store writes"). `seq` keeps the
// order a job's variants were recorded in, which version 2 read off the rowid.
// Version 4: `units` on jobs and variants, the devices of one node a run holds or a variant
// needs (JobVariant::units); rows of earlier versions needed one.
// Version 5: gangs (docs/design.md, "Gangs"): `gang` on jobs and variants (the members of the
// run, JobVariant::gang) and `node` on variants (the node a running gang's member runs on);
// rows of earlier versions were one pod each, on no member node.
constexpr int kSchemaVersion = 5;

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
  finish REAL NOT NULL DEFAULT 0,
  units INTEGER NOT NULL DEFAULT 1,
  gang INTEGER NOT NULL DEFAULT 1
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
  units INTEGER NOT NULL DEFAULT 1,
  gang INTEGER NOT NULL DEFAULT 1,
  node TEXT NOT NULL DEFAULT '',
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

// Versions 2 and 3 keep their jobs table, and version 3 its variants: each gains `units`, one
// for every row written before units were read (version 2's variants are copied into version
// 4's table, where the column's default gives them the same).
constexpr const char* kUnitsOfJobs = "ALTER TABLE jobs ADD COLUMN units INTEGER NOT NULL DEFAULT 1";
constexpr const char* kUnitsOfVariants =
    "ALTER TABLE variants ADD COLUMN units INTEGER NOT NULL DEFAULT 1";
// Versions 2 to 4 keep their jobs table, and versions 3 and 4 their variants: each gains the
// gang columns, every earlier row one pod on no member node.
constexpr const char* kGangOfJobs = "ALTER TABLE jobs ADD COLUMN gang INTEGER NOT NULL DEFAULT 1";
constexpr const char* kGangOfVariants = R"sql(
ALTER TABLE variants ADD COLUMN gang INTEGER NOT NULL DEFAULT 1;
ALTER TABLE variants ADD COLUMN node TEXT NOT NULL DEFAULT '';
)sql";

}  // namespace

Expected<std::string> Store::table_names() {
  Statement tables(db_,
                   "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                   "'sqlite_%' ORDER BY name LIMIT 4");
  std::string names;
  for (int count = 0; tables.next(); ++count) {
    if (count > 0) names += ", ";
    names += count < 3 ? tables.text(0) : std::string("...");
  }
  if (auto s = tables.status("inspect schema"); !s) return s.error();
  return names;
}

Status Store::check_version_for_reading() {
  Statement version(db_, "PRAGMA user_version");
  if (!version.next()) return version.status("read schema version");
  const std::int64_t found = version.integer(0);
  if (found == kSchemaVersion) return OkStatus();
  if (found > kSchemaVersion) {
    return Error{"store: schema version " + std::to_string(found) + " is newer than this allox (" +
                 std::to_string(kSchemaVersion) + ")"};
  }
  if (found == 0) {
    auto tables = table_names();
    if (!tables) return tables.error();
    if (tables->empty()) return Error{"store: empty: no allox tables"};
    if (tables->find("jobs") == std::string::npos) {
      return Error{"store: holds another application's tables (" + *tables + "), not allox's"};
    }
  }
  return Error{"store: schema version " + std::to_string(found == 0 ? 1 : found) +
               ", older than this allox's (" + std::to_string(kSchemaVersion) +
               "): start alloxd on it once to migrate it"};
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
      // Neither allox's nor empty: another application's database (a mistyped --database).
      // Writing allox's tables into it would change a file that is not ours.
      if (auto tables = table_names(); !tables) {
        return tables.error();
      } else if (!tables->empty()) {
        return Error{"store: holds another application's tables (" + *tables +
                     "), not allox's: give a new file or an allox store"};
      }
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
    if (found == 2 || found == 3) {
      if (auto s = exec(kUnitsOfJobs); !s) return s;
    }
    if (found == 3) {
      if (auto s = exec(kUnitsOfVariants); !s) return s;
    }
    if (found >= 2 && found <= 4) {
      if (auto s = exec(kGangOfJobs); !s) return s;
    }
    if (found == 3 || found == 4) {
      if (auto s = exec(kGangOfVariants); !s) return s;
    }
    if (from_v1) {
      if (auto s = exec(kCopyFromVersion1); !s) return s;
    }
    if (from_v2) {
      if (auto s = exec(kCopyFromVersion2); !s) return s;
    }
    return exec(("PRAGMA user_version = " + std::to_string(kSchemaVersion)).c_str());
  });
}

}  // namespace allox::extender
