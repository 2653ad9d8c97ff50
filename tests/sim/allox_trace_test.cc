#include "sim/allox_trace.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

namespace allox {
namespace {

const char* kTwoJobs =
    "# 0\n"
    "1 7 1 5 queue1\n"
    "stage -1.0 32.0 14.0 100.0 1.0 2.0 50.0 1 -0.5 0.1\n"
    "0\n"
    "# 1\n"
    "1 3 1 0 queue0\n"
    "stage -1.0 32.0 14.0 97.0 1.0 2.0 49.0 1 0.0 0.0\n"
    "0\n";

TEST(AlloxTrace, ParsesJobsWithEstimateErrors) {
  std::istringstream in(kTwoJobs);
  auto t = parse_allox_trace(in, "two");
  ASSERT_TRUE(t.ok()) << t.message();
  ASSERT_EQ(t->jobs.size(), 2u);
  // Sorted by arrival: job 3 (t=0) first.
  const TraceJob& first = t->jobs[0];
  EXPECT_EQ(first.job.id, "3");
  EXPECT_EQ(first.job.user, "queue0");
  const TraceJob& second = t->jobs[1];
  EXPECT_EQ(second.job.id, "7");
  EXPECT_DOUBLE_EQ(second.job.arrival, 5);
  EXPECT_DOUBLE_EQ(second.true_time.at("cpu"), 100);
  EXPECT_DOUBLE_EQ(second.true_time.at("gpu"), 50);
  EXPECT_DOUBLE_EQ(second.job.time.at("cpu"), 50);  // 100 × (1 − 0.5)
  EXPECT_DOUBLE_EQ(second.job.time.at("gpu"), 55);  // 50 × (1 + 0.1)
  ASSERT_EQ(t->users.size(), 2u);
  EXPECT_EQ(t->users[0].name, "queue1");  // first appearance in the file
  // Cores and memory held on a CPU node, GPUs and GPU memory on a GPU.
  const std::map<DeviceType, std::map<std::string, double>> holds = {
      {"cpu", {{"cores", 32}, {"memory_gb", 14}}}, {"gpu", {{"gpus", 1}, {"gpu_memory_gb", 2}}}};
  EXPECT_EQ(second.job.holds, holds);
}

TEST(AlloxTrace, ExactEstimatesIgnoreErrors) {
  std::istringstream in(kTwoJobs);
  auto t = parse_allox_trace(in, "two", AlloxTraceOptions{.exact_estimates = true});
  ASSERT_TRUE(t.ok()) << t.message();
  EXPECT_EQ(t->jobs[1].job.time, t->jobs[1].true_time);
}

TEST(AlloxTrace, MalformedInputNamesTheLine) {
  struct Case {
    const char* text;
    const char* where;
  };
  const Case cases[] = {
      {"1 0 1 0 q\n", "two:1:"},
      {"# 0\n1 0 1 x q\nstage -1 1 1 1 1 1 1 1 0 0\n0\n", "two:2: arrival must be a number of seconds"},
      {"# 0\n1 0 1 0 q\nstage -1 1 1 1 1 1\n0\n", "two:3:"},
      {"# 0\n1 0 1 0 q\nstage -1 1 1 0 1 1 1 1 0 0\n0\n", "times must be > 0"},
      {"# 0\n1 0 1 0 q\nstage -1 1 1 1 1 1 1 1 -1 0\n0\n", "errors must be > -1"},
      {"# 0\n1 0 1 0 q\nstage -1 1 1 1 1 1 1 1 0 0\n2\n", "dependencies"},
      // Absurd numbers: past the longest time any input may state, or resources below zero.
      {"# 0\n1 0 1 1e308 q\nstage -1 1 1 1 1 1 1 1 0 0\n0\n", "two:2: arrival must be"},
      {"# 0\n1 0 1 0 q\nstage -1 1 1 1e308 1 1 1 1 0 0\n0\n", "two:3: cpu and gpu times"},
      {"# 0\n1 0 1 0 q\nstage -1 1 1 1 1 1 1 1 1e308 0\n0\n", "two:3: estimates"},
      {"# 0\n1 0 1 0 q\nstage -1 -5 1 1 1 1 1 1 0 0\n0\n", "two:3: cores, memory"},
      {"# 0\n1 0 1 0 q\xe9\nstage -1 1 1 1 1 1 1 1 0 0\n0\n", "two:2: job id and user"},
      {"# 0\n1 0 1 0 q\nstage -1 1 1 1 1 1 1 1 0 0\n0\n# 1\n1 0 1 0 q\nstage -1 1 1 1 1 1 1 1 0 "
       "0\n0\n",
       "appears twice"},
  };
  for (const Case& c : cases) {
    std::istringstream in(c.text);
    auto t = parse_allox_trace(in, "two");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_NE(t.message().find(c.where), std::string::npos) << t.message();
  }
}

// A trace without a job is a mistake (the wrong file, a failed export), refused naming the file
// rather than simulated as nothing.
TEST(AlloxTrace, ATraceWithoutJobsIsRefused) {
  for (const char* text : {"", "\n  \n\t\n"}) {
    std::istringstream in(text);
    EXPECT_EQ("empty.txt:1: the trace has no jobs: expected four lines per job, from '# <index>'",
              parse_allox_trace(in, "empty.txt").message())
        << '"' << text << '"';
  }
}

TEST(AlloxTrace, LoadsThePaperWorkload) {
  auto t = load_allox_trace(ALLOX_SOURCE_DIR "/data/allox-google/jobs_input_10_Google.txt");
  ASSERT_TRUE(t.ok()) << t.message();
  EXPECT_EQ(t->jobs.size(), 10000u);
  EXPECT_EQ(t->users.size(), 10u);
  EXPECT_DOUBLE_EQ(t->jobs.front().job.arrival, 0);
  EXPECT_LE(t->jobs.back().job.arrival, 22520);
}

TEST(AlloxTrace, MissingFileIsAnError) {
  auto t = load_allox_trace("/nonexistent/trace.txt");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.message().find("/nonexistent/trace.txt"), std::string::npos);
}

TEST(RedrawEstimates, ErrorsOfTheAskedSizeSeededAndClipped) {
  auto loaded = load_allox_trace(ALLOX_SOURCE_DIR "/data/allox-google/jobs_input_10_Google.txt");
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  Trace exact = *loaded;
  ASSERT_TRUE(redraw_estimates(exact, 0, 1).ok());
  for (const TraceJob& tj : exact.jobs) EXPECT_EQ(tj.job.time, tj.true_time) << tj.job.id;

  Trace a = *loaded, b = *loaded;
  ASSERT_TRUE(redraw_estimates(a, 0.3, 7).ok());
  ASSERT_TRUE(redraw_estimates(b, 0.3, 7).ok());
  double sum_sq = 0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.jobs.size(); ++i) {
    EXPECT_EQ(a.jobs[i].job.time, b.jobs[i].job.time);
    for (const auto& [device, truth] : a.jobs[i].true_time) {
      const double e = a.jobs[i].job.time.at(device) / truth - 1;
      EXPECT_LE(std::abs(e), 0.99 + 1e-12);
      sum_sq += e * e;
      ++n;
    }
  }
  // 20,000 draws of N(0, 0.3): the sample deviation is within 2% of 0.3.
  EXPECT_NEAR(std::sqrt(sum_sq / static_cast<double>(n)), 0.3, 0.006);

  Trace clipped = *loaded;
  ASSERT_TRUE(redraw_estimates(clipped, 5, 7).ok());
  for (const TraceJob& tj : clipped.jobs) {
    for (const auto& [device, truth] : tj.true_time) EXPECT_GT(tj.job.time.at(device), 0);
  }
  EXPECT_FALSE(redraw_estimates(clipped, -0.1, 7).ok());
}

}  // namespace
}  // namespace allox
