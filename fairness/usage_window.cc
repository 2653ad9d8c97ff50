#include "fairness/usage_window.h"

#include <algorithm>

namespace allox {

UsageWindow::UsageWindow(double window, std::map<DeviceType, std::size_t> machines,
                         std::map<std::string, double> weights)
    : window_(window), machines_(std::move(machines)), weights_(std::move(weights)) {}

void UsageWindow::add_run(const std::string& run, const std::string& user, const DeviceType& device,
                          double start, std::optional<double> end, int units) {
  runs_[run] = Run{user, device, start, end, units};
}

void UsageWindow::close_run(const std::string& run, double end) {
  auto it = runs_.find(run);
  if (it != runs_.end()) it->second.end = end;
}

void UsageWindow::prune(double now) {
  std::erase_if(runs_, [&](const auto& entry) {
    return entry.second.end && *entry.second.end < now - window_;
  });
}

std::map<std::string, double> UsageWindow::windowed_shares(double now) const {
  const double from = now - window_;
  std::map<std::string, std::map<DeviceType, double>> held;  // machine-seconds in the window
  for (const auto& [id, run] : runs_) {
    double end = std::min(run.end.value_or(now), now);
    double overlap = end - std::max(run.start, from);
    if (overlap > 0) held[run.user][run.device] += overlap * run.units;
  }
  std::map<std::string, double> shares;
  for (const auto& [user, per_device] : held) {
    double dominant = 0;
    for (const auto& [device, seconds] : per_device) {
      auto n = machines_.find(device);
      if (n == machines_.end() || n->second == 0) continue;
      dominant = std::max(dominant, seconds / (static_cast<double>(n->second) * window_));
    }
    auto w = weights_.find(user);
    shares[user] = dominant / (w == weights_.end() ? 1.0 : w->second);
  }
  return shares;
}

double jain_index(const std::vector<double>& x) {
  double sum = 0, squares = 0;
  for (double v : x) {
    sum += v;
    squares += v * v;
  }
  if (x.empty() || squares == 0) return 1;
  return sum * sum / (static_cast<double>(x.size()) * squares);
}

}  // namespace allox
