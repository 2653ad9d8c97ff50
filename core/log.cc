#include "core/log.h"

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

namespace allox {
namespace {

// The event's body after spdlog's header: `msg k="v"` (text) or `"msg":"...","k":"v"` (json).
struct Logger {
  std::mutex mu;  // guards the pointer; spdlog guards each line
  std::shared_ptr<spdlog::logger> logger;
  LogFormat format = LogFormat::kText;
};

Logger& state() {
  static Logger* instance = [] {
    auto* s = new Logger;  // never destroyed: threads may log during static destruction
    s->logger = std::make_shared<spdlog::logger>("allox",
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
    return s;
  }();
  return *instance;
}

spdlog::level::level_enum spdlog_level(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

void install(const LogOptions& options, spdlog::sink_ptr sink) {
  auto logger = std::make_shared<spdlog::logger>(options.program, std::move(sink));
  logger->set_level(spdlog_level(options.level));
  logger->flush_on(spdlog::level::trace);  // every line, at once: a crash loses none
  if (options.format == LogFormat::kJson) {
    logger->set_pattern(R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","logger":"%n",%v})",
                        spdlog::pattern_time_type::utc);
  } else {
    logger->set_pattern("%L%m%d %H:%M:%S.%f %n] %v", spdlog::pattern_time_type::utc);
  }
  Logger& s = state();
  std::lock_guard lock(s.mu);
  s.logger = std::move(logger);
  s.format = options.format;
}

void emit(LogLevel level, std::string_view message, std::initializer_list<LogField> fields) {
  Logger& s = state();
  std::shared_ptr<spdlog::logger> logger;
  LogFormat format;
  {
    std::lock_guard lock(s.mu);
    logger = s.logger;
    format = s.format;
  }
  if (!logger->should_log(spdlog_level(level))) return;
  std::string body;
  if (format == LogFormat::kJson) {
    body = "\"msg\":" + LogField("msg", message).rendered;
    for (const LogField& f : fields) {
      body += "," + nlohmann::json(f.key).dump() + ":" + f.rendered;
    }
  } else {
    // One line per event: a multi-line message (a config's problems) keeps its breaks as \n.
    for (char c : message) {
      if (c == '\n') {
        body += "\\n";
      } else {
        body += c;
      }
    }
    for (const LogField& f : fields) body += " " + f.key + "=" + f.rendered;
  }
  logger->log(spdlog_level(level), spdlog::string_view_t(body));
}

}  // namespace

Expected<LogLevel> parse_log_level(std::string_view name) {
  if (name == "debug") return LogLevel::kDebug;
  if (name == "info") return LogLevel::kInfo;
  if (name == "warn") return LogLevel::kWarn;
  if (name == "error") return LogLevel::kError;
  return Error{"one of debug, info, warn, error"};
}

Expected<LogFormat> parse_log_format(std::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  return Error{"one of text, json"};
}

LogField::LogField(std::string_view key, std::string_view value)
    : key(key),
      rendered(nlohmann::json(std::string(value))
                   .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) {}

LogField::LogField(std::string_view key, double value)
    : key(key), rendered(std::isfinite(value) ? nlohmann::json(value).dump() : "null") {}

void configure_log(const LogOptions& options) {
  install(options, std::make_shared<spdlog::sinks::stderr_sink_mt>());
}

void configure_log(const LogOptions& options, std::ostream& out) {
  install(options, std::make_shared<spdlog::sinks::ostream_sink_mt>(out, true));
}

void log_debug(std::string_view message, std::initializer_list<LogField> fields) {
  emit(LogLevel::kDebug, message, fields);
}
void log_info(std::string_view message, std::initializer_list<LogField> fields) {
  emit(LogLevel::kInfo, message, fields);
}
void log_warn(std::string_view message, std::initializer_list<LogField> fields) {
  emit(LogLevel::kWarn, message, fields);
}
void log_error(std::string_view message, std::initializer_list<LogField> fields) {
  emit(LogLevel::kError, message, fields);
}

}  // namespace allox
