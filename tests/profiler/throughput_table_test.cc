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
      {"ResNet-18", std::nullopt},
      {"('ResNet-18', )", std::nullopt},
  };
  for (const Case& c : cases) EXPECT_EQ(c.want, parse_gavel_key(c.key)) << c.key;
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
