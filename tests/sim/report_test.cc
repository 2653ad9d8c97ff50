#include "sim/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "core/csv.h"
#include "tests/sim/sim_test_util.h"
#include "tests/sim/test_policies.h"

namespace allox {
namespace {

struct Fixture {
  Trace trace = testing::make_trace(
      {testing::trace_job("a", "u1", 0, {{"cpu", 10}, {"gpu", 4}}, {{"cpu", 9}, {"gpu", 5}}),
       testing::trace_job("b", "u2", 0.5, {{"cpu", 6}, {"gpu", 3}}),
       testing::trace_job("c,1", "u1", 1, {{"cpu", 5}, {"gpu", 2}})});
  Cluster cluster = testing::make_cluster(1, 1);
  SimResult result;
  SimSummary summary;
  Fixture() {
    testing::GreedyFastestIdle policy;
    result = *simulate(trace, cluster, policy);
    summary = summarize(result, trace, cluster, 0.5);
  }
};

TEST(Report, SummaryJsonHasExactlyTheDocumentedFields) {
  Fixture f;
  std::ostringstream out;
  write_summary_json(f.summary, out);
  const auto j = nlohmann::json::parse(out.str());
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  std::vector<std::string> want = {"alpha",    "avg_jct", "completed", "jain",    "jobs",
                                   "makespan", "max_rho", "p50_jct",   "p95_jct", "p99_jct",
                                   "per_user", "policy",  "sim_wall_s"};
  EXPECT_EQ(keys, want);
  EXPECT_EQ(j["policy"], "greedy");
  EXPECT_EQ(j["alpha"], 0.5);
  EXPECT_EQ(j["jobs"], 3);
  ASSERT_EQ(j["per_user"].size(), 2u);
  EXPECT_EQ(j["per_user"][0]["user"], "u1");

  f.summary.alpha.reset();
  std::ostringstream no_alpha;
  write_summary_json(f.summary, no_alpha);
  EXPECT_TRUE(nlohmann::json::parse(no_alpha.str())["alpha"].is_null());
}

// An outside tool reading jobs.csv gets the same avg JCT and makespan as summary.json.
TEST(Report, JobsCsvRecomputesTheSummary) {
  Fixture f;
  std::ostringstream out;
  write_jobs_csv(f.result, out);
  std::istringstream in(out.str());
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "job,user,arrival,start,finish,device,machine,estimated_time,true_time");
  double total = 0, first_arrival = 1e300, last_finish = 0;
  int rows = 0;
  while (std::getline(in, line)) {
    // The quoted id "c,1" holds a comma: split after it.
    std::string rest = line;
    if (rest.rfind("\"c,1\",", 0) == 0)
      rest = rest.substr(6);
    else
      rest = rest.substr(rest.find(',') + 1);
    std::vector<std::string> f;
    std::stringstream fields(rest);
    for (std::string x; std::getline(fields, x, ',');) f.push_back(x);
    ASSERT_EQ(f.size(), 8u) << line;  // user .. true_time
    const double arrival = std::stod(f[1]), start = std::stod(f[2]), finish = std::stod(f[3]);
    EXPECT_NEAR(finish - start, std::stod(f[7]), 1e-9) << line;
    total += finish - arrival;
    first_arrival = std::min(first_arrival, arrival);
    last_finish = std::max(last_finish, finish);
    ++rows;
  }
  ASSERT_EQ(rows, 3);
  EXPECT_DOUBLE_EQ(total / rows, f.summary.avg_jct);
  EXPECT_DOUBLE_EQ(last_finish - first_arrival, f.summary.makespan);
}

TEST(Report, ComparisonTableSaysHowManyJobsNeverFinished) {
  SimSummary all;
  all.policy = "fifo";
  all.jobs = all.completed = 3;
  SimSummary some;
  some.policy = "es";
  some.jobs = 3;
  some.completed = 2;
  std::ostringstream out;
  write_comparison_table({all, some}, out);
  EXPECT_NE(out.str().find("\nes: 1 of 3 jobs never finished; its figures count only the 2 that "
                           "finished\n"),
            std::string::npos)
      << out.str();
  EXPECT_EQ(out.str().find("fifo:"), std::string::npos) << out.str();
}

TEST(Report, ComparisonCsvHasOneRowPerRun) {
  Fixture f;
  std::ostringstream out;
  write_comparison_csv({f.summary, f.summary}, out, {10, 20}, "gpus");
  std::istringstream in(out.str());
  std::string header, row1, row2;
  std::getline(in, header);
  std::getline(in, row1);
  std::getline(in, row2);
  EXPECT_EQ(header.rfind("gpus,policy,alpha,", 0), 0u);
  EXPECT_EQ(row1.rfind("10,greedy,0.5,3,3,", 0), 0u) << row1;
  EXPECT_EQ(row2.rfind("20,greedy,", 0), 0u) << row2;
}

// The comparison CSV and summary.json are one list of figures: the same names in the same order,
// and each cell reads back as the JSON's value.
TEST(Report, ComparisonCsvColumnsAreTheSummaryJsonFields) {
  Fixture f;
  std::ostringstream json_text, csv_text;
  write_summary_json(f.summary, json_text);
  write_comparison_csv({f.summary}, csv_text);
  const auto j = nlohmann::ordered_json::parse(json_text.str());
  std::istringstream in(csv_text.str());
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  const std::vector<std::string> names = split_csv_record(header).value();
  const std::vector<std::string> cells = split_csv_record(row).value();
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) {
    if (key != "per_user") keys.push_back(key);
  }
  EXPECT_EQ(names, keys);
  ASSERT_EQ(cells.size(), keys.size()) << row;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto& want = j[keys[i]];
    if (want.is_string()) {
      EXPECT_EQ(cells[i], want.get<std::string>()) << keys[i];
    } else {
      EXPECT_DOUBLE_EQ(std::stod(cells[i]), want.get<double>()) << keys[i];
    }
  }
}

}  // namespace
}  // namespace allox
