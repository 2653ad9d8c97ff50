// sim/trace_format.h: which trace format a file is in when its name does not say, and reading it
// once from a pipe.
#include "sim/trace_format.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <thread>

namespace allox {
namespace {

const char kAllox[] =
    "# 0\n"
    "1 0 1 0 queue0\n"
    "stage -1.0 32.0 14.0 97.0 1.0 2.0 49.0 1 0.0 0.0\n"
    "0\n";
const char kCsv[] =
    "# a comment first\n"
    "job,user,arrival,time.cpu,time.gpu\n"
    "a,u,0,97,49\n";
const char kYaml[] = "jobs:\n  - {id: a, time: {cpu: 97, gpu: 49}}\n";

TEST(TraceFormat, TheNameSaysFirst) {
  EXPECT_EQ(TraceFormat::kCsv, trace_format_of("t.csv", kYaml));
  EXPECT_EQ(TraceFormat::kYaml, trace_format_of("t.json", kCsv));
  EXPECT_EQ(TraceFormat::kYaml, trace_format_of("t.yml", kAllox));
  EXPECT_EQ(TraceFormat::kAllox, trace_format_of("t.txt", kCsv));
  EXPECT_FALSE(trace_format_from_name("/dev/fd/63").has_value());
}

TEST(TraceFormat, WithoutANameTheFirstLinesSay) {
  EXPECT_EQ(TraceFormat::kAllox, trace_format_of("/dev/fd/63", kAllox));
  EXPECT_EQ(TraceFormat::kCsv, trace_format_of("/dev/stdin", kCsv));
  EXPECT_EQ(TraceFormat::kYaml, trace_format_of("trace", kYaml));
  EXPECT_EQ(TraceFormat::kYaml, trace_format_of("trace", "{\"jobs\": []}"));
  // Not quite either text format: read as YAML, whose error then names the file and line.
  EXPECT_EQ(TraceFormat::kYaml, trace_format_of("trace", "# 0\n1 0 1 0\n"));
  EXPECT_EQ(TraceFormat::kYaml, trace_format_of("trace", "id,time.gpu\na,1\n"));
  EXPECT_EQ(TraceFormat::kYaml, trace_format_of("trace", ""));
}

// What `allox simulate --trace <(cat trace)` gives: a pipe, read once, told by its content.
TEST(TraceFormat, APipeIsReadOnceInTheFormatItsLinesSay) {
  for (const std::string text : {kAllox, kCsv, kYaml}) {
    int ends[2];
    ASSERT_EQ(0, ::pipe(ends));
    std::thread writer([&] {
      EXPECT_EQ(static_cast<ssize_t>(text.size()), ::write(ends[1], text.data(), text.size()));
      ::close(ends[1]);
    });
    auto trace = load_trace("/dev/fd/" + std::to_string(ends[0]), std::nullopt);
    writer.join();
    ::close(ends[0]);
    ASSERT_TRUE(trace.ok()) << trace.message();
    ASSERT_EQ(1u, trace->jobs.size());
    EXPECT_EQ(97, trace->jobs[0].true_time.at("cpu"));
    EXPECT_EQ(49, trace->jobs[0].true_time.at("gpu"));
  }
}

TEST(TraceFormat, AGivenFormatIsUsedWhateverTheText) {
  const std::string path = ::testing::TempDir() + "/trace-given-format";
  FILE* file = std::fopen(path.c_str(), "w");
  ASSERT_NE(nullptr, file);
  std::fputs(kCsv, file);
  std::fclose(file);
  auto as_yaml = load_trace(path, TraceFormat::kYaml);
  ASSERT_FALSE(as_yaml.ok());
  EXPECT_NE(std::string::npos, as_yaml.message().find(path)) << as_yaml.message();
  EXPECT_TRUE(load_trace(path, TraceFormat::kCsv).ok());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace allox
