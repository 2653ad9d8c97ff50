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
// Call once at start-up, before any thread starts. glibc's malloc only; a no-op elsewhere,
// and under a sanitizer, whose allocator replaces glibc's.
//
// A third default costs CPU, not memory: each thread's cache of freed blocks (tcache) keeps 7
// blocks of a size. alloxd's threads free a burst of small blocks per event (a watch event's
// decoded fields, a reconcile's look at a job, a plan's copies) and allocate as many again for
// the next: past the 7th, each goes through an arena shared with the other threads and its
// lock. The cache is set to kThreadCacheBlocks blocks of a size; glibc takes that setting only
// from the environment at start-up, so run_with_thread_cache() starts alloxd again with it.
// Measured (docs/performance.md, "The thread cache"): alloxd's CPU per bound job about a tenth
// lower at 5,000 nodes, the resident set the same.
#pragma once

#include <string>

#include "core/result.h"

namespace allox::extender {

// What it set, or the first setting glibc refused.
Status tune_heap();

inline constexpr int kThreadCacheBlocks = 512;

// A tool that does not follow exec (valgrind without --trace-children=yes) loses alloxd at the
// restart: set GLIBC_TUNABLES=glibc.malloc.tcache_count=512 for it, and alloxd starts as it is.
//
// Called first thing in main, with main's argv. When GLIBC_TUNABLES does not set
// glibc.malloc.tcache_count, re-executes this program (same arguments, same process) with it
// added to whatever GLIBC_TUNABLES held, and does not return. Otherwise, or when the
// re-execution fails, returns what is in effect: "set", "the caller's" (GLIBC_TUNABLES named
// the setting already), or why it is glibc's default.
std::string run_with_thread_cache(char** argv);

}  // namespace allox::extender
