// alloxd's Prometheus metrics, rendered in the text exposition format (version 0.0.4).
//
//   allox_requests_total{verb,code}          requests answered, per endpoint and status code
//   allox_request_duration_seconds{verb}     latency histogram per endpoint
//   allox_solve_duration_seconds             scheduling-round latency histogram
//   allox_bind_failures_total                binds answered with an Error
//   allox_queue_length, allox_running_jobs   gauges, sampled at each solve
//   allox_last_solve_seconds                 the latest round's latency (its queue: the gauge
//                                            above), for benchmarks that poll at scale
//   allox_last_solve_cpu_seconds             the planner thread's CPU in that round: the rest of
//                                            its latency was waiting for a core (it runs at a
//                                            lower priority than the request threads)
//   allox_user_share{user}                   each user's current share L, sampled at each solve
//   allox_user_queued_jobs{user}             each user's queued jobs, sampled at each solve
//   allox_users                              users holding a share or queued jobs at that solve
// The per-user series are bounded by configuration, not by tenants: at most kMaxUserSeries users
// have series of their own, those with the largest share (then the most queued jobs, then by
// name); the others are summed under user="(other)". Only users active at the latest solve (a
// share or a queued job) have series; one whose activity ended reads 0 at the next solve, if
// there is room, and its series ends after that (Prometheus marks it stale). So 10,000 users
// cost the same /metrics as 100. Label values are escaped as the text format asks (backslash,
// quote, newline), and bytes the format cannot carry (other control bytes, invalid UTF-8) and
// '%' are percent-encoded, so two distinct names never share a series.
//   allox_store_write_duration_seconds{durability}
//                                            each committed write transaction of the store,
//                                            BEGIN to the end of COMMIT: "synced" ones include
//                                            their fsync (with an API server, nearly all are
//                                            bind-intent groups), "written" ones do not (the
//                                            watch's bursts, the admissions' deletes)
//   allox_completion_to_bind_seconds         a machine freed by a completion while jobs waited,
//                                            until the next bind onto that node and device
//   allox_time_to_bind_seconds               a job's arrival (first seen) until its bind
//   allox_filter_watch_wait_seconds{outcome} each /filter that waited for the watch (alloxd
//                                            behind the cluster, verbs.h): "settled" when a plan
//                                            answered it in time, "vain" when the wait ran out.
//                                            kube-scheduler's scheduling cycle waits with it
//   allox_request_threads_realtime           1 when kube-scheduler's request threads run
//                                            real-time (request_threads.h), 0 when normal
//   allox_informer_lists_total{resource}     LISTs handed to the cluster feed (pods, nodes):
//                                            one at start, then one per re-list
//   allox_informer_watch_restarts_total{resource,reason}
//                                            watches that ended: "ended" cleanly, "gone" (410),
//                                            "failed"; a steady climb is a misbehaving API
//                                            server (kube/watch_pacing.h paces the retries)
// allox_completion_to_bind_seconds and allox_time_to_bind_seconds are in alloxd's clock
// (simulated seconds under --time-scale).
//
// Counters and histograms are lock-free atomics (recorded on the request path); the gauges set
// at solve time take a mutex. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace allox::extender {

// A histogram read back from Prometheus text (render's output or any exposition of one series):
// the cumulative count at each upper bound in the order written, +Inf (infinity) last. Empty
// when `name`_bucket has no line with exactly `labels` ("" or `verb="filter"`) besides le.
struct HistogramBucket {
  double upper_bound = 0;
  std::uint64_t cumulative = 0;
};
std::vector<HistogramBucket> read_histogram(std::string_view text, std::string_view name,
                                            std::string_view labels);

enum class Verb { kFilter, kPrioritize, kBind, kPreempt, kStatus, kApi, kCount };
const char* verb_name(Verb verb);

class Histogram {
 public:
  static constexpr std::size_t kMaxBuckets = 16;
  // Request latencies: 50 us .. 5 s, with 2 ms (the scale target for /filter).
  static constexpr std::array<double, 15> kLatencyBuckets = {
      0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.0025, 0.005,
      0.01,    0.025,  0.05,    0.1,    0.25,  1,     5};
  // Waits for a machine: 100 ms .. 1 h (the unschedulable timeout, 300 s, sits between buckets).
  static constexpr std::array<double, 14> kWaitBuckets = {0.1, 0.25, 0.5, 1,   2.5, 5,   10,
                                                          30,  60,   120, 299, 330, 900, 3600};
  Histogram() : Histogram(kLatencyBuckets) {}
  template <std::size_t N>
  explicit Histogram(const std::array<double, N>& buckets) : size_(N) {
    static_assert(N <= kMaxBuckets);
    for (std::size_t i = 0; i < N; ++i) buckets_[i] = buckets[i];
  }
  void observe(double seconds);
  // Appends the _bucket, _sum and _count series; labels is "" or `verb="filter"`.
  void render(const std::string& name, const std::string& labels, std::string& out) const;
  std::uint64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::array<double, kMaxBuckets> buckets_{};
  std::size_t size_;
  std::array<std::atomic<std::uint64_t>, kMaxBuckets> counts_{};
  std::atomic<std::uint64_t> count_{0};
  std::atomic<std::uint64_t> sum_nanos_{0};
};

// A Prometheus label value for `value`: see the per-user series above.
std::string prometheus_label_value(std::string_view value);

class Metrics {
 public:
  // Users with series of their own; the rest are summed under user="(other)".
  static constexpr std::size_t kMaxUserSeries = 100;

  void record_request(Verb verb, int code, double seconds);
  // cpu_seconds: the solving thread's CPU in the round, when known.
  void record_solve(double seconds, std::size_t queued, std::size_t running,
                    std::map<std::string, double> user_shares,
                    std::map<std::string, int> user_queued = {},
                    std::optional<double> cpu_seconds = std::nullopt);
  void record_completion_to_bind(double seconds) { completion_to_bind_.observe(seconds); }
  void record_time_to_bind(double seconds) { time_to_bind_.observe(seconds); }
  const Histogram& completion_to_bind() const { return completion_to_bind_; }
  void record_bind_failure() { bind_failures_.fetch_add(1, std::memory_order_relaxed); }
  void record_watch_wait(double seconds, bool settled) {
    (settled ? watch_wait_settled_ : watch_wait_vain_).observe(seconds);
  }
  const Histogram& watch_waits(bool settled) const {
    return settled ? watch_wait_settled_ : watch_wait_vain_;
  }
  void record_store_write(double seconds, bool synced) {
    (synced ? store_synced_ : store_written_).observe(seconds);
  }
  std::uint64_t bind_failures() const { return bind_failures_.load(); }
  enum class Collection { kPods, kNodes, kCount };
  void record_list(Collection collection) {
    lists_[static_cast<std::size_t>(collection)].fetch_add(1, std::memory_order_relaxed);
  }
  // why: "ended", "gone" or "failed" (kube/informer.h on_watch_end).
  void record_watch_end(Collection collection, std::string_view why);
  std::uint64_t requests(Verb verb, int code) const;

  std::string render() const;

 private:
  // render()'s parts: request counts and latencies, histograms and counters of the pipeline,
  // the informers', and the latest scheduling round's gauges (under mu_).
  void render_requests(std::string& out) const;
  void render_pipeline(std::string& out) const;
  void render_informers(std::string& out) const;
  void render_round(std::string& out) const;
  static constexpr std::array<int, 10> kCodes = {200, 400, 401, 403, 404, 405, 409, 413, 500, 503};
  static std::size_t code_index(int code);

  std::array<Histogram, static_cast<std::size_t>(Verb::kCount)> latency_;
  std::array<std::array<std::atomic<std::uint64_t>, kCodes.size() + 1>,
             static_cast<std::size_t>(Verb::kCount)>
      requests_{};
  Histogram solve_;
  Histogram completion_to_bind_{Histogram::kWaitBuckets};
  Histogram time_to_bind_{Histogram::kWaitBuckets};
  std::atomic<std::uint64_t> bind_failures_{0};
  static constexpr std::array<const char*, 3> kWatchEnds = {"ended", "gone", "failed"};
  std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(Collection::kCount)> lists_{};
  std::array<std::array<std::atomic<std::uint64_t>, kWatchEnds.size()>,
             static_cast<std::size_t>(Collection::kCount)>
      watch_ends_{};
  Histogram watch_wait_settled_;
  Histogram watch_wait_vain_;
  Histogram store_synced_;
  Histogram store_written_;

  mutable std::mutex mu_;
  std::size_t queued_ = 0, running_ = 0;
  double last_solve_seconds_ = 0;
  std::optional<double> last_solve_cpu_seconds_;
  // One user's series at the latest solve.
  struct UserSeries {
    std::string user;
    double share = 0;
    long long queued = 0;
  };
  std::vector<UserSeries> user_series_;  // at most kMaxUserSeries
  std::optional<UserSeries> other_users_;  // the sum of the users left out, if any
  std::size_t active_users_ = 0;
};

}  // namespace allox::extender
