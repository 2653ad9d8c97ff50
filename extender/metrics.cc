#include "extender/metrics.h"

#include <cmath>
#include <exception>
#include <initializer_list>
#include <limits>
#include <sstream>

#include "extender/thread_priority.h"

namespace allox::extender {
namespace {

std::string number(double value) {
  std::ostringstream out;
  out.precision(9);
  out << value;
  return out.str();
}

// Label values escape backslash, quote and newline (exposition format).
std::string label_value(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

// One histogram family: its HELP and TYPE lines, then each series by its labels.
void render_histograms(std::string& out, const std::string& name, const std::string& help,
                       std::initializer_list<std::pair<std::string, const Histogram*>> series) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  for (const auto& [labels, histogram] : series) histogram->render(name, labels, out);
}

}  // namespace

const char* verb_name(Verb verb) {
  switch (verb) {
    case Verb::kFilter:
      return "filter";
    case Verb::kPrioritize:
      return "prioritize";
    case Verb::kBind:
      return "bind";
    case Verb::kPreempt:
      return "preempt";
    case Verb::kStatus:
      return "status";
    case Verb::kApi:
      return "api";
    case Verb::kCount:
      break;
  }
  return "other";
}

std::vector<HistogramBucket> read_histogram(std::string_view text, std::string_view name,
                                            std::string_view labels) {
  const std::string prefix =
      std::string(name) + "_bucket{" + std::string(labels) + (labels.empty() ? "" : ",") + "le=\"";
  std::vector<HistogramBucket> buckets;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (!line.starts_with(prefix)) continue;
    const std::string_view rest = line.substr(prefix.size());
    const std::size_t close = rest.find("\"} ");
    if (close == std::string_view::npos) continue;
    const std::string bound(rest.substr(0, close));
    const std::string count(rest.substr(close + 3));
    try {
      buckets.push_back(
          {bound == "+Inf" ? std::numeric_limits<double>::infinity() : std::stod(bound),
           static_cast<std::uint64_t>(std::stoull(count))});
    } catch (const std::exception&) {
      continue;  // not a number: not a bucket of this series
    }
  }
  return buckets;
}

void Histogram::observe(double seconds) {
  for (std::size_t i = 0; i < size_; ++i) {
    if (seconds <= buckets_[i]) {
      counts_[i].fetch_add(1, std::memory_order_relaxed);
      break;
    }
  }
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_nanos_.fetch_add(static_cast<std::uint64_t>(std::llround(seconds * 1e9)),
                       std::memory_order_relaxed);
}

void Histogram::render(const std::string& name, const std::string& labels, std::string& out) const {
  std::string sep = labels.empty() ? "" : ",";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < size_; ++i) {
    cumulative += counts_[i].load(std::memory_order_relaxed);
    out += name + "_bucket{" + labels + sep + "le=\"" + number(buckets_[i]) + "\"} " +
           std::to_string(cumulative) + "\n";
  }
  std::uint64_t count = count_.load(std::memory_order_relaxed);
  std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += name + "_bucket{" + labels + sep + "le=\"+Inf\"} " + std::to_string(count) + "\n";
  out += name + "_sum" + braces + " " +
         number(static_cast<double>(sum_nanos_.load(std::memory_order_relaxed)) / 1e9) + "\n";
  out += name + "_count" + braces + " " + std::to_string(count) + "\n";
}

std::size_t Metrics::code_index(int code) {
  for (std::size_t i = 0; i < kCodes.size(); ++i) {
    if (kCodes[i] == code) return i;
  }
  return kCodes.size();  // "other"
}

void Metrics::record_request(Verb verb, int code, double seconds) {
  auto v = static_cast<std::size_t>(verb);
  requests_[v][code_index(code)].fetch_add(1, std::memory_order_relaxed);
  latency_[v].observe(seconds);
}

std::uint64_t Metrics::requests(Verb verb, int code) const {
  return requests_[static_cast<std::size_t>(verb)][code_index(code)].load();
}

void Metrics::record_solve(double seconds, std::size_t queued, std::size_t running,
                           std::map<std::string, double> user_shares,
                           std::map<std::string, int> user_queued,
                           std::optional<double> cpu_seconds) {
  solve_.observe(seconds);
  std::lock_guard lock(mu_);
  queued_ = queued;
  running_ = running;
  last_solve_seconds_ = seconds;
  last_solve_cpu_seconds_ = cpu_seconds;
  user_shares_ = std::move(user_shares);
  // A user whose queue emptied reads 0 rather than vanishing from the series.
  for (auto& [user, count] : user_queued_) count = 0;
  for (const auto& [user, count] : user_queued) user_queued_[user] = count;
}

void Metrics::record_watch_end(Collection collection, std::string_view why) {
  for (std::size_t i = 0; i < kWatchEnds.size(); ++i) {
    if (why == kWatchEnds[i]) {
      watch_ends_[static_cast<std::size_t>(collection)][i].fetch_add(1, std::memory_order_relaxed);
    }
  }
}

std::string Metrics::render() const {
  std::string out;
  out += "# HELP allox_requests_total Requests answered, by endpoint and HTTP status.\n";
  out += "# TYPE allox_requests_total counter\n";
  for (std::size_t v = 0; v < static_cast<std::size_t>(Verb::kCount); ++v) {
    for (std::size_t c = 0; c <= kCodes.size(); ++c) {
      std::uint64_t n = requests_[v][c].load(std::memory_order_relaxed);
      if (n == 0) continue;
      std::string code = c < kCodes.size() ? std::to_string(kCodes[c]) : "other";
      out += std::string("allox_requests_total{verb=\"") + verb_name(static_cast<Verb>(v)) +
             "\",code=\"" + code + "\"} " + std::to_string(n) + "\n";
    }
  }
  out += "# HELP allox_request_duration_seconds Request latency, by endpoint.\n";
  out += "# TYPE allox_request_duration_seconds histogram\n";
  for (std::size_t v = 0; v < static_cast<std::size_t>(Verb::kCount); ++v) {
    latency_[v].render("allox_request_duration_seconds",
                       std::string("verb=\"") + verb_name(static_cast<Verb>(v)) + "\"", out);
  }
  render_histograms(out, "allox_solve_duration_seconds", "Scheduling-round latency.",
                    {{"", &solve_}});
  render_histograms(out, "allox_completion_to_bind_seconds",
                    "From a completion that freed a machine while jobs waited to the next bind "
                    "onto that node and device (alloxd's clock).",
                    {{"", &completion_to_bind_}});
  render_histograms(out, "allox_time_to_bind_seconds",
                    "From a job's arrival to its bind (alloxd's clock).", {{"", &time_to_bind_}});
  render_histograms(
      out, "allox_store_write_duration_seconds",
      "Each committed write transaction of the store, from BEGIN to the end of "
      "COMMIT (a synced one includes its fsync).",
      {{"durability=\"synced\"", &store_synced_}, {"durability=\"written\"", &store_written_}});
  render_histograms(
      out, "allox_filter_watch_wait_seconds",
      "A /filter's wait for the watch when alloxd was behind the cluster "
      "(kube-scheduler's cycle waits with it): settled by a plan, or vain.",
      {{"outcome=\"settled\"", &watch_wait_settled_}, {"outcome=\"vain\"", &watch_wait_vain_}});
  out += "# HELP allox_bind_failures_total Binds answered with an Error.\n";
  out += "# TYPE allox_bind_failures_total counter\n";
  out += "allox_bind_failures_total " + std::to_string(bind_failures_.load()) + "\n";
  out +=
      "# HELP allox_request_threads_realtime 1 when the threads that answer kube-scheduler run "
      "real-time (request_threads), 0 when normal.\n";
  out += "# TYPE allox_request_threads_realtime gauge\n";
  out += std::string("allox_request_threads_realtime ") +
         (request_class() == RequestClass::kRealtime ? "1" : "0") + "\n";

  static constexpr std::array<const char*, 2> kCollections = {"pods", "nodes"};
  out += "# HELP allox_informer_lists_total LISTs of the API server handed to the cluster feed.\n";
  out += "# TYPE allox_informer_lists_total counter\n";
  for (std::size_t c = 0; c < kCollections.size(); ++c) {
    out += std::string("allox_informer_lists_total{resource=\"") + kCollections[c] + "\"} " +
           std::to_string(lists_[c].load(std::memory_order_relaxed)) + "\n";
  }
  out +=
      "# HELP allox_informer_watch_restarts_total Watches of the API server that ended: "
      "cleanly, 410 Gone, or failed.\n";
  out += "# TYPE allox_informer_watch_restarts_total counter\n";
  for (std::size_t c = 0; c < kCollections.size(); ++c) {
    for (std::size_t w = 0; w < kWatchEnds.size(); ++w) {
      out += std::string("allox_informer_watch_restarts_total{resource=\"") + kCollections[c] +
             "\",reason=\"" + kWatchEnds[w] + "\"} " +
             std::to_string(watch_ends_[c][w].load(std::memory_order_relaxed)) + "\n";
    }
  }

  std::lock_guard lock(mu_);
  out += "# HELP allox_queue_length Jobs waiting to start.\n# TYPE allox_queue_length gauge\n";
  out += "allox_queue_length " + std::to_string(queued_) + "\n";
  out += "# HELP allox_running_jobs Jobs running.\n# TYPE allox_running_jobs gauge\n";
  out += "allox_running_jobs " + std::to_string(running_) + "\n";
  out += "# HELP allox_last_solve_seconds The latest scheduling round's latency.\n";
  out += "# TYPE allox_last_solve_seconds gauge\n";
  out += "allox_last_solve_seconds " + number(last_solve_seconds_) + "\n";
  if (last_solve_cpu_seconds_) {
    out +=
        "# HELP allox_last_solve_cpu_seconds The latest scheduling round's CPU on the planner "
        "thread (the rest of its latency waited for a core).\n";
    out += "# TYPE allox_last_solve_cpu_seconds gauge\n";
    out += "allox_last_solve_cpu_seconds " + number(*last_solve_cpu_seconds_) + "\n";
  }
  out += "# HELP allox_user_share Each user's current share L (AlloX).\n";
  out += "# TYPE allox_user_share gauge\n";
  for (const auto& [user, share] : user_shares_) {
    out += "allox_user_share{user=\"" + label_value(user) + "\"} " + number(share) + "\n";
  }
  out += "# HELP allox_user_queued_jobs Each user's jobs waiting to start.\n";
  out += "# TYPE allox_user_queued_jobs gauge\n";
  for (const auto& [user, count] : user_queued_) {
    out += "allox_user_queued_jobs{user=\"" + label_value(user) + "\"} " + std::to_string(count) +
           "\n";
  }
  return out;
}

}  // namespace allox::extender
