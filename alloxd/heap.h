// How alloxd's heap gives memory back. glibc's malloc is tuned for programs that end: after a
// burst of large blocks (request bodies, replies, JSON documents, lists from the API server) it
// keeps what was freed. Two of its defaults do that to a long-running server:
//   - the mmap threshold rises to the largest block freed (up to 32 MiB), after which blocks of
//     that size are carved from the heap, where freeing them returns nothing to the system
//     (and the trim threshold rises with it);
//   - each thread that meets a locked arena gets one of its own, up to 8 per core, and each
//     arena keeps its own freed memory: alloxd's two dozen threads fill many.
// tune_heap() fixes both thresholds (blocks of 128 KiB and more are mapped and unmapped on
// their own; free memory above 128 KiB at the top of the heap is given back) and caps the
// arenas at 2. The resident set then follows the live set (docs/results.md has the figures).
//
// Call once at start-up, before any thread starts. glibc only; a no-op elsewhere.
#pragma once

#include "core/result.h"

namespace allox::extender {

// What it set, or the first setting glibc refused.
Status tune_heap();

}  // namespace allox::extender
