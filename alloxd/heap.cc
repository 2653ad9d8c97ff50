#include "alloxd/heap.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace allox::extender {

Status tune_heap() {
#if defined(__GLIBC__)
  constexpr int kThreshold = 128 << 10;
  // Setting either threshold ends glibc's dynamic adjustment of both.
  if (mallopt(M_MMAP_THRESHOLD, kThreshold) != 1) return Error{"mallopt(M_MMAP_THRESHOLD) refused"};
  if (mallopt(M_TRIM_THRESHOLD, kThreshold) != 1) return Error{"mallopt(M_TRIM_THRESHOLD) refused"};
  if (mallopt(M_ARENA_MAX, 2) != 1) return Error{"mallopt(M_ARENA_MAX) refused"};
#endif
  return OkStatus();
}

}  // namespace allox::extender
