// The store's WAL checkpoints, on a thread and a connection of their own, and the bound a commit
// keeps on the WAL's size when that thread falls behind (store.h, top).
#include "alloxd/store/store.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <string>

#include "alloxd/store/statement.h"
#include "core/log.h"
#include "core/thread_priority.h"

namespace allox::extender {

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

}  // namespace allox::extender
