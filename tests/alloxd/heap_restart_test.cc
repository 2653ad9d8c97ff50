// alloxd/heap.h's run_with_thread_cache, in the real binary: alloxd starts itself again with
// malloc's thread cache set, keeping its process (pid, name, arguments), and leaves a caller's
// own setting alone.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>

#include "alloxd/heap.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

// /proc/<pid>/environ as a map.
std::map<std::string, std::string> environment_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::map<std::string, std::string> env;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\0', at);
    if (end == std::string::npos) end = text.size();
    const std::string entry = text.substr(at, end - at);
    const auto equals = entry.find('=');
    if (equals != std::string::npos) env[entry.substr(0, equals)] = entry.substr(equals + 1);
    at = end + 1;
  }
  return env;
}

std::string comm_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

// The test process's GLIBC_TUNABLES for one scope (alloxd inherits it), then as it was.
class ScopedTunables {
 public:
  explicit ScopedTunables(const std::optional<std::string>& value) {
    if (const char* was = std::getenv("GLIBC_TUNABLES")) was_ = was;
    if (value) {
      ::setenv("GLIBC_TUNABLES", value->c_str(), 1);
    } else {
      ::unsetenv("GLIBC_TUNABLES");
    }
  }
  ~ScopedTunables() {
    if (was_) {
      ::setenv("GLIBC_TUNABLES", was_->c_str(), 1);
    } else {
      ::unsetenv("GLIBC_TUNABLES");
    }
  }

 private:
  std::optional<std::string> was_;
};

struct Started {
  testing::ScratchDir dir;
  std::unique_ptr<emulator::AlloxdProcess> alloxd;
  Started() {
    const std::string config = dir.file("alloxd.yaml");
    // At debug level: the line saying the cache was set is a debug line.
    std::ofstream(config) << "policy: allox\ntick: 5\nlog: {level: debug}\n"
                          << "nodes: [{name: n1, machines: {gpu: 1}}]\n";
    auto started = testing::start_alloxd_binary(config, dir.file("state.db"));
    EXPECT_TRUE(started.ok()) << started.message();
    if (started.ok()) alloxd = std::move(*started);
  }
};

const std::string kOurs =
    "glibc.malloc.tcache_count=" + std::to_string(kThreadCacheBlocks);

// What alloxd says it runs with: its own environment, as it reads it (/proc/<pid>/environ shows
// the string glibc has parsed in place, cut at the first tunable).
std::string said(const emulator::AlloxdProcess& alloxd) {
  const std::string log = alloxd.log();
  const auto at = log.find("] malloc ");
  if (at == std::string::npos) return "(no malloc line)";
  return log.substr(at, log.find('\n', at) - at);
}

TEST(HeapRestartTest, AlloxdRunsWithTheThreadCacheSetInItsOwnProcess) {
  ScopedTunables none(std::nullopt);
  Started run;
  ASSERT_NE(nullptr, run.alloxd);
  // start_alloxd_binary returned once alloxd answered on its port: the restarted process.
  const auto env = environment_of(run.alloxd->pid());
  ASSERT_EQ(1u, env.count("GLIBC_TUNABLES"));
  EXPECT_EQ(kOurs, env.at("GLIBC_TUNABLES"));
  EXPECT_EQ("] malloc thread_cache=\"set\" GLIBC_TUNABLES=\"" + kOurs + "\"", said(*run.alloxd));
  EXPECT_EQ("alloxd", comm_of(run.alloxd->pid())) << "it keeps its name in ps and top";
  EXPECT_EQ(0, run.alloxd->terminate(std::chrono::seconds(10)).value_or(-1));
}

TEST(HeapRestartTest, OtherTunablesAreKeptAndTheCallersOwnCacheSettingWins) {
  {
    ScopedTunables others(std::string("glibc.malloc.mxfast=64"));
    Started run;
    ASSERT_NE(nullptr, run.alloxd);
    EXPECT_EQ("] malloc thread_cache=\"set\" GLIBC_TUNABLES=\"glibc.malloc.mxfast=64:" + kOurs +
                  "\"",
              said(*run.alloxd));
  }
  {
    ScopedTunables theirs(std::string("glibc.malloc.tcache_count=7"));
    Started run;
    ASSERT_NE(nullptr, run.alloxd);
    EXPECT_EQ("] malloc thread_cache=\"the caller's\" GLIBC_TUNABLES=\"glibc.malloc.tcache_count=7\"",
              said(*run.alloxd));
  }
}

}  // namespace
}  // namespace allox::extender
