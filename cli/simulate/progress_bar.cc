#include "cli/simulate/progress_bar.h"

#include <iostream>

#include "sim/progress_line.h"

namespace allox::cli {

ProgressBar::ProgressBar(bool enabled, const std::vector<RunSpec>& specs, double delay_seconds)
    : enabled_(enabled), delay_(delay_seconds), fractions_(specs.size(), 0.0) {
  for (const RunSpec& spec : specs) labels_.push_back(spec.label);
}

ProgressBar::~ProgressBar() {
  finish();
}

std::function<void(double)> ProgressBar::callback(std::size_t run) {
  if (!enabled_) return {};
  return [this, run](double fraction) { update(run, fraction); };
}

void ProgressBar::finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (shown_) std::cerr << "\r\033[K" << std::flush;
  shown_ = false;
}

void ProgressBar::update(std::size_t run, double fraction) {
  std::lock_guard<std::mutex> lock(mu_);
  fractions_[run] = fraction;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // The first line as soon as it is due, then at most four a second.
  if (elapsed < delay_ || (shown_ && elapsed - last_draw_ < 0.25)) return;
  last_draw_ = elapsed;
  const std::string line = progress_line(labels_, fractions_, elapsed);
  std::cerr << "\r\033[K" << line << std::flush;
  shown_ = true;
}

}  // namespace allox::cli
