#include "core/thread_priority.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "core/log.h"

namespace allox {
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

namespace {

// The kernel's struct sched_attr (include/uapi/linux/sched/types.h, a stable ABI); glibc 2.36
// has no wrapper, and the kernel header redefines glibc's sched_param.
struct SchedAttr {
  std::uint32_t size;
  std::uint32_t sched_policy;
  std::uint64_t sched_flags;
  std::int32_t sched_nice;
  std::uint32_t sched_priority;
  std::uint64_t sched_runtime;  // SCHED_NORMAL / SCHED_BATCH: the slice, in ns (Linux 6.12+)
  std::uint64_t sched_deadline;
  std::uint64_t sched_period;
  std::uint32_t sched_util_min;
  std::uint32_t sched_util_max;
};
constexpr std::uint32_t kSchedNormal = 0, kSchedFifo = 1, kSchedBatch = 3, kSchedIdle = 5;
constexpr std::uint64_t kSchedFlagResetOnFork = 0x01;

std::optional<SchedAttr> this_thread_sched_attr() {
  SchedAttr attr{};
  attr.size = sizeof(attr);
  if (syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 0) != 0) return std::nullopt;
  return attr;
}

// Sets the calling thread's policy, priority (non-zero only for the real-time class) and slice
// (0: the kernel's default), keeping its nice value and clearing reset-on-fork; `what` completes
// "cannot ..." in the error.
Status set_this_thread_policy(std::uint32_t policy, std::uint32_t priority, std::uint64_t slice_ns,
                              const std::string& what) {
  auto attr = this_thread_sched_attr();
  if (!attr)
    return Error{std::string("cannot read the thread's scheduling: ") + std::strerror(errno)};
  attr->sched_policy = policy;
  attr->sched_priority = priority;
  attr->sched_flags &= ~kSchedFlagResetOnFork;
  attr->sched_runtime = slice_ns;
  if (syscall(SYS_sched_setattr, 0, &*attr, 0) != 0) {
    return Error{"cannot " + what + ": " + std::strerror(errno)};
  }
  return OkStatus();
}

}  // namespace

Status run_this_thread_in_background() {
  return set_this_thread_policy(kSchedBatch, 0, 0, "run the thread in the background");
}

Status run_this_thread_when_idle() {
  return set_this_thread_policy(kSchedIdle, 0, 0, "run the thread in the idle class");
}

Status run_this_thread_interactively(std::chrono::microseconds slice) {
  const auto slice_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(slice).count());
  if (Status set = set_this_thread_policy(kSchedNormal, 0, slice_ns, "set the thread's slice");
      !set) {
    return set;
  }
  if (slice.count() == 0) return OkStatus();  // the kernel's default slice
  // Kernels before 6.12 accept the call and ignore the slice: read it back.
  const auto honoured =
      std::clamp(slice, std::chrono::microseconds(100), std::chrono::microseconds(100'000));
  if (this_thread_slice() != honoured) {
    return Error{"this kernel does not honour a thread's slice (Linux 6.12+ does)"};
  }
  return OkStatus();
}

Status run_this_thread_in_realtime(int priority) {
  if (priority < 1 || priority > 99) {
    return Error{"a real-time priority must be in 1..99, got " + std::to_string(priority)};
  }
  return set_this_thread_policy(kSchedFifo, static_cast<std::uint32_t>(priority), 0,
                                "run the thread in the real-time class (it needs CAP_SYS_NICE)");
}

Status realtime_granted() {
  Status granted = OkStatus();
  std::thread([&] { granted = run_this_thread_in_realtime(); }).join();
  return granted;
}

namespace {
std::atomic<RequestClass> process_request_class{RequestClass::kNormal};
}  // namespace

void set_request_class(RequestClass request) {
  process_request_class.store(request, std::memory_order_relaxed);
}

RequestClass request_class() {
  return process_request_class.load(std::memory_order_relaxed);
}

Status enter_request_class() {
  return request_class() == RequestClass::kRealtime
             ? run_this_thread_in_realtime()
             : run_this_thread_interactively(std::chrono::microseconds(0));
}

bool this_thread_runs_in_realtime() {
  auto attr = this_thread_sched_attr();
  return attr && attr->sched_policy == kSchedFifo;
}

bool this_thread_runs_in_background() {
  auto attr = this_thread_sched_attr();
  return attr && attr->sched_policy == kSchedBatch;
}

bool this_thread_runs_when_idle() {
  auto attr = this_thread_sched_attr();
  return attr && attr->sched_policy == kSchedIdle;
}

std::optional<std::chrono::microseconds> this_thread_slice() {
  auto attr = this_thread_sched_attr();
  if (!attr || attr->sched_runtime == 0) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::nanoseconds(attr->sched_runtime));
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

void become_background_thread(const char* name) {
  name_this_thread(name);
  if (Status entered = run_this_thread_in_background(); !entered) {
    static std::once_flag said;
    std::call_once(said, [&] {
      log_warn("background threads keep the scheduling class they inherited",
               {{"thread", name}, {"error", entered.message()}});
    });
  }
}

}  // namespace allox
