#include "extender/thread_priority.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace allox::extender {
namespace {

// Linux applies PRIO_PROCESS to one thread when given its thread id.
id_t this_thread_id() {
  return static_cast<id_t>(syscall(SYS_gettid));
}

}  // namespace

Status set_this_thread_nice(int nice) {
  if (nice < -20 || nice > 19) {
    return Error{"nice must be in -20..19, got " + std::to_string(nice)};
  }
  if (setpriority(PRIO_PROCESS, this_thread_id(), nice) != 0) {
    return Error{"cannot set the thread's nice value to " + std::to_string(nice) + ": " +
                 std::strerror(errno)};
  }
  return OkStatus();
}

int this_thread_nice() {
  errno = 0;
  return getpriority(PRIO_PROCESS, this_thread_id());
}

std::optional<double> this_thread_cpu_seconds() {
  timespec now{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0) return std::nullopt;
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

void name_this_thread(const char* name) {
  char kept[16] = {};
  std::strncpy(kept, name, sizeof(kept) - 1);
  (void)pthread_setname_np(pthread_self(), kept);
}

}  // namespace allox::extender
