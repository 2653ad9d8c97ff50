#include "core/time_text.h"

#include <cmath>
#include <cstdio>
#include <ctime>

namespace allox {
namespace {

std::string format(std::time_t t, const char* pattern, TimeZone zone) {
  std::tm tm{};
  if (zone == TimeZone::kUtc) {
    gmtime_r(&t, &tm);
  } else {
    localtime_r(&t, &tm);
  }
  char buffer[64];
  std::size_t n = std::strftime(buffer, sizeof buffer, pattern, &tm);
  return std::string(buffer, n);
}

}  // namespace

std::string rfc3339(double unix_seconds) {
  return format(static_cast<std::time_t>(std::floor(unix_seconds)), "%Y-%m-%dT%H:%M:%SZ",
                TimeZone::kUtc);
}

std::string rfc3339(std::chrono::system_clock::time_point at) {
  using namespace std::chrono;
  return format(static_cast<std::time_t>(floor<seconds>(at.time_since_epoch()).count()),
                "%Y-%m-%dT%H:%M:%SZ", TimeZone::kUtc);
}

std::string rfc3339_micro(std::chrono::system_clock::time_point at) {
  using namespace std::chrono;
  const auto micros = floor<microseconds>(at.time_since_epoch());
  const auto whole = floor<seconds>(micros);
  char fraction[32];
  std::snprintf(fraction, sizeof fraction, ".%06lldZ",
                static_cast<long long>((micros - whole).count()));
  return format(static_cast<std::time_t>(whole.count()), "%Y-%m-%dT%H:%M:%S", TimeZone::kUtc) +
         fraction;
}

std::string clock_label(double unix_seconds, TimeZone zone) {
  return format(static_cast<std::time_t>(std::floor(unix_seconds)), "%H:%M", zone);
}

}  // namespace allox
