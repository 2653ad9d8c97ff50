#include "alloxd/web/metrics.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <initializer_list>
#include <limits>
#include <set>
#include <sstream>

#include "core/thread_priority.h"

namespace allox::extender {
namespace {

std::string number(double value) {
  std::ostringstream out;
  out.precision(9);
  out << value;
  return out.str();
}

// How many bytes of a valid UTF-8 sequence start at text[at], or 0 if none does.
std::size_t utf8_length(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  std::size_t length = 0;
  unsigned int code = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
    code = lead & 0x1fu;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    code = lead & 0x0fu;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    code = lead & 0x07u;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xc0u) != 0x80u) return 0;
    code = (code << 6) | (byte(at + i) & 0x3fu);
  }
  // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
  if ((length == 3 && code < 0x800) || (length == 4 && (code < 0x10000 || code > 0x10ffff)) ||
      (code >= 0xd800 && code <= 0xdfff)) {
    return 0;
  }
  return length;
}

}  // namespace

std::string prometheus_label_value(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (std::size_t i = 0; i < value.size();) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f || c == '%') {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    } else if (c >= 0x80) {
      if (const std::size_t length = utf8_length(value, i); length != 0) {
        out.append(value.substr(i, length));
        i += length;
        continue;
      }
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    } else {
      out.push_back(static_cast<char>(c));
    }
    ++i;
  }
  return out;
}

namespace {

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
  // Every user active now, then the busiest first.
  std::map<std::string, UserSeries> active;
  for (const auto& [user, share] : user_shares) {
    if (share != 0) active[user] = {user, share, 0};
  }
  for (const auto& [user, count] : user_queued) {
    if (count == 0) continue;
    UserSeries& series = active[user];
    series.user = user;
    series.queued = count;
  }
  // A user with a share of 0 and no queued jobs in user_shares is still one the solve saw.
  for (const auto& [user, share] : user_shares) {
    if (share == 0 && !active.count(user)) active[user] = {user, 0, 0};
  }
  std::vector<UserSeries> ranked;
  ranked.reserve(active.size());
  for (auto& [user, series] : active) ranked.push_back(std::move(series));
  const auto busier = [](const UserSeries& a, const UserSeries& b) {
    if (a.share != b.share) return a.share > b.share;
    if (a.queued != b.queued) return a.queued > b.queued;
    return a.user < b.user;
  };
  const std::size_t kept = std::min(ranked.size(), kMaxUserSeries);
  std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(kept),
                    ranked.end(), busier);
  std::optional<UserSeries> other;
  for (std::size_t i = kept; i < ranked.size(); ++i) {
    if (!other) other = UserSeries{"(other)", 0, 0};
    other->share += ranked[i].share;
    other->queued += ranked[i].queued;
  }
  ranked.resize(kept);
  // A user with a series at the last solve and gone now reads 0 once, while there is room.
  std::set<std::string> shown;
  for (const UserSeries& series : ranked) shown.insert(series.user);
  std::lock_guard lock(mu_);
  for (const UserSeries& was : user_series_) {
    if (ranked.size() >= kMaxUserSeries) break;
    if (was.share == 0 && was.queued == 0) continue;  // already read 0 once
    if (!active.count(was.user) && shown.insert(was.user).second) {
      ranked.push_back({was.user, 0, 0});
    }
  }
  std::sort(ranked.begin(), ranked.end(),
            [](const UserSeries& a, const UserSeries& b) { return a.user < b.user; });
  queued_ = queued;
  running_ = running;
  last_solve_seconds_ = seconds;
  last_solve_cpu_seconds_ = cpu_seconds;
  active_users_ = active.size();
  user_series_ = std::move(ranked);
  other_users_ = std::move(other);
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
  render_requests(out);
  render_pipeline(out);
  render_informers(out);
  render_round(out);
  return out;
}

void Metrics::render_requests(std::string& out) const {
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
}

void Metrics::render_pipeline(std::string& out) const {
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

}

void Metrics::render_informers(std::string& out) const {
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

}

void Metrics::render_round(std::string& out) const {
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
  out += "# HELP allox_users Users holding a share or queued jobs at the latest solve.\n";
  out += "# TYPE allox_users gauge\n";
  out += "allox_users " + std::to_string(active_users_) + "\n";
  std::vector<const UserSeries*> series;
  for (const UserSeries& s : user_series_) series.push_back(&s);
  if (other_users_) series.push_back(&*other_users_);
  out +=
      "# HELP allox_user_share Each user's current share L (AlloX); the users past the busiest " +
      std::to_string(kMaxUserSeries) + " summed as user=\"(other)\".\n";
  out += "# TYPE allox_user_share gauge\n";
  for (const UserSeries* s : series) {
    out += "allox_user_share{user=\"" + prometheus_label_value(s->user) + "\"} " +
           number(s->share) + "\n";
  }
  out += "# HELP allox_user_queued_jobs Each user's jobs waiting to start (the same users).\n";
  out += "# TYPE allox_user_queued_jobs gauge\n";
  for (const UserSeries* s : series) {
    out += "allox_user_queued_jobs{user=\"" + prometheus_label_value(s->user) + "\"} " +
           std::to_string(s->queued) + "\n";
  }
}

}  // namespace allox::extender
