// The allocator settings `allox bench cluster` runs its harness process with (the fake API
// server, the kube-scheduler emulator and the fake kubelets; alloxd is another process).
//
// Why: the fake API server keeps every version of every pod for its watch history, so the
// harness's heap grows for the whole run (~50 KB per bound job). With glibc's defaults each
// thread's arena grows its heap a page at a time (an mprotect per page, run by whichever thread
// needs the page) and every new page costs a page fault: in this VM those traps were ~25% of
// the harness's CPU. The main heap grows 64 MB at a time (top_pad; glibc applies it to the
// main heap and to each new thread heap), on transparent huge pages: a fault per 2 MB. One
// arena for all threads was tried too: once alloxd kept up, the harness's threads waited on
// that arena's lock, so the arenas are per thread (docs/performance.md, "Allocator arenas").
// The API behaviour is untouched: only how the process gets its memory.
//
// glibc reads GLIBC_TUNABLES only at start-up, so the settings need the process started again.
#pragma once

#include <string>

namespace allox::bench {

// The GLIBC_TUNABLES value the harness runs with.
const char* harness_tunables();

// Called first thing by the bench command: when this process did not start with the settings,
// it re-executes itself (/proc/self/exe, same arguments) with them and does not return; when it
// did, it puts the environment back as the user gave it (children such as alloxd inherit
// nothing from this) and returns what is in effect, for the report: "GLIBC_TUNABLES=...", or
// "the caller's GLIBC_TUNABLES" when the user set their own (theirs win, untouched), or "glibc's
// defaults" when re-executing failed (the run goes on without).
std::string run_with_harness_tunables();

}  // namespace allox::bench
