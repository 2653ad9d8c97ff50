// alloxd/main.cc's flags: a value outside what alloxd can run with is refused at start-up, naming
// the flag, before a store is opened or a port taken.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "kubesim/alloxd_process.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

struct Exit {
  int status = -1;
  std::string output;
};

// alloxd with `args`, stopped after 20 s should it start serving instead of refusing them.
Exit run_alloxd(const std::string& args) {
  const std::string command = "timeout 20 " + std::string(ALLOX_BINARY_DIR) +
                              "/cli/alloxd --config " + ALLOX_SOURCE_DIR +
                              "/examples/alloxd.yaml --listen 127.0.0.1:0 " + args + " 2>&1";
  Exit out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> buffer;
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) {
    out.output.append(buffer.data(), n);
  }
  const int status = pclose(pipe);
  out.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

TEST(MainFlagsTest, ATimeScaleOutsideItsRangeIsRefusedNamingTheFlag) {
  testing::ScratchDir dir;
  const std::string database = dir.file("state.db");
  for (const std::string value : {"nan", "1e300", "0", "-1", "inf", "fast"}) {
    const Exit exit = run_alloxd("--database " + database + " --time-scale " + value);
    EXPECT_EQ(105, exit.status) << value << ": " << exit.output;
    EXPECT_NE(
        std::string::npos,
        exit.output.find("--time-scale: must be a number in (0.001, 1e+06], got '" + value + "'"))
        << exit.output;
  }
  EXPECT_FALSE(std::filesystem::exists(database)) << "no store is opened for a refused flag";
}

TEST(MainFlagsTest, AnEmptyDatabaseFlagIsRefusedNotReplacedByTheConfigs) {
  testing::ScratchDir dir;
  const Exit exit = run_alloxd("--database ''");
  EXPECT_NE(0, exit.status) << exit.output;
  EXPECT_NE(std::string::npos,
            exit.output.find("--database: must name the SQLite file, got an empty path"))
      << exit.output;
}

// Two alloxd on one database would each keep a book and place two jobs on one machine: the
// second is refused at start-up, naming the first.
TEST(MainFlagsTest, ASecondAlloxdOnTheSameDatabaseIsRefused) {
  testing::ScratchDir dir;
  emulator::AlloxdLaunch launch;
  launch.binary = std::string(ALLOX_BINARY_DIR) + "/cli/alloxd";
  launch.config = std::string(ALLOX_SOURCE_DIR) + "/examples/alloxd.yaml";
  launch.database = dir.file("state.db");
  auto first = emulator::AlloxdProcess::start(launch);
  ASSERT_TRUE(first.ok()) << first.message();
  const Exit second = run_alloxd("--database " + launch.database);
  EXPECT_NE(0, second.status) << second.output;
  EXPECT_NE(
      std::string::npos,
      second.output.find("store: '" + launch.database + "' is in use by another alloxd (pid " +
                         std::to_string((*first)->pid()) + "): one alloxd per database"))
      << second.output;
  (*first)->terminate(std::chrono::seconds(10));
}

}  // namespace
}  // namespace allox::extender
