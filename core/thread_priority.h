// Per-thread CPU priority and responsiveness (Linux: a thread's nice value, policy and slice),
// thread names an operator can tell apart, and a thread's own CPU time (what of a slow round was
// work).
//
// Share: the planner re-solves the whole queue; the request threads (/filter, /bind), the watch
// and the controller are the chain kube-scheduler waits on. When both want the cores (a backlog
// binding at hundreds of pods a second on a small machine), the chain should go first and the
// planner take what is left: it plans everything that changed in its next round anyway.
//
// Responsiveness: kube-scheduler waits on each /filter within its scheduling cycle, one pod at
// a time, so the thread that reads it should get a core the moment it arrives. alloxd runs every
// thread in the background and only its HTTP I/O threads interactively.
#pragma once

#include <chrono>
#include <optional>

#include "core/result.h"

namespace allox {

// Sets the calling thread's nice value to `nice` (-20..19; higher yields more). Lowering
// priority needs no privilege; raising it above the process's may be refused (an error).
Status set_this_thread_nice(int nice);

// The calling thread's nice value.
int this_thread_nice();

// How the kernel treats the calling thread when the cores are busy. Neither changes the thread's
// share of the CPU (that is the nice value), and neither needs a privilege.
//
// Background (SCHED_BATCH): when the thread wakes it does not preempt the running thread; it
// waits its turn. For work nobody is waiting on within the millisecond: the watch, the
// controller, the store, the binds' calls to the API server.
Status run_this_thread_in_background();

// Idle (SCHED_IDLE): the thread runs on what the normal threads of its CPU group (cgroup) leave.
// A normal thread that wakes preempts it at once, whatever either has run lately, and when both
// want a core it weighs about 1/340 of a normal thread. No privilege is needed, but none can take
// it back to normal either: only threads that stay background for good may enter it. alloxd does
// not use it (docs/performance.md, "The idle class"); the emulated cluster may
// (kubesim/cluster_threads.h).
Status run_this_thread_when_idle();

// Interactive (SCHED_NORMAL, in slices of `slice`; Linux 6.12+'s EEVDF custom slice, which the
// kernel clamps to 0.1-100 ms): a woken thread whose slice is shorter than the running thread's
// preempts it. For the threads that answer kube-scheduler: a /filter arriving on a saturated
// machine gets a core at once instead of after a busy thread's 1-3 ms slice. A zero slice: the
// kernel's default. An error when the kernel does not honour the slice (the thread is then
// interactive with the default slice).
Status run_this_thread_interactively(std::chrono::microseconds slice);

// The real-time priority the request class runs at (below).
constexpr int kRequestThreadPriority = 2;

// Real-time (SCHED_FIFO at `priority`, 1-99): the thread preempts every normal, batch and idle
// thread the moment it wakes (the kernel still finishes a system call in progress first) and is
// never preempted by them; the kernel caps all real-time threads together at 95% of each second
// (sched_rt_runtime_us), so a runaway one cannot take the machine. Needs CAP_SYS_NICE (or an
// RLIMIT_RTPRIO): an error otherwise, and the thread keeps its class.
Status run_this_thread_in_realtime(int priority = kRequestThreadPriority);
// Whether this process may run threads real-time: tried on a scratch thread that then ends, so
// the caller's class is untouched.
Status realtime_granted();

// The class of the threads that answer kube-scheduler (alloxd's extender listener's I/O
// threads): kNormal (interactive) or kRealtime (for a machine whose cores are shared with a busy control plane;
// request_threads.h chooses: normal unless an operator opts in; docs/performance.md).
enum class RequestClass { kNormal, kRealtime };
// Process-wide; set once by the executable before it starts its threads.
void set_request_class(RequestClass request);
RequestClass request_class();
// Puts the calling thread in request_class(): real-time at kRequestThreadPriority, or
// interactive in the kernel's default slice.
Status enter_request_class();

// The calling thread's policy: true when it runs in the background (SCHED_BATCH).
bool this_thread_runs_in_background();
// True when it runs in the real-time class (SCHED_FIFO).
bool this_thread_runs_in_realtime();
// True when it runs in the idle class (SCHED_IDLE).
bool this_thread_runs_when_idle();

// The calling thread's slice as the kernel reports it; nullopt when it reports none (kernels
// before 6.12).
std::optional<std::chrono::microseconds> this_thread_slice();

// The calling thread's CPU time so far in seconds (CLOCK_THREAD_CPUTIME_ID); nullopt if the
// clock cannot be read.
std::optional<double> this_thread_cpu_seconds();

// Names the calling thread (at most 15 characters are kept), as `top -H` and /proc show it.
void name_this_thread(const char* name);

// What each of alloxd's background threads does first: names itself and enters the background
// class (SCHED_BATCH). A class the kernel refuses leaves the thread in the one it inherited
// (still correct, only less deferential) and is logged once per process, not once per thread.
void become_background_thread(const char* name);

}  // namespace allox
