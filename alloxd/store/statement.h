// The store's prepared statements: a cache that keeps the write paths' statements for the
// connection's life and lends each to one user at a time, and Statement, one statement bound,
// stepped and read with every SQLite result checked. Shared by the store's .cc files only; the
// store's users never see SQLite.
//
// Not thread-safe: used under the store's mutex.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/result.h"

namespace allox::extender {

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

}  // namespace allox::extender
