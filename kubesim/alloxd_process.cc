#include "kubesim/alloxd_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

extern char** environ;

namespace allox::emulator {

namespace {

constexpr std::size_t kKeptLog = 8 << 20;

// The URL of alloxd's "listening on <url>" line, in text or JSON form (core/log.h).
std::optional<std::string> listening_url(const std::string& line) {
  const auto at = line.find("listening on ");
  if (at == std::string::npos) return std::nullopt;
  const auto start = at + 13;
  return line.substr(start, line.find_first_of(" \"\n", start) - start);
}

// alloxd's one 'ready' line: "... alloxd] ready nodes=..." or {..."msg":"ready",...}.
bool is_ready_line(const std::string& line) {
  return line.find("] ready ") != std::string::npos ||
         line.find("] ready\n") != std::string::npos ||
         line.find("\"msg\":\"ready\"") != std::string::npos;
}

// The config alloxd is started with: the original, with apiserver replaced.
Expected<std::string> write_config(const AlloxdLaunch& launch) {
  YAML::Node config;
  try {
    config = YAML::LoadFile(launch.config);
  } catch (const YAML::Exception& e) {
    return Error{launch.config + ": " + e.what()};
  }
  if (!launch.apiserver_url.empty()) {
    YAML::Node api;
    api["url"] = launch.apiserver_url;
    if (!launch.apiserver_token.empty()) api["token"] = launch.apiserver_token;
    config["apiserver"] = api;
    config.remove("nodes");  // the inventory comes from the API server
  }
  // Relative paths in the original config stay relative to its folder: write beside it is not
  // always possible, so write beside the database and make the database path absolute.
  const std::string path = launch.database + ".alloxd.yaml";
  std::ofstream out(path);
  out << "# written by allox for a replay from " << launch.config << "\n" << config << "\n";
  if (!out) return Error{"cannot write " + path};
  return path;
}

}  // namespace

Expected<std::unique_ptr<AlloxdProcess>> AlloxdProcess::start(const AlloxdLaunch& launch) {
  if (launch.database.empty()) return Error{"alloxd launch: a database path is required"};
  auto config = write_config(launch);
  if (!config) return config.error();
  std::vector<std::string> args = launch.launcher;
  args.insert(args.end(), {launch.binary, "--config", *config, "--listen", launch.listen,
                           "--database", launch.database});
  if (launch.time_scale != 1) {
    std::ostringstream scale;
    scale << launch.time_scale;
    args.push_back("--time-scale");
    args.push_back(scale.str());
  }
  args.insert(args.end(), launch.extra_args.begin(), launch.extra_args.end());
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // O_CLOEXEC: no other child spawned meanwhile inherits the write end and holds stderr open.
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return Error{std::string("alloxd launch: pipe: ") + std::strerror(errno)};
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  auto process = std::unique_ptr<AlloxdProcess>(new AlloxdProcess());
  int rc =
      posix_spawn(&process->pid_, args.front().c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    process->pid_ = -1;
    return Error{"cannot start " + launch.binary + ": " + std::strerror(rc)};
  }
  // -1 on kernels without pidfds (< 5.3): wait_exit then waits for stderr to close instead.
  process->pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, process->pid_, 0));
  process->reader_ = std::thread(
      [p = process.get(), fd = fds[0], copy_to = launch.log] { p->read_stderr(fd, copy_to); });

  std::string failure;
  {
    std::unique_lock lock(process->mu_);
    process->said_.wait_for(lock, launch.ready_timeout, [&] {
      return (!process->announced_url_.empty() && process->ready_) || process->stderr_ended_;
    });
    if (!process->announced_url_.empty() && process->ready_) {
      process->url_ = process->announced_url_;
      return process;
    }
    failure = process->stderr_ended_ ? "alloxd exited during start-up: " + process->log_
                                     : "alloxd was not ready within " +
                                           std::to_string(launch.ready_timeout.count() / 1000) +
                                           " s: " + process->log_;
  }
  return Error{failure};
}

void AlloxdProcess::read_stderr(int fd, const std::string& copy_to) {
  std::FILE* in = ::fdopen(fd, "r");
  std::ofstream copy;
  if (!copy_to.empty()) copy.open(copy_to, std::ios::trunc);
  std::string line;
  char chunk[8192];
  while (std::fgets(chunk, sizeof chunk, in) != nullptr) {
    line += chunk;
    if (line.back() != '\n') continue;  // the rest of a long line is still to come
    if (copy.is_open()) copy << line << std::flush;
    std::lock_guard lock(mu_);
    if (log_.size() < kKeptLog) log_ += line;
    if (announced_url_.empty()) {
      if (auto url = listening_url(line)) announced_url_ = *url;
    }
    if (!ready_ && is_ready_line(line)) ready_ = true;
    said_.notify_all();
    line.clear();
  }
  if (copy.is_open()) copy << line << std::flush;
  std::fclose(in);
  std::lock_guard lock(mu_);
  log_ += line;
  stderr_ended_ = true;
  said_.notify_all();
}

AlloxdProcess::~AlloxdProcess() {
  stop();
  if (reader_.joinable()) reader_.join();
}

bool AlloxdProcess::running() {
  if (pid_ <= 0) return false;
  if (::waitpid(pid_, &exit_status_, WNOHANG) == 0) return true;
  pid_ = -1;
  if (pidfd_ >= 0) ::close(pidfd_);
  pidfd_ = -1;
  return false;
}

std::string AlloxdProcess::log() const {
  std::lock_guard lock(mu_);
  return log_;
}

std::size_t AlloxdProcess::rss_bytes() const {
  if (pid_ <= 0) return 0;
  std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

bool AlloxdProcess::wait_exit(std::chrono::milliseconds limit) {
  if (pid_ <= 0) return true;
  if (pidfd_ >= 0) {
    pollfd exited{pidfd_, POLLIN, 0};
    int rc = 0;
    do {
      rc = ::poll(&exited, 1, static_cast<int>(limit.count()));
    } while (rc < 0 && errno == EINTR);
    if (rc == 0) return false;
  } else {
    std::unique_lock lock(mu_);
    if (!said_.wait_for(lock, limit, [&] { return stderr_ended_; })) return false;
  }
  ::waitpid(pid_, &exit_status_, 0);
  pid_ = -1;
  if (pidfd_ >= 0) ::close(pidfd_);
  pidfd_ = -1;
  return true;
}

std::optional<int> AlloxdProcess::terminate(std::chrono::milliseconds limit) {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    if (!wait_exit(limit)) return std::nullopt;
  }
  return exit_status_;
}

void AlloxdProcess::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  wait_exit(std::chrono::hours(1));  // SIGKILL cannot be refused: the wait is short
}

void AlloxdProcess::stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return;
  if (!terminate(grace)) kill();
}

}  // namespace allox::emulator
