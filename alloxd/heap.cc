#include "alloxd/heap.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

// A sanitizer's allocator stands in for glibc's malloc (and refuses mallopt): nothing to tune.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ALLOX_GLIBC_HEAP 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define ALLOX_GLIBC_HEAP 0
#endif
#endif
#if !defined(ALLOX_GLIBC_HEAP) && defined(__GLIBC__)
#define ALLOX_GLIBC_HEAP 1
#elif !defined(ALLOX_GLIBC_HEAP)
#define ALLOX_GLIBC_HEAP 0
#endif

namespace allox::extender {

Status tune_heap() {
#if ALLOX_GLIBC_HEAP
  constexpr int kThreshold = 128 << 10;
  // Setting either threshold ends glibc's dynamic adjustment of both.
  if (mallopt(M_MMAP_THRESHOLD, kThreshold) != 1) return Error{"mallopt(M_MMAP_THRESHOLD) refused"};
  if (mallopt(M_TRIM_THRESHOLD, kThreshold) != 1) return Error{"mallopt(M_TRIM_THRESHOLD) refused"};
  if (mallopt(M_ARENA_MAX, 2) != 1) return Error{"mallopt(M_ARENA_MAX) refused"};
#endif
  return OkStatus();
}

namespace {

// Set across the one re-execution, so a failed setting is never tried again in a loop.
constexpr const char* kMarker = "ALLOXD_THREAD_CACHE";
constexpr const char* kSetting = "glibc.malloc.tcache_count";

}  // namespace

std::string run_with_thread_cache(char** argv) {
#if defined(__GLIBC__)
  const char* given = std::getenv("GLIBC_TUNABLES");
  const std::string tunables = given == nullptr ? "" : given;
  if (std::getenv(kMarker) != nullptr) {
    ::unsetenv(kMarker);
    return tunables.find(kSetting) != std::string::npos ? "set" : "glibc's default (not taken)";
  }
  if (tunables.find(kSetting) != std::string::npos) return "the caller's";
  if (argv == nullptr || argv[0] == nullptr) return "glibc's default (no arguments to restart)";
  const std::string ours = std::string(kSetting) + "=" + std::to_string(kThreadCacheBlocks);
  ::setenv("GLIBC_TUNABLES", (tunables.empty() ? ours : tunables + ":" + ours).c_str(), 1);
  ::setenv(kMarker, "1", 1);
  // By the path it was started as, so the process keeps its name in ps and top (and a start
  // through the dynamic loader, where /proc/self/exe is the loader, starts alloxd itself); by
  // its own path when that was a name looked up in PATH; /proc/self/exe when that path is gone
  // (a binary replaced since it started).
  if (std::strchr(argv[0], '/') != nullptr) ::execv(argv[0], argv);
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) ::execv(self.c_str(), argv);
  ::execv("/proc/self/exe", argv);
  const std::string why = std::strerror(errno);
  ::unsetenv(kMarker);
  if (given == nullptr) {
    ::unsetenv("GLIBC_TUNABLES");
  } else {
    ::setenv("GLIBC_TUNABLES", tunables.c_str(), 1);
  }
  return "glibc's default (restarting failed: " + why + ")";
#else
  (void)argv;
  return "not glibc";
#endif
}

}  // namespace allox::extender
