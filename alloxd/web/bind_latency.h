// Completion-to-bind latency, the figure with a target of p99 < 1 s: when a job
// completes while other jobs wait, the machine it freed (its node and device) is remembered
// with the time; the next bind onto that node and device reports how long the machine sat
// free. A machine freed while nothing waited is not counted (its idle time is no one's delay).
// Not thread-safe: the service calls it under its book lock.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "core/model.h"

namespace allox::extender {

class CompletionToBind {
 public:
  void freed(const std::string& node, const DeviceType& device, double at, bool jobs_waiting);
  // Seconds since the oldest unclaimed completion on this node and device, if there is one.
  std::optional<double> bound(const std::string& node, const DeviceType& device, double at);

 private:
  std::map<std::pair<std::string, DeviceType>, std::deque<double>> freed_at_;
};

}  // namespace allox::extender
