// kubesim/cluster_threads.h: which class the emulated cluster's threads run in, read
// back from the kernel (/proc) for the fake API server's own threads.
#include "kubesim/cluster_threads.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "kubesim/fake_api_server.h"
#include "tests/kubesim/http_client.h"

namespace allox::emulator {
namespace {

// This process's threads by name: the scheduling policy of each (SCHED_IDLE if any is idle).
std::map<std::string, int> policies_by_thread_name() {
  std::map<std::string, int> out;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm_file(task.path() / "comm");
    std::string name;
    std::getline(comm_file, name);
    std::ifstream stat_file(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
    // Fields after the command's closing parenthesis start at field 3; the policy is field 41.
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::string field;
    int policy = -1;
    for (int index = 3; fields >> field; ++index) {
      if (index == 41) {
        policy = std::stoi(field);
        break;
      }
    }
    if (out.count(name) == 0 || policy == SCHED_IDLE) out[name] = policy;
  }
  return out;
}

// The API server's threads while a watch holds a connection open (its thread lives as long).
std::map<std::string, int> api_server_thread_policies() {
  FakeApiServer api{FakeApiServerOptions{}};
  testing::WatchReader watch(api.url(), "/api/v1/pods?watch=true", "");
  EXPECT_EQ(200, watch.status());
  return policies_by_thread_name();
}

TEST(ClusterThreadsTest, IdleClusterThreadsRunInTheIdleClassAndNormalOnesAndTheCallerDoNot) {
  ASSERT_EQ(ClusterThreads::kNormal, cluster_threads()) << "the default";
  const auto normal = api_server_thread_policies();
  ASSERT_TRUE(normal.count("emu-api-accept") && normal.count("emu-api-conn"));
  EXPECT_NE(SCHED_IDLE, normal.at("emu-api-accept"));
  EXPECT_NE(SCHED_IDLE, normal.at("emu-api-conn"));

  set_cluster_threads(ClusterThreads::kIdle);
  const auto idle = api_server_thread_policies();
  set_cluster_threads(ClusterThreads::kNormal);
  ASSERT_TRUE(idle.count("emu-api-accept") && idle.count("emu-api-conn"));
  EXPECT_EQ(SCHED_IDLE, idle.at("emu-api-accept"));
  EXPECT_EQ(SCHED_IDLE, idle.at("emu-api-conn"));
  // The thread that started the server keeps its class: the emulated kube-scheduler's thread is
  // started from such a thread and must not inherit the idle class.
  EXPECT_NE(SCHED_IDLE, sched_getscheduler(0));
}

}  // namespace
}  // namespace allox::emulator
