#include "alloxd/web/bind_latency.h"

#include <algorithm>

namespace allox::extender {

void CompletionToBind::freed(const std::string& node, const DeviceType& device, double at,
                             bool jobs_waiting) {
  if (!jobs_waiting) return;
  freed_at_[{node, device}].push_back(at);
}

std::optional<double> CompletionToBind::bound(const std::string& node, const DeviceType& device,
                                              double at) {
  auto it = freed_at_.find({node, device});
  if (it == freed_at_.end() || it->second.empty()) return std::nullopt;
  const double freed = it->second.front();
  it->second.pop_front();
  if (it->second.empty()) freed_at_.erase(it);
  return std::max(0.0, at - freed);
}

}  // namespace allox::extender
