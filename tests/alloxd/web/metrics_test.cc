// alloxd/web/metrics.h and bind_latency.h: the completion-to-bind and time-to-bind histograms
// alloxd exports, per-user queue gauges, and that every series the shipped Grafana dashboard
// (manifests/grafana/allox-dashboard.json) queries is one alloxd exports.
#include "alloxd/web/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "alloxd/web/bind_latency.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

// The cumulative count at one upper bound of a histogram read back; -1 when no bucket has it.
long cumulative_at(const std::vector<HistogramBucket>& buckets, double bound) {
  for (const HistogramBucket& b : buckets) {
    if (b.upper_bound == bound) return static_cast<long>(b.cumulative);
  }
  return -1L;
}

TEST(CompletionToBindTest, CountsOnlyMachinesFreedWhileJobsWaited) {
  CompletionToBind tracker;
  tracker.freed("node-a", "gpu", 100, /*jobs_waiting=*/true);
  tracker.freed("node-a", "gpu", 105, /*jobs_waiting=*/true);
  tracker.freed("node-b", "gpu", 100, /*jobs_waiting=*/false);
  EXPECT_EQ(std::nullopt, tracker.bound("node-b", "gpu", 110));  // it idled: nobody's delay
  EXPECT_EQ(std::nullopt, tracker.bound("node-a", "cpu", 110));  // another device
  EXPECT_EQ(10.5, tracker.bound("node-a", "gpu", 110.5));        // oldest completion first
  EXPECT_EQ(6.0, tracker.bound("node-a", "gpu", 111));
  EXPECT_EQ(std::nullopt, tracker.bound("node-a", "gpu", 112));
}

// What alloxd writes, read back as a bench reads it: the 2 ms bucket splits the /filter p99
// target, and only the asked series counts (another verb's, or a label set that merely starts the
// same, is not it).
// The informers' LISTs and watch ends (kube/informer.h on_list, on_watch_end) are counters per
// collection and reason, present from the start (a flat 0 is news too).
TEST(MetricsTest, InformerListsAndWatchRestartsAreCountedPerCollectionAndReason) {
  Metrics metrics;
  const std::string empty = metrics.render();
  EXPECT_NE(std::string::npos, empty.find("allox_informer_lists_total{resource=\"pods\"} 0\n"));
  metrics.record_list(Metrics::Collection::kPods);
  metrics.record_list(Metrics::Collection::kPods);
  metrics.record_list(Metrics::Collection::kNodes);
  for (int i = 0; i < 3; ++i) metrics.record_watch_end(Metrics::Collection::kPods, "gone");
  metrics.record_watch_end(Metrics::Collection::kNodes, "ended");
  metrics.record_watch_end(Metrics::Collection::kNodes, "nonsense");  // not a reason: ignored
  const std::string text = metrics.render();
  EXPECT_NE(std::string::npos, text.find("# TYPE allox_informer_lists_total counter\n"));
  EXPECT_NE(std::string::npos, text.find("allox_informer_lists_total{resource=\"pods\"} 2\n"));
  EXPECT_NE(std::string::npos, text.find("allox_informer_lists_total{resource=\"nodes\"} 1\n"));
  EXPECT_NE(std::string::npos,
            text.find("allox_informer_watch_restarts_total{resource=\"pods\",reason=\"gone\"} 3\n"));
  EXPECT_NE(std::string::npos,
            text.find("allox_informer_watch_restarts_total{resource=\"nodes\",reason=\"ended\"} 1\n"));
  EXPECT_NE(std::string::npos,
            text.find("allox_informer_watch_restarts_total{resource=\"nodes\",reason=\"failed\"} 0\n"));
}

TEST(MetricsTest, ALatencyHistogramReadsBackFromItsText) {
  Metrics metrics;
  for (double seconds : {0.0003, 0.0015, 0.0019, 0.0021, 0.004, 7.0}) {
    metrics.record_request(Verb::kFilter, 200, seconds);
  }
  metrics.record_request(Verb::kBind, 200, 0.0001);
  const std::string text = metrics.render();
  const std::vector<HistogramBucket> filter =
      read_histogram(text, "allox_request_duration_seconds", "verb=\"filter\"");
  ASSERT_EQ(Histogram::kLatencyBuckets.size() + 1, filter.size()) << text;
  auto at = [&](double bound) { return cumulative_at(filter, bound); };
  EXPECT_EQ(1, at(0.0005));
  EXPECT_EQ(3, at(0.002));
  EXPECT_EQ(4, at(0.0025));
  EXPECT_EQ(5, at(5));
  EXPECT_TRUE(std::isinf(filter.back().upper_bound));
  EXPECT_EQ(6u, filter.back().cumulative);
  const std::vector<HistogramBucket> bind =
      read_histogram(text, "allox_request_duration_seconds", "verb=\"bind\"");
  ASSERT_FALSE(bind.empty());
  EXPECT_EQ(1u, bind.back().cumulative);
  EXPECT_TRUE(read_histogram(text, "allox_request_duration_seconds", "verb=\"fil\"").empty());
  EXPECT_TRUE(read_histogram(text, "allox_no_such_series", "").empty());
  EXPECT_TRUE(read_histogram("allox_x_bucket{le=\"oops\"} 3\n", "allox_x", "").empty());
}

TEST(MetricsTest, RendersBindWaitHistogramsAndPerUserQueues) {
  Metrics metrics;
  metrics.record_completion_to_bind(0.3);
  metrics.record_completion_to_bind(314);  // kube-scheduler's unschedulable timeout, no nudge
  metrics.record_time_to_bind(42);
  metrics.record_solve(0.01, 3, 1, {{"alice", 0.5}}, {{"alice", 2}, {"bob", 1}});
  metrics.record_solve(0.01, 1, 1, {{"alice", 0.5}}, {{"bob", 1}});
  const std::string text = metrics.render();
  for (const char* line : {
           "allox_completion_to_bind_seconds_bucket{le=\"0.5\"} 1",
           "allox_completion_to_bind_seconds_bucket{le=\"299\"} 1",
           "allox_completion_to_bind_seconds_bucket{le=\"330\"} 2",
           "allox_completion_to_bind_seconds_bucket{le=\"+Inf\"} 2",
           "allox_completion_to_bind_seconds_count 2",
           "allox_time_to_bind_seconds_count 1",
           "allox_user_queued_jobs{user=\"alice\"} 0",  // emptied, still reported
           "allox_user_queued_jobs{user=\"bob\"} 1",
       }) {
    EXPECT_NE(std::string::npos, text.find(std::string(line) + "\n")) << line;
  }
  EXPECT_EQ(2u, metrics.completion_to_bind().count());
}

// 10,000 distinct users (the limit on a name is 63 bytes) cost /metrics no more than 100 do:
// the busiest kMaxUserSeries have series of their own, the rest are summed as "(other)".
TEST(MetricsTest, TenThousandUsersKeepMetricsUnder100Kilobytes) {
  Metrics metrics;
  std::map<std::string, double> shares;
  std::map<std::string, int> queued;
  for (int u = 0; u < 10000; ++u) {
    std::string user = "user-" + std::to_string(u) + "-";
    user.resize(63, 'x');
    shares[user] = u < 50 ? 0.01 * (u + 1) : 0;  // 50 users hold machines
    queued[user] = 1 + u % 3;
  }
  metrics.record_solve(0.01, 20000, 50, shares, queued);
  const std::string text = metrics.render();
  EXPECT_LT(text.size(), 100u << 10) << text.size() << " bytes";
  std::size_t share_series = 0, queued_series = 0;
  for (std::size_t at = text.find("\nallox_user_share{"); at != std::string::npos;
       at = text.find("\nallox_user_share{", at + 1)) {
    ++share_series;
  }
  for (std::size_t at = text.find("\nallox_user_queued_jobs{"); at != std::string::npos;
       at = text.find("\nallox_user_queued_jobs{", at + 1)) {
    ++queued_series;
  }
  EXPECT_EQ(Metrics::kMaxUserSeries + 1, share_series) << "the busiest, and (other)";
  EXPECT_EQ(Metrics::kMaxUserSeries + 1, queued_series);
  EXPECT_NE(std::string::npos, text.find("\nallox_users 10000\n"));
  // Every user holding a share has its own series: they rank first.
  std::string busiest = "user-49-";
  busiest.resize(63, 'x');
  EXPECT_NE(std::string::npos, text.find("allox_user_share{user=\"" + busiest + "\"} 0.5\n"));
  // The others' queued jobs are summed: 10,000 users hold 19,999 jobs (1 + u % 3 each).
  long long shown = 0;
  for (std::size_t at = text.find("allox_user_queued_jobs{"); at != std::string::npos;
       at = text.find("allox_user_queued_jobs{", at + 1)) {
    shown += std::stoll(text.substr(text.find("} ", at) + 2));
  }
  EXPECT_EQ(19999, shown) << "the series, (other) included, add up to every queued job";

  // A second solve with 10 users: the rest are gone, not kept at 0 for an hour.
  metrics.record_solve(0.01, 10, 0, {}, {{"a", 1}, {"b", 1}});
  const std::string after = metrics.render();
  EXPECT_EQ(std::string::npos, after.find("{user=\"(other)\"}"));
  EXPECT_NE(std::string::npos, after.find("allox_user_queued_jobs{user=\"a\"} 1\n"));
  EXPECT_LT(after.size(), 40u << 10);
}

// Label values carry any name safely: the text format's escapes for backslash, quote and
// newline, and percent-encoding for what it cannot carry (NUL and other control bytes, invalid
// UTF-8) and for '%' itself, so two names never collapse into one series.
TEST(MetricsTest, LabelValuesAreSanitised) {
  struct Case {
    std::string user;
    std::string label;
  };
  const Case cases[] = {
      {"alice", "alice"},
      {"a\\b", "a\\\\b"},
      {"say \"hi\"", "say \\\"hi\\\""},
      {"two\nlines", "two\\nlines"},
      {std::string("nul\0byte", 8), "nul%00byte"},
      {"tab\there\x7f", "tab%09here%7F"},
      {"100%", "100%25"},
      {"caf\xc3\xa9", "caf\xc3\xa9"},              // UTF-8 passes
      {"bad\xff\xc3", "bad%FF%C3"},                  // invalid UTF-8 does not
      {"over\xc0\xaflong", "over%C0%AFlong"},        // an overlong '/'
      {"\xed\xa0\x80surrogate", "%ED%A0%80surrogate"},
  };
  for (const Case& c : cases) EXPECT_EQ(c.label, prometheus_label_value(c.user)) << c.label;
  Metrics metrics;
  metrics.record_solve(0.01, 1, 0, {{std::string("x\0\"\n", 4), 0}},
                       {{std::string("x\0\"\n", 4), 1}});
  const std::string text = metrics.render();
  EXPECT_EQ(std::string::npos, text.find('\0'));
  EXPECT_NE(std::string::npos, text.find("allox_user_queued_jobs{user=\"x%00\\\"\\n\"} 1\n")) << text;
}

// The latest round's CPU beside its latency; a round whose CPU was not measured shows none
// (not a stale one, not a zero).
TEST(MetricsTest, TheLatestSolvesCpuIsExportedOnlyWhenMeasured) {
  Metrics metrics;
  metrics.record_solve(0.9, 10, 0, {}, {}, 0.12);
  std::string text = metrics.render();
  EXPECT_NE(std::string::npos, text.find("\nallox_last_solve_seconds 0.9\n")) << text;
  EXPECT_NE(std::string::npos, text.find("\nallox_last_solve_cpu_seconds 0.12\n")) << text;
  metrics.record_solve(0.5, 10, 0, {});
  text = metrics.render();
  EXPECT_EQ(std::string::npos, text.find("allox_last_solve_cpu_seconds")) << text;
}

// The store's write transactions, one histogram per durability: a synced write's fsync shows
// in its own series, not averaged away by the many written ones.
TEST(MetricsTest, StoreWritesAreExportedByDurability) {
  Metrics metrics;
  metrics.record_store_write(0.004, /*synced=*/true);
  metrics.record_store_write(0.0003, /*synced=*/false);
  metrics.record_store_write(0.0004, /*synced=*/false);
  const std::string text = metrics.render();
  const auto synced =
      read_histogram(text, "allox_store_write_duration_seconds", "durability=\"synced\"");
  const auto written =
      read_histogram(text, "allox_store_write_duration_seconds", "durability=\"written\"");
  ASSERT_FALSE(synced.empty()) << text;
  ASSERT_FALSE(written.empty()) << text;
  EXPECT_EQ(1u, synced.back().cumulative);
  EXPECT_EQ(2u, written.back().cumulative);
  EXPECT_EQ(0, cumulative_at(synced, 0.0025));
  EXPECT_EQ(1, cumulative_at(synced, 0.005));
  EXPECT_EQ(2, cumulative_at(written, 0.0005));
  EXPECT_EQ(0, cumulative_at(written, 0.00025));
}

TEST(GrafanaDashboardTest, EveryQueriedSeriesIsExported) {
  auto dashboard = nlohmann::json::parse(
      testing::read_text_file(ALLOX_SOURCE_DIR "/manifests/grafana/allox-dashboard.json"));
  Metrics metrics;
  metrics.record_request(Verb::kFilter, 200, 0.001);
  metrics.record_solve(0.01, 1, 0, {{"alice", 0.1}}, {{"alice", 1}});
  metrics.record_bind_failure();
  const std::string exported = metrics.render();
  std::set<std::string> queried;
  const std::regex series("allox_[a-z_]+");
  for (const auto& panel : dashboard.at("panels")) {
    ASSERT_FALSE(panel.at("targets").empty()) << panel.at("title");
    for (const auto& target : panel.at("targets")) {
      const std::string expr = target.at("expr");
      for (std::sregex_iterator it(expr.begin(), expr.end(), series), end; it != end; ++it)
        queried.insert(it->str());
    }
  }
  EXPECT_GE(queried.size(), 8u);
  for (const std::string& name : queried) {
    EXPECT_TRUE(exported.find("\n" + name + "{") != std::string::npos ||
                exported.find("\n" + name + " ") != std::string::npos)
        << name;
  }
}

}  // namespace
}  // namespace allox::extender
