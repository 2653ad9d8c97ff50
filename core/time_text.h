// Times as text, one definition for every module: Kubernetes' metav1.Time (RFC 3339, whole
// seconds, UTC) and metav1.MicroTime (microseconds), and the "14:05" a person reads in an event
// or on the status page.
#pragma once

#include <chrono>
#include <string>

namespace allox {

// "2026-11-22T20:50:00Z" (metav1.Time): the second the instant falls in, in UTC.
std::string rfc3339(double unix_seconds);
std::string rfc3339(std::chrono::system_clock::time_point at);
// "2026-11-22T20:50:00.123456Z" (metav1.MicroTime).
std::string rfc3339_micro(std::chrono::system_clock::time_point at);

// "14:05": UTC (Kubernetes events), or the machine's local time zone (the status page, read by a
// person next to it).
enum class TimeZone { kUtc, kLocal };
std::string clock_label(double unix_seconds, TimeZone zone = TimeZone::kUtc);

}  // namespace allox
