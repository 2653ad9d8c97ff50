#include "bench/bench_alloxd.h"

#include <chrono>
#include <filesystem>
#include <system_error>

namespace allox::bench {

Expected<std::unique_ptr<emulator::AlloxdProcess>> start_bench_alloxd(const BenchAlloxd& run) {
  emulator::AlloxdLaunch launch;
  launch.binary = run.binary;
  launch.config = run.config;
  launch.apiserver_url = run.apiserver_url;
  launch.apiserver_token = run.apiserver_token;
  launch.database = std::filesystem::absolute(run.state_dir + "/alloxd.db").string();
  std::error_code ignored;  // a file that is not there is already gone
  for (const char* suffix : {"", "-wal", "-shm"})
    std::filesystem::remove(launch.database + suffix, ignored);
  launch.log = run.state_dir + "/alloxd.log";
  launch.time_scale = run.time_scale;
  launch.ready_timeout = std::chrono::seconds(120);  // 5,000 nodes to list on a loaded machine
  return emulator::AlloxdProcess::start(launch);
}

}  // namespace allox::bench
