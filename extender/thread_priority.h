// Per-thread CPU priority for alloxd's background work (Linux: a thread's nice value), thread
// names an operator can tell apart, and a thread's own CPU time (what of a slow round was work).
//
// The planner re-solves the whole queue; the request threads (/filter, /bind), the watch and the
// controller are the chain kube-scheduler waits on. When both want the cores (a backlog binding
// at hundreds of pods a second on a small machine), the chain should go first and the planner
// take what is left: it plans everything that changed in its next round anyway.
#pragma once

#include <optional>

#include "core/result.h"

namespace allox::extender {

// Sets the calling thread's nice value to `nice` (-20..19; higher yields more). Lowering
// priority needs no privilege; raising it above the process's may be refused (an error).
Status set_this_thread_nice(int nice);

// The calling thread's nice value.
int this_thread_nice();

// The calling thread's CPU time so far in seconds (CLOCK_THREAD_CPUTIME_ID); nullopt if the
// clock cannot be read.
std::optional<double> this_thread_cpu_seconds();

// Names the calling thread (at most 15 characters are kept), as `top -H` and /proc show it.
void name_this_thread(const char* name);

}  // namespace allox::extender
