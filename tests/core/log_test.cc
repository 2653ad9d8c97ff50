// core/log.h: one line per event, klog's header in text, one JSON object per line in json, the
// configured level filtering, values quoted and escaped.
#include "core/log.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace allox {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class LogTest : public ::testing::Test {
 protected:
  void TearDown() override { configure_log(LogOptions{}); }  // back to stderr
  std::ostringstream out_;
};

TEST_F(LogTest, TextLinesCarryKlogsHeaderAndFields) {
  configure_log({"alloxd", LogLevel::kInfo, LogFormat::kText}, out_);
  log_info("listening on http://127.0.0.1:8888",
           {{"policy", "allox"}, {"nodes", 3}, {"ready", true}, {"share", 0.25}});
  log_warn("two\nlines", {{"why", "say \"hi\""}});
  const auto lines = lines_of(out_.str());
  ASSERT_EQ(2u, lines.size()) << out_.str();
  const std::regex header(R"(([IW])(\d{4}) (\d{2}:\d{2}:\d{2}\.\d{6}) alloxd\] (.*))");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(lines[0], m, header)) << lines[0];
  EXPECT_EQ("I", m[1]);
  EXPECT_EQ("listening on http://127.0.0.1:8888 policy=\"allox\" nodes=3 ready=true share=0.25",
            m[4]);
  ASSERT_TRUE(std::regex_match(lines[1], m, header)) << lines[1];
  EXPECT_EQ("W", m[1]);
  EXPECT_EQ(R"(two\nlines why="say \"hi\"")", m[4]);
}

TEST_F(LogTest, JsonLinesAreObjectsWithTypedFields) {
  configure_log({"alloxd", LogLevel::kInfo, LogFormat::kJson}, out_);
  log_error("bind failed\nretrying", {{"pod", "lab/a"}, {"attempt", 2}, {"bad", "\xff"}});
  const auto lines = lines_of(out_.str());
  ASSERT_EQ(1u, lines.size()) << out_.str();
  const nlohmann::json j = nlohmann::json::parse(lines[0]);
  EXPECT_EQ("error", j["level"]);
  EXPECT_EQ("alloxd", j["logger"]);
  EXPECT_EQ("bind failed\nretrying", j["msg"]);
  EXPECT_EQ("lab/a", j["pod"]);
  EXPECT_EQ(2, j["attempt"]);
  EXPECT_EQ("\xEF\xBF\xBD", j["bad"]) << "invalid UTF-8 is replaced, not thrown on";
  EXPECT_TRUE(std::regex_match(j["ts"].get<std::string>(),
                               std::regex(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z)")))
      << j["ts"];
}

TEST_F(LogTest, LevelFiltersLowerEvents) {
  configure_log({"x", LogLevel::kWarn, LogFormat::kText}, out_);
  log_debug("d");
  log_info("i");
  log_warn("w");
  log_error("e");
  const auto lines = lines_of(out_.str());
  ASSERT_EQ(2u, lines.size()) << out_.str();
  EXPECT_EQ('W', lines[0][0]);
  EXPECT_EQ('E', lines[1][0]);

  std::ostringstream debug;
  configure_log({"x", LogLevel::kDebug, LogFormat::kText}, debug);
  log_debug("d");
  EXPECT_EQ('D', debug.str()[0]) << debug.str();
}

TEST(LogNamesTest, LevelsAndFormatsByName) {
  EXPECT_EQ(LogLevel::kDebug, parse_log_level("debug").value());
  EXPECT_EQ(LogLevel::kError, parse_log_level("error").value());
  EXPECT_EQ("one of debug, info, warn, error", parse_log_level("INFO").message());
  EXPECT_EQ(LogFormat::kJson, parse_log_format("json").value());
  EXPECT_EQ("one of text, json", parse_log_format("logfmt").message());
}

}  // namespace
}  // namespace allox
