// What the status page draws over time: each machine's jobs over the last hours (done, running,
// and the plan's next starts), coloured by user, and each user's share sampled at every solve.
// ShareHistory keeps the samples (bounded, one per `resolution` seconds); render_*() turn a
// Timeline into inline SVG (no scripts), bounded whatever the number of jobs and users: at most
// 2,000 bars (running, then planned, then the latest finished) and lines for the 10 users with
// the largest shares, one point per pixel. Thread-safe: ShareHistory locks; the rest is pure.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
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

// The shares over time, at most `capacity` samples. A sample holds each user with a non-zero
// share as an (id, share) pair; each user's name is kept once, for as long as a sample refers
// to it. So a sample costs O(users holding a share) integers whatever their names' length, and
// a user with only queued jobs (share 0, drawn as 0) costs nothing.
class ShareHistory {
 public:
  explicit ShareHistory(double resolution = 5, std::size_t capacity = 4096)
      : resolution_(resolution), capacity_(capacity) {}
  void record(double at, const std::map<std::string, double>& shares);
  // The samples at or after `from`, with the users' names (and only non-zero shares).
  std::vector<ShareSample> since(double from) const;

  // What the history holds: its samples, the (id, share) entries in them, the distinct names
  // kept, and the bytes of all of it (samples, entries, names and their index).
  struct Footprint {
    std::size_t samples = 0, entries = 0, names = 0, bytes = 0;
  };
  Footprint footprint() const;

 private:
  struct Entry {
    std::uint32_t user;
    double share;
  };
  struct Sample {
    double at = 0;
    std::vector<Entry> entries;
  };
  std::vector<Entry> intern(const std::map<std::string, double>& shares);  // under mu_
  void release(const Sample& sample);                                    // under mu_

  double resolution_;
  std::size_t capacity_;
  mutable std::mutex mu_;
  std::deque<Sample> samples_;
  std::vector<std::string> names_;  // by id; "" for a free id
  std::vector<std::uint32_t> uses_;  // by id: the samples that refer to it
  std::vector<std::uint32_t> free_ids_;
  std::unordered_map<std::string, std::uint32_t> ids_;
};

// A stable colour per user (the same user keeps its colour across refreshes).
std::string user_colour(const std::string& user);
std::string render_machine_timeline(const Timeline& timeline);
std::string render_share_history(const Timeline& timeline);

}  // namespace allox::extender
