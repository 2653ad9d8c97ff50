#include "alloxd/store/store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "alloxd/store/statement.h"

namespace allox::extender {

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

// The exclusive lock on `<path>.lock` that makes this process the database's one writer: the
// lock file's descriptor, or an error naming the process that holds it.
Expected<int> lock_database(const std::string& path) {
  const std::string lock_path = path + ".lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Error{"store: cannot create the lock file '" + lock_path + "': " + std::strerror(errno)};
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char holder[32] = {};
    const ssize_t n = ::pread(fd, holder, sizeof holder - 1, 0);
    ::close(fd);
    std::string pid(holder, n > 0 ? static_cast<std::size_t>(n) : 0);
    pid.erase(pid.find_last_not_of(" \n") + 1);
    return Error{"store: '" + path + "' is in use by another alloxd" +
                 (pid.empty() ? std::string() : " (pid " + pid + ")") +
                 ": one alloxd per database"};
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    // The lock holds without the pid; only the message of a second alloxd is the poorer.
  }
  return fd;
}

}  // namespace

Expected<std::unique_ptr<Store>> Store::open(const std::string& path,
                                             std::chrono::milliseconds busy_timeout) {
  if (auto problem = unusable_database_path(path)) {
    return Error{"store: cannot use '" + path + "' as the database: " + *problem};
  }
  int lock_fd = -1;
  if (path != ":memory:" && !path.empty()) {
    auto locked = lock_database(path);
    if (!locked) return locked.error();
    lock_fd = *locked;
  }
  auto opened = name_path_in_error(path, open_sqlite(path, busy_timeout, false));
  if (!opened) {
    if (lock_fd >= 0) ::close(lock_fd);
    return opened;
  }
  (*opened)->lock_fd_ = lock_fd;
  return opened;
}

Expected<std::unique_ptr<Store>> Store::open_for_reading(const std::string& path,
                                                         std::chrono::milliseconds busy_timeout) {
  if (path != ":memory:" && !std::filesystem::exists(path)) {
    return Error{"store: cannot use '" + path + "' as the database: it does not exist"};
  }
  if (auto problem = unusable_database_path(path)) {
    return Error{"store: cannot use '" + path + "' as the database: " + *problem};
  }
  return name_path_in_error(path, open_sqlite(path, busy_timeout, true));
}

Expected<std::unique_ptr<Store>> Store::name_path_in_error(
    const std::string& path, Expected<std::unique_ptr<Store>> opened) {
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
                                                    std::chrono::milliseconds busy_timeout,
                                                    bool read_only) {
  sqlite3* db = nullptr;
  const int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Error{"store: cannot open '" + path + "': " + message};
  }
  std::unique_ptr<Store> store(new Store(db));
  sqlite3_busy_timeout(db, static_cast<int>(busy_timeout.count()));
  if (read_only) {
    if (auto s = store->check_version_for_reading(); !s) return s.error();
    return store;
  }
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
  if (lock_fd_ >= 0) ::close(lock_fd_);  // the lock goes last, once nothing writes
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

Status Store::savepoint(const std::function<Status()>& body, Durability durability) {
  std::lock_guard lock(mu_);
  if (batch_depth_ == 0) return transaction(body, Mode::kWrite, durability);
  if (auto s = step("SAVEPOINT change"); !s) return s;
  Status status = body();
  if (!status) {
    // Its writes go; the batch's transaction stays open for the changes after it.
    if (auto undone = step("ROLLBACK TO change"); !undone) return undone;
  }
  if (auto released = step("RELEASE change"); !released) return released;
  return status;
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

}  // namespace allox::extender
