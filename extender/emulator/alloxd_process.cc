#include "extender/emulator/alloxd_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "extender/extender_client.h"

extern char** environ;

namespace allox::emulator {

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
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
  if (launch.database.empty() || launch.log.empty()) {
    return Error{"alloxd launch: database and log paths are required"};
  }
  auto config = write_config(launch);
  if (!config) return config.error();
  std::vector<std::string> args = {launch.binary, "--config",   *config,        "--listen",
                                   launch.listen, "--database", launch.database};
  if (launch.time_scale != 1) {
    std::ostringstream scale;
    scale << launch.time_scale;
    args.push_back("--time-scale");
    args.push_back(scale.str());
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, launch.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  auto process = std::unique_ptr<AlloxdProcess>(new AlloxdProcess());
  int rc =
      posix_spawn(&process->pid_, launch.binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    process->pid_ = -1;
    return Error{"cannot start " + launch.binary + ": " + std::strerror(rc)};
  }
  const auto deadline = std::chrono::steady_clock::now() + launch.ready_timeout;
  std::unique_ptr<extender::ExtenderClient> client;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!process->running()) {
      return Error{"alloxd exited during start-up: " + read_file(launch.log)};
    }
    if (process->url_.empty()) {
      const std::string log = read_file(launch.log);
      auto at = log.find("listening on ");
      if (at != std::string::npos) {
        auto end = log.find(' ', at + 13);
        process->url_ = log.substr(at + 13, end - at - 13);
      }
    }
    if (!process->url_.empty()) {
      if (!client) {
        client =
            std::make_unique<extender::ExtenderClient>(process->url_, "", std::chrono::seconds(2));
      }
      if (client->get_text("/readyz")) return process;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Error{"alloxd was not ready within " +
               std::to_string(launch.ready_timeout.count() / 1000) +
               " s: " + read_file(launch.log)};
}

AlloxdProcess::~AlloxdProcess() {
  stop();
}

bool AlloxdProcess::running() const {
  if (pid_ <= 0) return false;
  return ::waitpid(pid_, nullptr, WNOHANG) == 0;
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

void AlloxdProcess::stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid_, nullptr, WNOHANG) != 0) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

}  // namespace allox::emulator
