#include "profiler/throughput_table.h"

#include <gtest/gtest.h>

namespace allox {
namespace {

TEST(ThroughputTableTest, ParsesGavelKeys) {
  struct Case {
    const char* key;
    std::optional<ThroughputKey> want;
  };
  const Case cases[] = {
      {"('ResNet-18 (batch size 16)', 1)", ThroughputKey{"ResNet-18 (batch size 16)", 1}},
      {"('A3C', 4)", ThroughputKey{"A3C", 4}},
      {"('A3C',8)", ThroughputKey{"A3C", 8}},
      {"('it's', 'x', 2)", ThroughputKey{"it's', 'x", 2}},
      {"('A', \t64)", ThroughputKey{"A", 64}},
      {"ResNet-18", std::nullopt},
      {"('ResNet-18', )", std::nullopt},
      {"('', 1)", std::nullopt},
      {"('A' 1)", std::nullopt},
      {"('A', 1", std::nullopt},
      {"(A', 1)", std::nullopt},
      {"('A', -1)", std::nullopt},
      {"('A', 1x)", std::nullopt},
      {"(',1)", std::nullopt},
      {"", std::nullopt},
      {")", std::nullopt},
  };
  for (const Case& c : cases) {
    Expected<ThroughputKey> got = parse_gavel_key(c.key);
    if (c.want) {
      ASSERT_TRUE(got.ok()) << c.key << ": " << got.message();
      EXPECT_EQ(*c.want, *got) << c.key;
    } else {
      ASSERT_FALSE(got.ok()) << c.key;
      EXPECT_EQ("key \"" + std::string(c.key) +
                    "\" is not of the form \"('<model> (batch size B)', S)\"",
                got.message());
    }
  }
}

// A scale factor past int (std::stoi threw std::out_of_range: SIGABRT) or past the machines a
// job can use is refused naming the key.
TEST(ThroughputTableTest, AScaleFactorOutOfRangeIsRefusedNamingTheKey) {
  struct Case {
    const char* key;
    const char* got;
  };
  const Case cases[] = {
      {"('ResNet-18 (batch size 16)', 99999999999)", "99999999999"},
      {"('A', 0)", "0"},
      {"('A', 65)", "65"},
      {"('A', 100000000000000000000000000000000)", "10000000000000000000..."},
  };
  for (const Case& c : cases) {
    Expected<ThroughputKey> got = parse_gavel_key(c.key);
    ASSERT_FALSE(got.ok()) << c.key;
    EXPECT_EQ("key \"" + std::string(c.key) + "\": the scale factor must be 1..64 machines, got " +
                  c.got,
              got.message());
  }
  auto table = ThroughputTable::parse_gavel(
      R"js({"v100": {"('ResNet-18 (batch size 16)', 99999999999)": {"null": 3}}})js", "t.json");
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(
      "t.json: v100: key \"('ResNet-18 (batch size 16)', 99999999999)\": the scale factor must be "
      "1..64 machines, got 99999999999",
      table.message());
}

// std::regex_match recursed once per byte of the model: a 60,000-byte key overflowed the stack
// (SIGSEGV). The message shows the key's first 60 bytes.
TEST(ThroughputTableTest, AVeryLongKeyIsParsedOrRefusedWithoutRecursion) {
  const std::string model(60000, 'A');
  Expected<ThroughputKey> good = parse_gavel_key("('" + model + "', 2)");
  ASSERT_TRUE(good.ok()) << good.message();
  EXPECT_EQ((ThroughputKey{model, 2}), *good);

  Expected<ThroughputKey> bad = parse_gavel_key("('" + model + "' 2)");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ("key \"('" + std::string(58, 'A') + "...\" (60006 bytes) is not of the form "
            "\"('<model> (batch size B)', S)\"",
            bad.message());
  auto table = ThroughputTable::parse_gavel(
      "{\"v100\": {\"('" + model + "', 1)\": {\"x\": 3}}}", "t.json");
  ASSERT_FALSE(table.ok());
  EXPECT_EQ("t.json: v100: \"('" + std::string(58, 'A') +
                "...\" (60007 bytes): missing numeric \"null\" entry",
            table.message());
  // A cut never splits a UTF-8 character: 58 bytes of 'A' after "('", then "é" (2 bytes).
  Expected<ThroughputKey> utf8 = parse_gavel_key("('" + std::string(57, 'A') + "\xC3\xA9" + model);
  ASSERT_FALSE(utf8.ok());
  EXPECT_EQ(0u, utf8.message().find("key \"('" + std::string(57, 'A') + "...\" ("))
      << utf8.message();
}

TEST(ThroughputTableTest, LoadsTheShippedGavelTable) {
  auto table =
      ThroughputTable::load_gavel(ALLOX_SOURCE_DIR "/data/gavel/simulation_throughputs.json");
  ASSERT_TRUE(table.ok()) << table.message();
  auto devices = table->devices();
  for (const char* d : {"k80", "p100", "v100"}) {
    EXPECT_NE(devices.end(), std::find(devices.begin(), devices.end(), d)) << d;
  }
  ThroughputKey resnet{"ResNet-18 (batch size 16)", 1};
  // Values as stored in the file.
  EXPECT_DOUBLE_EQ(32.353384328946916, *table->steps_per_second(resnet, "v100"));
  EXPECT_DOUBLE_EQ(4.795294551566172, *table->steps_per_second(resnet, "k80"));
  EXPECT_NEAR(1000 / 32.353384328946916, *table->job_time(resnet, "v100", 1000), 1e-9);
  // Stored as 0 steps/s (does not fit on a K80): not runnable there.
  EXPECT_FALSE(table->steps_per_second({"ResNet-50 (batch size 128)", 2}, "k80"));
  EXPECT_FALSE(table->steps_per_second(resnet, "tpu"));
}

TEST(ThroughputTableTest, MalformedInputIsAnErrorNamingTheOrigin) {
  auto bad_json = ThroughputTable::parse_gavel("{", "t.json");
  ASSERT_FALSE(bad_json.ok());
  EXPECT_NE(std::string::npos, bad_json.message().find("t.json"));
  auto bad_key = ThroughputTable::parse_gavel(R"js({"v100": {"resnet": {"null": 3}}})js", "t.json");
  ASSERT_FALSE(bad_key.ok());
  EXPECT_NE(std::string::npos, bad_key.message().find("resnet"));
  auto no_rate = ThroughputTable::parse_gavel(R"js({"v100": {"('A', 1)": {}}})js", "t.json");
  ASSERT_FALSE(no_rate.ok());
  EXPECT_NE(std::string::npos, no_rate.message().find("null"));
  EXPECT_FALSE(ThroughputTable::load_gavel("/nonexistent/x.json").ok());
}

}  // namespace
}  // namespace allox
