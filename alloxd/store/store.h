// alloxd's durable state in an embedded SQLite database: job runs, the pods that are device
// variants of each, bind intents, profiling and progress samples, and usage history.
//
// The database runs in WAL mode with synchronous=FULL: a write method returns only after its
// transaction is on disk, so once alloxd acknowledges a request that wrote (a bind intent, a
// profile, a completion it was told of) a kill -9 or power cut cannot lose it. Writes of what the
// API server also holds (a pod seen by the watch, a start after its bind intent, a completion
// seen by the watch) may ask for Durability::kWritten instead: in the OS when the method returns
// (a kill -9 of alloxd loses nothing), on disk with the next synced write, which fsyncs the WAL
// they precede. A power cut may roll back such a tail; the API server still has it (the pods are
// listed again, a bind intent is settled from spec.nodeName). This is what lets a burst of
// 50,000 arriving pods cost 50,000 small writes instead of 50,000 fsyncs. Each method is exactly
// one transaction, so a crash leaves either all of a change or none of it: a new job's row and its
// first variant row are written together, a start together with its usage row. Every SQLite
// result is checked: BUSY or IOERR while reading is an error, never "no more rows", and a
// failed COMMIT is rolled back.
//
// A job id names a job for as long as it is queued or running; once done (or removed by an
// admin) a pod re-created under the same id starts a new run of it. Each run is one row, keyed by
// JobRecord::row, so history keeps every run.
//
// A bind is recorded twice: as an intent before the API server is asked (record_bind_intent),
// and as a start once it answered (record_start, which clears the intent). An intent found at
// start-up means alloxd died in between; the service reconciles it from the pod's
// spec.nodeName.
//
// WAL checkpoints (copying the WAL into the database file, with an fsync of each) are never
// run inside a write: SQLite's automatic checkpoint would run in whichever commit crosses 1,000
// WAL pages, on a request path (a pod's first /filter) and for tens to hundreds of ms on a loaded
// disk. A thread of the store runs them instead, on a second connection (WAL lets it run beside
// the writes), PASSIVE, once a commit finds the WAL at kCheckpointPages or more. Past
// kRestartPages it also restarts the WAL under the store's lock, so the file is rewritten in
// place at a few MB instead of growing for as long as writes come; a commit that finds the WAL
// past kWalCapPages (the checkpointer starved) restarts it itself. Durability is unchanged: a
// commit is as durable as before whether or not its pages were checkpointed yet.
//
// Thread-safe: one connection guarded by a mutex (and the checkpointer's own).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "alloxd/model/pod.h"
#include "alloxd/store/job_types.h"
#include "core/result.h"

struct sqlite3;

namespace allox::extender {
class StatementCache;  // statement.h
}  // namespace allox::extender

namespace allox::extender {

struct StoredVariant {
  std::int64_t job_row = 0;
  JobVariant variant;
  std::string node = {};  // a running gang's member: the node it runs on ("" otherwise)
};

// How far a write has gone when its method returns (see the top of this file).
enum class Durability {
  kSynced,   // on disk (fsync): survives kill -9 and a power cut
  kWritten,  // in the OS (WAL, synchronous=NORMAL): survives kill -9; on disk with the next kSynced
};

struct StoredState {
  std::vector<JobRecord> jobs;  // by row: a later run of an id comes after the earlier one
  std::vector<StoredVariant> variants;
  std::vector<ProfileSample> profiles;
  std::vector<BindIntent> intents;
};

class Store {
 public:
  // Opens (creating if needed) the database at path; ":memory:" gives a throw-away one. A
  // database an older alloxd wrote (version 1: before job runs had rows; version 2: variants in
  // a rowid table; version 3: before units, every run and variant one unit) is migrated in one
  // transaction; one a newer alloxd wrote is refused. A write
  // waits up to `busy_timeout` for another connection's lock, then fails with SQLite's BUSY.
  // Errors name the path and the cause: a missing directory, a directory, a device or FIFO (such
  // as /dev/null), a file that is not an SQLite database.
  // A database of another application (tables, none of them allox's) is refused, never written.
  // One alloxd per database: the store holds an exclusive lock on `<path>.lock` (flock, gone
  // with the process, kill -9 included) for its life, and a second open of the path, by this
  // process or another, is refused naming the holder's pid. Two writers would each keep a book
  // of their own and place two jobs on one machine.
  static Expected<std::unique_ptr<Store>> open(
      const std::string& path, std::chrono::milliseconds busy_timeout = std::chrono::seconds(5));
  // For reading alone (`allox report --store`, possibly beside a running alloxd): an existing
  // file, opened read-only, of exactly this schema version (an older one is named, to be
  // migrated by alloxd; nothing is created, migrated or checkpointed). Only load() and the
  // usage reads may be called; a write fails with SQLite's "readonly database".
  static Expected<std::unique_ptr<Store>> open_for_reading(
      const std::string& path, std::chrono::milliseconds busy_timeout = std::chrono::seconds(5));
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // A new run of a job, with the pod that introduced it. Returns the run's row.
  Expected<std::int64_t> record_arrival(const JobRecord& job, const JobVariant& first,
                                        Durability durability = Durability::kSynced);
  // Runs `body`, which makes other writes of this store, as one transaction: all of them or none
  // (when body or the commit fails). One commit for a burst of the watch's pods instead of one
  // each. The writes' own durability gives way to the batch's.
  Status batch(const std::function<Status()>& body, Durability durability = Durability::kSynced);
  // Inside batch(): runs `body`'s writes as one unit of the batch (an SQLite SAVEPOINT). When
  // body fails its writes are rolled back and the batch goes on without them, so one bad change
  // of a group fails only itself. Outside a batch: a transaction of its own.
  Status savepoint(const std::function<Status()>& body,
                   Durability durability = Durability::kSynced);
  // Another (or a changed) variant pod of the run `job_row`.
  Status record_variant(std::int64_t job_row, const JobVariant& variant,
                        Durability durability = Durability::kSynced);
  // Synced before it returns (or with the batch it is part of). Concurrent binds share one
  // commit through the planner's group (Planner::apply), not here.
  Status record_bind_intent(const BindIntent& intent);
  // The API server refused the bind, or reconciliation found it never happened.
  Status drop_bind_intent(std::int64_t job_row);
  // The run (job.row) was bound: phase running, a usage row opened, its intent cleared.
  Status record_start(const JobRecord& job, Durability durability = Durability::kSynced);
  // The run finished at `finish`: phase done and its usage row closed.
  // A gang's start: record_start and each member's node (pod key "namespace/name" -> node), in
  // one transaction.
  Status record_gang_start(const JobRecord& job,
                           const std::map<std::string, std::string>& member_nodes,
                           Durability durability = Durability::kSynced);
  Status record_finish(std::int64_t job_row, double finish,
                       Durability durability = Durability::kSynced);
  // An admin removed the queued run at `at`.
  Status record_removal(std::int64_t job_row, double at);
  // The running run's pod `ran` failed and its Job will replace it (model/job.h): the run is
  // queued again at `at` (same row: one job, one run), its usage row closed, and `ran` is no
  // longer one of its variants (the replacement pod will be).
  Status record_requeue(std::int64_t job_row, const PodIdentity& ran, double at,
                        Durability durability = Durability::kSynced);
  Status record_profile(const ProfileSample& sample);
  // The pod is no longer a variant of the run `job_row` (deleted, or the run was admitted as
  // another variant); a queued run left without variants is forgotten with its samples.
  Status forget_variant(const PodIdentity& pod, std::int64_t job_row,
                        Durability durability = Durability::kSynced);
  // A rolled-back gang's member is no longer a variant of the queued run `job_row`; the run
  // stays, without variants, until its members come back (the book keeps it by its note).
  Status forget_member(const PodIdentity& pod, std::int64_t job_row,
                       Durability durability = Durability::kSynced);

  // Queued, running and removed runs, and done runs that finished at or after
  // `finished_since`, with their variants, samples and bind intents.
  Expected<StoredState> load(double finished_since = -std::numeric_limits<double>::infinity());
  // Deletes done and removed runs that finished before `finished_before`, with their variants,
  // samples and usage rows. Returns how many runs went.
  Expected<int> prune_history(double finished_before);
  // Usage rows that overlap [since, now]: open rows and rows that ended after `since`.
  Expected<std::vector<UsageRecord>> usage_since(double since);

  // The connection's PRAGMA synchronous as the last write left it: 2 (FULL) after a synced
  // write, 1 (NORMAL) after a written one.
  Expected<int> synchronous();

  // WAL pages at which a commit asks the checkpointer to run (SQLite's automatic default), and
  // again each time the WAL has grown by as many since the checkpointer's last run.
  static constexpr int kCheckpointPages = 1000;
  // WAL pages at which the checkpointer also restarts the WAL (holding the store's lock for what
  // the PASSIVE checkpoint left), so the file stays near this size (about 4 MB at 1 KB pages)
  // instead of growing for as long as writes keep coming.
  static constexpr int kRestartPages = 4000;
  // WAL pages past which a commit restarts the WAL itself, inside the write, when the
  // checkpointer has not kept up: the bound on the file (about 17 MB) whatever the load.
  static constexpr int kWalCapPages = 4 * kRestartPages;
  // Restarts of the WAL so far (tests).
  std::uint64_t wal_restarts() const;
  // Copies the whole WAL into the database file and empties the file. alloxd calls it once at
  // start-up, before it serves: what the last run left there (a kill -9 skips the checkpoint a
  // close makes) is then not copied by the first commit past kWalCapPages, on a request path.
  // Waits for no one: an error (BUSY) while another connection, such as `allox report`'s, is in
  // a transaction.
  Status empty_wal();
  // Checkpoints the checkpointer has run so far, and (tests) a hook run on its thread after
  // each one, with the count, holding no store lock.
  std::uint64_t checkpoints() const;
  void set_checkpoint_hook(std::function<void(std::uint64_t checkpoints)> hook);

  // Called after each write transaction that committed (a batch counts once), with its wall
  // time from BEGIN to the end of COMMIT (the writes, the WAL frames and, when synced, the
  // fsync) and whether it was synced: what /metrics shows as allox_store_write_duration_seconds.
  // Runs holding the store's lock, so it must be quick and must not call the store. Set it
  // before the store is shared between threads.
  using WriteObserver = std::function<void(double seconds, bool synced)>;
  void observe_writes(WriteObserver observer);

 private:
  // `opened`, or its error with the path named in it.
  static Expected<std::unique_ptr<Store>> name_path_in_error(
      const std::string& path, Expected<std::unique_ptr<Store>> opened);
  static Expected<std::unique_ptr<Store>> open_sqlite(const std::string& path,
                                                      std::chrono::milliseconds busy_timeout,
                                                      bool read_only);
  explicit Store(sqlite3* db);
  // Opens the checkpointer's connection to `path` and starts its thread; in place of SQLite's
  // automatic checkpoint (a WAL hook on the writing connection). Returns once the thread runs,
  // named and in its class, as HttpServer::start's: whoever looks at the process after start-up
  // (`top -H`, a test) sees it.
  Status start_checkpointer(const std::string& path);
  void checkpoint_loop();
  // One checkpoint: PASSIVE, then RESTART once the WAL holds kRestartPages. Returns the WAL
  // size in pages at which a commit should call for the next one.
  int checkpoint_wal();
  // A checkpoint in `mode` (SQLITE_CHECKPOINT_RESTART or _TRUNCATE) on the checkpointer's
  // connection, holding the store's lock; SQLite's result, the WAL's size in `frames`.
  int checkpoint_holding_writes(int mode, int* frames);
  static int on_wal_commit(void* store, sqlite3* db, const char* name, int pages);
  Status exec(const char* sql);
  // One statement from the cache, run to its end (BEGIN, COMMIT, a PRAGMA: no rows).
  Status step(const char* sql);
  Status migrate();
  // Up to three of the database's own tables by name ("a, b, c, ..."); "" when it has none.
  Expected<std::string> table_names();
  Status check_version_for_reading();
  // Runs `body` inside BEGIN ... COMMIT (IMMEDIATE: takes the write lock up front, so a write
  // never fails half-way on a lock); rolls back when body or COMMIT fails.
  enum class Mode { kRead, kWrite };
  Status transaction(const std::function<Status()>& body, Mode mode = Mode::kWrite,
                     Durability durability = Durability::kSynced);
  // The run leaves for good (phase "done" or "removed") at `at`: its usage closed and any bind
  // intent cleared, in one transaction.
  Status end_run(std::int64_t job_row, const char* phase, double at, Durability durability);

  // Recursive: batch() holds it while the writes it groups take it again.
  std::recursive_mutex mu_;
  int batch_depth_ = 0;  // under mu_: > 0 while batch() runs; transaction() then joins it
  sqlite3* db_;
  int lock_fd_ = -1;  // `<path>.lock`, flock'ed exclusively while the store is open; -1: none
  std::unique_ptr<StatementCache> statements_;  // under mu_; finalized before db_ closes
  bool synchronous_full_ = true;  // the connection's PRAGMA synchronous (FULL or NORMAL)
  WriteObserver write_observer_;

  // The checkpointer (see the top of this file). A commit only sets checkpoint_due_.
  sqlite3* checkpoint_db_ = nullptr;
  mutable std::mutex checkpoint_mu_;
  std::condition_variable checkpoint_cv_;
  bool checkpoint_due_ = false;
  // True while the checkpointer's PASSIVE copy runs (it holds SQLite's checkpoint lock then, so a
  // commit's own restart past kWalCapPages gets BUSY); passive_done_ is notified when it ends.
  bool passive_running_ = false;
  std::condition_variable passive_done_;
  bool checkpoint_stop_ = false;
  std::uint64_t checkpoints_ = 0;
  std::atomic<int> next_checkpoint_at_{kCheckpointPages};  // read by the WAL hook in commits
  std::atomic<std::uint64_t> wal_restarts_{0};
  std::function<void(std::uint64_t)> checkpoint_hook_;
  std::thread checkpointer_;
};

}  // namespace allox::extender
