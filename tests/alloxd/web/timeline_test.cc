// alloxd/web/timeline.h: the share history keeps each user's name once, however many samples
// refer to it, so what it holds does not grow with the length of the names.
#include "alloxd/web/timeline.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace allox::extender {
namespace {

// `users` users with names of `name_bytes` bytes, each holding a share, for `samples` solves
// (one per resolution step, so each is a sample of its own).
ShareHistory::Footprint fill(std::size_t users, std::size_t name_bytes, std::size_t samples,
                             std::size_t capacity = 4096) {
  ShareHistory history(5, capacity);
  std::map<std::string, double> shares;
  for (std::size_t u = 0; u < users; ++u) {
    std::string name = std::to_string(u) + "-";
    name.resize(name_bytes, 'x');
    shares[name] = 0.01 * static_cast<double>(u + 1);
  }
  for (std::size_t i = 0; i < samples; ++i) history.record(1000 + 5.0 * i, shares);
  return history.footprint();
}

TEST(ShareHistoryTest, ASampleCostsTheSameWhateverTheNamesLength) {
  // 20 users at 100 KB each over 4,096 samples once held 20 x 100 KB per sample (8 GB).
  const ShareHistory::Footprint short_names = fill(20, 16, 4096);
  const ShareHistory::Footprint long_names = fill(20, 100 << 10, 4096);
  EXPECT_EQ(4096u, short_names.samples);
  EXPECT_EQ(20u * 4096u, long_names.entries);
  EXPECT_EQ(20u, long_names.names);
  // The only difference is each name kept once (twice: the list and its index), not per sample.
  EXPECT_LE(long_names.bytes - short_names.bytes, 2u * 20u * ((100u << 10) + 64u));
  EXPECT_LT(long_names.bytes, 6u << 20) << "4,096 samples of 20 users and 20 names of 100 KB";
  // And the per-sample cost is a few integers per user.
  EXPECT_LT(short_names.bytes, 4096u * (64u + 20u * 16u) + (64u << 10));
}

TEST(ShareHistoryTest, NamesLeaveWithTheLastSampleThatUsesThem) {
  ShareHistory history(5, 3);
  history.record(0, {{"alice", 0.5}, {"bob", 0.25}});
  history.record(10, {{"alice", 0.5}});
  history.record(20, {{"carol", 1}});
  EXPECT_EQ(3u, history.footprint().names);
  history.record(30, {{"carol", 1}});  // the first sample, the only one with bob, goes
  EXPECT_EQ(2u, history.footprint().names);
  history.record(40, {{"carol", 1}});
  history.record(50, {{"dave", 1}});
  const ShareHistory::Footprint f = history.footprint();
  EXPECT_EQ(3u, f.samples);
  EXPECT_EQ(2u, f.names) << "carol and dave";
  const auto samples = history.since(0);
  ASSERT_EQ(3u, samples.size());
  EXPECT_EQ((std::map<std::string, double>{{"carol", 1}}), samples[0].shares);
  EXPECT_EQ((std::map<std::string, double>{{"dave", 1}}), samples[2].shares);
}

// A user with only queued jobs (share 0) is drawn as 0 and costs nothing; a sample within one
// resolution step of the previous replaces it.
TEST(ShareHistoryTest, ZeroSharesAreNotStoredAndAStepKeepsItsNewestSample) {
  ShareHistory history(5, 100);
  std::map<std::string, double> shares = {{"busy", 0.5}};
  for (int u = 0; u < 10000; ++u) shares["queued-only-" + std::to_string(u)] = 0;
  history.record(0, shares);
  history.record(1, {{"busy", 0.75}});
  const ShareHistory::Footprint f = history.footprint();
  EXPECT_EQ(1u, f.samples);
  EXPECT_EQ(1u, f.entries);
  EXPECT_EQ(1u, f.names);
  EXPECT_EQ((std::map<std::string, double>{{"busy", 0.75}}), history.since(0).at(0).shares);
  EXPECT_TRUE(history.since(2).empty());
}

}  // namespace
}  // namespace allox::extender
