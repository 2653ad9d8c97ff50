#include "bench/proc_cpu.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

namespace allox::bench {

namespace {

double ticks_per_second() {
  static const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  return ticks;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

long long stat_cpu_ticks(std::string_view stat_line) {
  const auto close = stat_line.rfind(')');
  if (close == std::string_view::npos) return -1;
  std::string_view rest = stat_line.substr(close + 1);
  // After the name: state (field 3) .. cmajflt (13), then utime (14) and stime (15).
  long long utime = 0;
  long long stime = 0;
  for (int field = 3; field <= 15; ++field) {
    const auto start = rest.find_first_not_of(' ');
    if (start == std::string_view::npos) return -1;
    rest.remove_prefix(start);
    const auto end = std::min(rest.find(' '), rest.size());
    const std::string_view token = rest.substr(0, end);
    if (field >= 14) {
      long long& out = field == 14 ? utime : stime;
      const auto parsed = std::from_chars(token.data(), token.data() + token.size(), out);
      if (parsed.ec != std::errc{} || parsed.ptr != token.data() + token.size()) return -1;
    }
    rest.remove_prefix(end);
  }
  return utime + stime;
}

double process_cpu_seconds(int pid) {
  const long long ticks = stat_cpu_ticks(read_file("/proc/" + std::to_string(pid) + "/stat"));
  return ticks < 0 ? 0 : static_cast<double>(ticks) / ticks_per_second();
}

std::map<std::string, ThreadGroupCpu> cpu_by_thread_name(int pid) {
  std::map<std::string, ThreadGroupCpu> groups;
  std::error_code error;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", error)) {
    const long long ticks = stat_cpu_ticks(read_file(task.path() / "stat"));
    std::string name = read_file(task.path() / "comm");
    if (ticks < 0 || name.empty()) continue;  // the thread ended while we read it
    if (name.back() == '\n') name.pop_back();
    ThreadGroupCpu& group = groups[name];
    group.seconds += static_cast<double>(ticks) / ticks_per_second();
    ++group.threads;
  }
  return groups;
}

std::map<std::string, ThreadGroupCpu> cpu_between(
    const std::map<std::string, ThreadGroupCpu>& before,
    const std::map<std::string, ThreadGroupCpu>& after) {
  std::map<std::string, ThreadGroupCpu> delta;
  for (const auto& [name, now] : after) {
    const auto then = before.find(name);
    ThreadGroupCpu& d = delta[name];
    d.threads = now.threads;
    // A group whose threads ended in between took their time with them: never below 0.
    d.seconds = std::max(0.0, now.seconds - (then == before.end() ? 0 : then->second.seconds));
  }
  return delta;
}

void keep_largest(std::map<std::string, ThreadGroupCpu>& seen,
                  const std::map<std::string, ThreadGroupCpu>& sample) {
  for (const auto& [name, group] : sample) {
    ThreadGroupCpu& kept = seen[name];
    if (group.seconds >= kept.seconds) kept = group;
  }
}

}  // namespace allox::bench
