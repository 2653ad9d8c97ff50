// Cumulative usage per user over a sliding window, for reports (docs/design.md, "Fairness").
//
// A run is one job holding `units` machines (devices) of a device type from `start` to `end`
// (open while the job still runs). A user's windowed share at time `now` is its dominant share of
// the window [now - window, now]: max over device types d of (machine-seconds the user held on d in
// the window) / (machines of type d x window), divided by the user's weight. Runs that ended before
// the window can no longer count and are dropped by prune().
//
// add_run and close_run are O(log R); windowed_shares is O(R) for R runs kept. Not thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"

namespace allox {

class UsageWindow {
 public:
  // window > 0 seconds; machines per device type; weights default to 1.
  UsageWindow(double window, std::map<DeviceType, std::size_t> machines,
              std::map<std::string, double> weights = {});

  void add_run(const std::string& run, const std::string& user, const DeviceType& device,
               double start, std::optional<double> end = std::nullopt, int units = 1);
  void close_run(const std::string& run, double end);  // a job finished or was preempted
  void prune(double now);                              // drops runs ended before now - window

  // Windowed dominant share per user with any usage in the window.
  std::map<std::string, double> windowed_shares(double now) const;
  double window() const { return window_; }

 private:
  struct Run {
    std::string user;
    DeviceType device;
    double start = 0;
    std::optional<double> end;
    int units = 1;
  };
  double window_;
  std::map<DeviceType, std::size_t> machines_;
  std::map<std::string, double> weights_;
  std::map<std::string, Run> runs_;
};

// Jain's fairness index (sum x)^2 / (n sum x^2): 1 when all x are equal, 1/n when one takes
// everything. 1 for an empty list or all zeros (nobody is treated worse than anybody else).
double jain_index(const std::vector<double>& x);

}  // namespace allox
