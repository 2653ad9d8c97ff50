// What the status page draws over time: each machine's jobs over the last hours (done, running,
// and the plan's next starts), coloured by user, and each user's share sampled at every solve.
// ShareHistory keeps the samples (bounded, one per `resolution` seconds); render_*() turn a
// Timeline into inline SVG (no scripts). Thread-safe: ShareHistory locks; the rest is pure.
#pragma once

#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace allox::extender {

struct TimelineBar {
  enum class Kind { kDone, kRunning, kPlanned };
  std::string machine;  // a row: "node-a gpu 0"
  std::string job, user;
  double start = 0, end = 0;  // Unix seconds; running: estimated end; planned: est. start + time
  Kind kind = Kind::kDone;
};

struct ShareSample {
  double at = 0;
  std::map<std::string, double> shares;
};

struct Timeline {
  double from = 0, to = 0, now = 0;   // the window drawn (Unix seconds)
  std::vector<std::string> machines;  // rows, in order
  std::vector<TimelineBar> bars;
  std::vector<ShareSample> shares;
};

class ShareHistory {
 public:
  explicit ShareHistory(double resolution = 5, std::size_t capacity = 4096)
      : resolution_(resolution), capacity_(capacity) {}
  void record(double at, const std::map<std::string, double>& shares);
  std::vector<ShareSample> since(double from) const;

 private:
  double resolution_;
  std::size_t capacity_;
  mutable std::mutex mu_;
  std::deque<ShareSample> samples_;
};

// A stable colour per user (the same user keeps its colour across refreshes).
std::string user_colour(const std::string& user);
std::string render_machine_timeline(const Timeline& timeline);
std::string render_share_history(const Timeline& timeline);

}  // namespace allox::extender
