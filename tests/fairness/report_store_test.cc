// allox report --store end to end: a store written through alloxd's Store API, reported by the
// allox binary, with figures worked out by hand.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "alloxd/store/store.h"

namespace allox {
namespace {

struct Output {
  int status = -1;
  std::string text;
};

Output run(const std::string& command) {
  Output out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return out;
  std::array<char, 4096> buf;
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe))
    out.text.append(buf.data(), n);
  int status = pclose(pipe);
  out.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

const std::string kAllox = ALLOX_BINARY_DIR "/cli/allox";

TEST(ReportStoreTest, ReportsAStoreWrittenByAlloxd) {
  const std::string path = ::testing::TempDir() + "/allox_report_store_test.db";
  std::filesystem::remove(path);
  {
    auto store = extender::Store::open(path);
    ASSERT_TRUE(store.ok()) << store.message();
    auto job = [](const char* id, const char* user, double arrival) {
      extender::JobRecord j;
      j.id = id;
      j.user = user;
      j.arrival = arrival;
      return j;
    };
    extender::JobRecord a1 = job("a1", "alice", 1000);
    extender::JobRecord b1 = job("b1", "bob", 1020);
    extender::JobRecord c1 = job("c1", "carol", 1040);
    for (auto* j : {&a1, &b1, &c1}) {
      extender::JobVariant pod;
      pod.pod = {j->id, "default", "uid-" + j->id};
      pod.job_id = j->id;
      pod.user = j->user;
      pod.device = "gpu";
      auto row = (*store)->record_arrival(*j, pod);
      ASSERT_TRUE(row.ok()) << row.message();
      j->row = *row;
    }
    a1.node = b1.node = "node-1";
    a1.device = b1.device = "gpu";
    a1.machine = 0;
    b1.machine = 1;
    a1.start = 1010;
    b1.start = 1030;
    ASSERT_TRUE((*store)->record_start(a1).ok());
    ASSERT_TRUE((*store)->record_start(b1).ok());
    ASSERT_TRUE((*store)->record_finish(a1.row, 1060).ok());
  }
  const std::string config = ::testing::TempDir() + "/allox_report_store_test.yaml";
  std::ofstream(config) << "nodes: [{name: node-1, machines: {gpu: 4, cpu: 1}}]\n";
  Output out = run(kAllox + " report --store " + path + " --config " + config +
                   " --now 1100 --window 100 --json");
  ASSERT_EQ(0, out.status) << out.text;
  auto doc = nlohmann::json::parse(out.text, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << out.text;
  ASSERT_EQ(3u, doc["users"].size());
  const auto& alice = doc["users"][0];
  const auto& bob = doc["users"][1];
  const auto& carol = doc["users"][2];
  // The inventory has four GPUs (two were ever used). alice: done, JCT 60, 50 s of GPU in the
  // window [1000, 1100] = 50 / 400. bob: running on one of four GPUs since 1030, 70 / 400.
  EXPECT_EQ(1, alice["done"].get<int>());
  EXPECT_DOUBLE_EQ(60, alice["mean_jct"].get<double>());
  EXPECT_DOUBLE_EQ(0.125, alice["windowed_share"].get<double>());
  EXPECT_EQ(1, bob["running"].get<int>());
  EXPECT_DOUBLE_EQ(0.25, bob["current_share"].get<double>());
  EXPECT_DOUBLE_EQ(0.175, bob["windowed_share"].get<double>());
  EXPECT_EQ(1, carol["queued"].get<int>());

  // Without the inventory the cluster's size is unknown: an error, not a guess.
  Output guessed = run(kAllox + " report --store " + path + " --now 1100");
  EXPECT_EQ(1, guessed.status) << guessed.text;
  EXPECT_NE(std::string::npos, guessed.text.find("--config alloxd.yaml")) << guessed.text;
  std::filesystem::remove(path);
  std::filesystem::remove(config);
}

TEST(ReportStoreTest, MissingStoreIsAnErrorNotANewDatabase) {
  const std::string path = ::testing::TempDir() + "/allox_no_such_store.db";
  std::filesystem::remove(path);
  Output out = run(kAllox + " report --store " + path);
  EXPECT_EQ(1, out.status);
  EXPECT_NE(std::string::npos, out.text.find("it does not exist")) << out.text;
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_EQ(1, run(kAllox + " report").status);
}

// A report only reads: an empty file or another application's database given by mistake is
// refused and left as it was, byte for byte.
TEST(ReportStoreTest, AFileThatIsNotAnAlloxStoreIsRefusedAndLeftAsItWas) {
  const std::string dir = ::testing::TempDir();
  const std::string empty = dir + "/allox_report_empty.db";
  const std::string theirs = dir + "/allox_report_theirs.db";
  std::filesystem::remove(theirs);
  std::ofstream{empty};
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(SQLITE_OK, sqlite3_open(theirs.c_str(), &db));
    ASSERT_EQ(SQLITE_OK,
              sqlite3_exec(db, "CREATE TABLE orders (id INTEGER)", nullptr, nullptr, nullptr));
    sqlite3_close(db);
  }
  auto bytes = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string theirs_before = bytes(theirs);
  const std::string cluster =
      " --cluster " + std::string(ALLOX_SOURCE_DIR) + "/examples/cluster.yaml";
  Output on_empty = run(kAllox + " report --store " + empty + cluster);
  EXPECT_EQ(1, on_empty.status);
  EXPECT_NE(std::string::npos, on_empty.text.find("empty: no allox tables")) << on_empty.text;
  EXPECT_EQ(0u, std::filesystem::file_size(empty));
  Output on_theirs = run(kAllox + " report --store " + theirs + cluster);
  EXPECT_EQ(1, on_theirs.status);
  EXPECT_NE(std::string::npos, on_theirs.text.find("another application's tables (orders)"))
      << on_theirs.text;
  EXPECT_EQ(theirs_before, bytes(theirs));
  std::filesystem::remove(empty);
  std::filesystem::remove(theirs);
}

}  // namespace
}  // namespace allox
