// Structured logging for allox's programs (alloxd above all), through spdlog, the way Kubernetes
// components log: one line per event on stderr, a message and key=value fields.
//
//   text (klog's header, UTC):
//     I1123 00:31:53.123456 alloxd] listening on http://127.0.0.1:8888 policy="allox" nodes=3
//   json (one object per line, as Kubernetes' --logging-format=json):
//     {"ts":"2026-11-23T00:31:53.123456Z","level":"info","logger":"alloxd",
//      "msg":"listening on http://127.0.0.1:8888","policy":"allox","nodes":3}
//
// The level and format come from a program's config (alloxd.yaml `log: {level, format}`); until
// configure_log() is called, info and above go to stderr as text under the name "allox". Library
// modules report errors as values (core/result.h) and leave logging to the program; only where
// an event has no caller to return to (a background thread) does a module log.
// Thread-safe: any thread may log, and configure_log() may run while others do.
#pragma once

#include <concepts>
#include <initializer_list>
#include <ostream>
#include <string>
#include <string_view>

#include "core/result.h"

namespace allox {

enum class LogLevel { kDebug, kInfo, kWarn, kError };
enum class LogFormat { kText, kJson };

struct LogOptions {
  std::string program = "allox";  // the logger's name on every line
  LogLevel level = LogLevel::kInfo;
  LogFormat format = LogFormat::kText;
};

// "debug", "info", "warn", "error"; "text", "json". The error completes "must be ...".
Expected<LogLevel> parse_log_level(std::string_view name);
Expected<LogFormat> parse_log_format(std::string_view name);

// One key=value of an event. Strings are quoted (JSON escapes); numbers and booleans are not.
struct LogField {
  LogField(std::string_view key, std::string_view value);
  LogField(std::string_view key, const char* value) : LogField(key, std::string_view(value)) {}
  LogField(std::string_view key, const std::string& value)
      : LogField(key, std::string_view(value)) {}
  LogField(std::string_view key, bool value) : key(key), rendered(value ? "true" : "false") {}
  template <class T>
  requires(std::integral<T> && !std::same_as<T, bool>) LogField(std::string_view key, T value)
      : key(key), rendered(std::to_string(value)) {}
  LogField(std::string_view key, double value);

  std::string key;
  std::string rendered;  // as it appears after "key=" / "key":
};

// Sets the level, format and name for every later line, to stderr (or `out`, which must outlive
// all logging: tests).
void configure_log(const LogOptions& options);
void configure_log(const LogOptions& options, std::ostream& out);

void log_debug(std::string_view message, std::initializer_list<LogField> fields = {});
void log_info(std::string_view message, std::initializer_list<LogField> fields = {});
void log_warn(std::string_view message, std::initializer_list<LogField> fields = {});
void log_error(std::string_view message, std::initializer_list<LogField> fields = {});

}  // namespace allox
