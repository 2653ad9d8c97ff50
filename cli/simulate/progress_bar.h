// A one-line progress bar on stderr for the runs of one command: which runs are going (run i of
// n, by label), the share of all runs' jobs finished, the time spent and an estimate of the time
// left (elapsed × (1 − done) / done: runs of one command progress at comparable rates). Drawn at
// most four times a second, from whichever run thread reports; cleared by finish() or on
// destruction.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "sim/experiment.h"

namespace allox::cli {

class ProgressBar {
 public:
  // Disabled, it draws nothing and hands out no callbacks. The first line shows once
  // `delay_seconds` have passed.
  ProgressBar(bool enabled, const std::vector<RunSpec>& specs, double delay_seconds);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // What run `run` reports its finished fraction to (empty when disabled); thread-safe.
  std::function<void(double)> callback(std::size_t run);
  // Clears the line.
  void finish();

 private:
  void update(std::size_t run, double fraction);

  bool enabled_;
  double delay_;
  std::vector<std::string> labels_;
  std::vector<double> fractions_;
  bool shown_ = false;
  double last_draw_ = 0;
  std::mutex mu_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace allox::cli
