// Per-thread CPU priority for alloxd's background work (Linux: a thread's nice value), and
// thread names an operator can tell apart.
//
// The planner re-solves the whole queue; the request threads (/filter, /bind), the watch and the
// controller are the chain kube-scheduler waits on. When both want the cores (a backlog binding
// at hundreds of pods a second on a small machine), the chain should go first and the planner
// take what is left: it plans everything that changed in its next round anyway.
#pragma once

#include "core/result.h"

namespace allox::extender {

// Sets the calling thread's nice value to `nice` (-20..19; higher yields more). Lowering
// priority needs no privilege; raising it above the process's may be refused (an error).
Status set_this_thread_nice(int nice);

// The calling thread's nice value.
int this_thread_nice();

// Names the calling thread (at most 15 characters are kept), as `top -H` and /proc show it.
void name_this_thread(const char* name);

}  // namespace allox::extender
