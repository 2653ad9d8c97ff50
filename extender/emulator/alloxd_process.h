// Runs the real alloxd binary as a child process for replays, benchmarks and end-to-end tests:
// writes its config (the given alloxd config with `apiserver` pointing at a fake API server),
// starts it with --listen/--database/--time-scale, waits until it announces its address and
// answers /readyz, and stops it with SIGTERM (SIGKILL after a grace period).
// Not thread-safe; one object per child.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/result.h"

namespace allox::emulator {

struct AlloxdLaunch {
  std::string binary;         // path to alloxd
  std::string config;         // the alloxd config to start from
  std::string apiserver_url;  // fake API server; "" keeps the config's own setting
  std::string apiserver_token;
  std::string listen = "127.0.0.1:0";
  std::string database;  // SQLite path (required)
  std::string log;       // alloxd's stderr goes here (required)
  double time_scale = 1;
  std::chrono::milliseconds ready_timeout{30000};
};

class AlloxdProcess {
 public:
  static Expected<std::unique_ptr<AlloxdProcess>> start(const AlloxdLaunch& launch);
  ~AlloxdProcess();
  AlloxdProcess(const AlloxdProcess&) = delete;
  AlloxdProcess& operator=(const AlloxdProcess&) = delete;

  const std::string& url() const { return url_; }
  int pid() const { return pid_; }
  // Resident set size in bytes (VmRSS), 0 when the process is gone.
  std::size_t rss_bytes() const;
  bool running() const;
  // SIGTERM, then SIGKILL after `grace`. Idempotent.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));

 private:
  AlloxdProcess() = default;
  int pid_ = -1;
  std::string url_;
};

}  // namespace allox::emulator
