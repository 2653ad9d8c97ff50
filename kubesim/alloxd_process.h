// Runs the real alloxd binary as a child process for replays, benchmarks and tests: writes its
// config (the given alloxd config with `apiserver` pointing at a fake API server), starts it with
// --listen/--database/--time-scale, and reads its stderr as it comes (copied to `log`, and kept
// for log()). start() returns once alloxd has logged its address and its one 'ready' line (the
// inventory read, bind intents reconciled, a first plan): events, not a poll of /readyz. The
// process's exit is waited on through a pidfd, so terminate() and stop() return the moment it
// exits. Thread-safe except start/stop/kill/terminate, which one owner calls.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/result.h"

namespace allox::emulator {

struct AlloxdLaunch {
  std::string binary;  // path to alloxd
  // A command alloxd runs under, which must exec it in its own process (a path first: e.g.
  // /usr/bin/setpriv and its flags, to start it without a capability); empty: none.
  std::vector<std::string> launcher;
  std::vector<std::string> extra_args;  // more flags for alloxd, after the ones below
  std::string config;         // the alloxd config to start from (text or JSON log format)
  std::string apiserver_url;  // fake API server; "" keeps the config's own setting
  std::string apiserver_token;
  std::string listen = "127.0.0.1:0";
  std::string database;  // SQLite path (required)
  std::string log;       // a copy of alloxd's stderr goes here; "" keeps it in memory only
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
  bool running();
  // What alloxd wrote on stderr so far (the first 8 MiB).
  std::string log() const;
  // SIGTERM, then waits up to `limit` for the exit: its wait status (waitpid's), or nullopt when
  // it was still running at the limit (it is left running).
  std::optional<int> terminate(std::chrono::milliseconds limit);
  // SIGKILL and reap (a crash, for durability tests). Idempotent.
  void kill();
  // SIGTERM, then SIGKILL after `grace`. Idempotent.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));

 private:
  AlloxdProcess() = default;
  // Waits up to `limit` for the exit and reaps it; false when still running.
  bool wait_exit(std::chrono::milliseconds limit);
  void read_stderr(int fd, const std::string& copy_to);

  int pid_ = -1;
  int pidfd_ = -1;
  int exit_status_ = 0;
  std::string url_;
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable said_;  // a start-up line arrived, or stderr ended
  std::string log_;
  std::string announced_url_;
  bool ready_ = false, stderr_ended_ = false;
};

}  // namespace allox::emulator
