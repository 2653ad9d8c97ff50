// Every figure rendered by gnuplot (PNG and SVG), and each series told apart: as many distinct
// (colour, dash) styles as series in line plots, as many distinct colours as users in filled
// ones, allox always in its red.
#include "sim/plots.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "sim/experiment.h"
#include "sim/plot_style.h"
#include "sim/planner.h"
#include "sim_test_util.h"

namespace allox {
namespace {

namespace fs = std::filesystem;
using testing::make_cluster;
using testing::make_trace;
using testing::trace_job;

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Series {
  std::string title;
  std::string colour;  // the last "lc rgb" of the clause: a fill's border colour comes first
  std::string dash;
};

// The series of the first plot command (the PNG's; the SVG's repeats it): one clause per data
// file reference, titled ones only.
std::vector<Series> series_of(const fs::path& gp, const std::string& stem) {
  const std::string script = read(gp);
  const std::string png_part = script.substr(0, script.find("set terminal svg"));
  std::vector<Series> out;
  const std::string file = "'" + stem + ".dat'";
  std::size_t at = png_part.find(file);
  while (at != std::string::npos) {
    const std::size_t next = png_part.find(file, at + 1);
    const std::string clause = png_part.substr(at, next == std::string::npos ? next : next - at);
    at = next;
    std::smatch m;
    if (!std::regex_search(clause, m, std::regex(" title '([^']*)'"))) continue;
    Series s{m[1], "", ""};
    static const std::regex colour("lc rgb '(#[0-9a-f]{6})'");
    for (std::sregex_iterator it(clause.begin(), clause.end(), colour), end; it != end; ++it) {
      s.colour = (*it)[1];
    }
    if (std::regex_search(clause, m, std::regex(" dt (\\d+)"))) s.dash = m[1];
    out.push_back(s);
  }
  return out;
}

void expect_rendered(const fs::path& dir, const std::string& stem, const std::string& title) {
  for (const char* ext : {".png", ".svg"}) {
    const fs::path f = dir / (stem + ext);
    ASSERT_TRUE(fs::exists(f)) << f;
    EXPECT_GT(fs::file_size(f), 1000u) << f;
  }
  EXPECT_NE(read(dir / (stem + ".svg")).find(title), std::string::npos) << stem;
}

class PlotsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("allox_plots_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // 10 users, 40 jobs on 2 GPUs and 2 CPU nodes.
  static Trace ten_users() {
    std::vector<TraceJob> jobs;
    for (int j = 0; j < 40; ++j) {
      jobs.push_back(trace_job("j" + std::to_string(j), "user" + std::to_string(j % 10), j * 3.0,
                               {{"gpu", 5.0 + j % 7}, {"cpu", 20.0 + 3 * (j % 5)}}));
    }
    return make_trace(jobs);
  }

  fs::path dir_;
};

// Every policy (13 runs: 11 baselines, allox at α = 0.1 and 1) and three more allox α: 16 curves.
TEST_F(PlotsTest, JctCdfGivesSixteenSeriesSixteenStyles) {
  const Trace trace = ten_users();
  const Cluster cluster = make_cluster(2, 2);
  auto specs = expand_policies("all", 0.1);
  ASSERT_TRUE(specs.ok()) << specs.message();
  for (double a : {0.2, 0.4, 0.7}) specs->push_back({"allox", a, "allox-a" + std::to_string(a).substr(0, 3)});
  auto runs = run_all(trace, cluster, *specs, PolicyOptions{}, SimOptions{}, 2);
  ASSERT_TRUE(runs.ok()) << runs.message();
  ASSERT_EQ(runs->size(), 16u);
  ASSERT_TRUE(plot_jct_cdf(*runs, dir_.string(), "cdf", "Job completion times").ok());
  expect_rendered(dir_, "cdf", "Job completion times");

  const std::vector<Series> series = series_of(dir_ / "cdf.gp", "cdf");
  ASSERT_EQ(series.size(), 16u);
  std::set<std::pair<std::string, std::string>> styles;
  std::set<std::string> other_colours;
  for (const Series& s : series) {
    styles.insert({s.colour, s.dash});
    if (s.title.rfind("allox", 0) == 0) {
      EXPECT_EQ(s.colour, kAlloxColour) << s.title;
    } else {
      EXPECT_NE(s.colour, kAlloxColour) << s.title;
      other_colours.insert(s.colour);
    }
  }
  EXPECT_EQ(styles.size(), series.size());
  // 11 other policies, 12 palette colours: none repeats.
  EXPECT_EQ(other_colours.size(), 11u);
  // The legend sits outside the plot area.
  EXPECT_NE(read(dir_ / "cdf.gp").find("set key outside"), std::string::npos);
}

TEST_F(PlotsTest, SharesGiveEachOfTenUsersItsOwnColour) {
  const Trace trace = ten_users();
  auto run = run_policy(trace, make_cluster(2, 2), {"drf", 0.1, "drf"}, PolicyOptions{},
                        SimOptions{});
  ASSERT_TRUE(run.ok()) << run.message();
  ASSERT_TRUE(plot_shares(*run, dir_.string(), "shares").ok());
  expect_rendered(dir_, "shares", "each user's share");
  const std::vector<Series> series = series_of(dir_ / "shares.gp", "shares");
  ASSERT_EQ(series.size(), 10u);
  std::set<std::string> colours;
  for (const Series& s : series) colours.insert(s.colour);
  EXPECT_EQ(colours.size(), 10u);
}

TEST_F(PlotsTest, SweepsRender) {
  const Trace trace = ten_users();
  std::vector<SweepPoint> alpha, load;
  for (double a : {0.1, 0.5, 1.0}) {
    auto run = run_policy(trace, make_cluster(2, 2), {"allox", a, "allox"}, PolicyOptions{},
                          SimOptions{});
    ASSERT_TRUE(run.ok()) << run.message();
    alpha.push_back({a, run->summary});
  }
  for (int gpus : {1, 2, 4}) {
    for (const char* p : {"allox", "sjf", "drf"}) {
      auto run = run_policy(trace, make_cluster(2, gpus), {p, 0.1, p}, PolicyOptions{},
                            SimOptions{});
      ASSERT_TRUE(run.ok()) << run.message();
      load.push_back({double(gpus), run->summary});
    }
  }
  ASSERT_TRUE(plot_alpha_tradeoff(alpha, dir_.string(), "alpha").ok());
  expect_rendered(dir_, "alpha", "avg JCT against fairness");
  ASSERT_TRUE(plot_load_sweep(load, "GPUs", dir_.string(), "load", "avg JCT by load").ok());
  expect_rendered(dir_, "load", "avg JCT by load");
  const std::vector<Series> series = series_of(dir_ / "load.gp", "load");
  ASSERT_EQ(series.size(), 3u);
  std::set<std::pair<std::string, std::string>> styles;
  for (const Series& s : series) styles.insert({s.colour, s.dash});
  EXPECT_EQ(styles.size(), 3u);
}

// Two users' jobs on a GPU busy until 3 and a free GPU: one legend entry per user and one for
// the busy period, each its own colour; the caption under the chart.
TEST_F(PlotsTest, GanttHasOneSeriesPerUserAndItsCaption) {
  Workload w;
  w.users = {{"alice", 1}, {"bob", 1}};
  w.jobs = {Job{"a", "alice", 0, {{"gpu", 10}}, std::nullopt, ""},
            Job{"b", "bob", 0, {{"gpu", 20}}, std::nullopt, ""}};
  Cluster c;
  c.machines = {{"gpu-0", "gpu", 0}, {"gpu-1", "gpu", 3}};
  auto scenarios = plan(w, c, {});
  ASSERT_TRUE(scenarios.ok()) << scenarios.message();
  const std::string caption = "avg JCT 16.5 s, makespan 23.0 s";
  ASSERT_TRUE(plot_gantt((*scenarios)[0].result, c, "allox plan: as is", caption, dir_.string(),
                         "g", PlotSources::kKeep)
                  .ok());
  expect_rendered(dir_, "g", "allox plan: as is");
  EXPECT_NE(read(dir_ / "g.svg").find(caption), std::string::npos);
  const std::vector<Series> series = series_of(dir_ / "g.gp", "g");
  ASSERT_EQ(series.size(), 3u);
  std::set<std::string> colours;
  for (const Series& s : series) colours.insert(s.colour);
  EXPECT_EQ(colours.size(), 3u);
  // One bar per job and one for the busy period: rows "row start end label" on the chart
  // (rows >= 0; placeholders of empty blocks sit at row -10).
  const std::string data = read(dir_ / "g.dat");
  std::istringstream lines(data);
  int bars = 0;
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, std::regex("^[0-9]+ "))) ++bars;
  }
  EXPECT_EQ(bars, 3) << data;
  EXPECT_NE(data.find("1 0 3 \"\""), std::string::npos) << data;
}

// By default a Gantt chart writes its two images and nothing else: gnuplot's data, script and
// messages go to a temporary folder that is removed, so files of those names beside the chart
// are left as they were.
TEST_F(PlotsTest, GanttWritesOnlyItsImagesByDefault) {
  Workload w;
  w.users = {{"alice", 1}};
  w.jobs = {Job{"a", "alice", 0, {{"gpu", 10}}, std::nullopt, ""}};
  Cluster c;
  c.machines = {{"gpu-0", "gpu", 0}};
  auto scenarios = plan(w, c, {});
  ASSERT_TRUE(scenarios.ok()) << scenarios.message();
  const std::filesystem::path sub = dir_ / "rel";
  std::filesystem::create_directories(sub);
  std::ofstream(dir_ / "g.dat") << "mine\n";
  ASSERT_TRUE(plot_gantt((*scenarios)[0].result, c, "t", "c", sub.string(), "g").ok());
  std::set<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(sub)) {
    files.insert(entry.path().filename().string());
  }
  EXPECT_EQ(files, (std::set<std::string>{"g.png", "g.svg"}));
  ASSERT_TRUE(plot_gantt((*scenarios)[0].result, c, "t", "c", dir_.string(), "g").ok());
  EXPECT_EQ(read(dir_ / "g.dat"), "mine\n");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "g.gp"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "g.log"));
}

}  // namespace
}  // namespace allox
