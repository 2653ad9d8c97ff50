// CPU time of a running process and of its threads, read from /proc: what `allox bench
// cluster` reports for alloxd and for itself, so anyone can see which of alloxd's rooms (its
// threads name themselves: allox-http, allox-planner, allox-control, ...) used the cores in a
// run without attaching a profiler.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace allox::bench {

// utime + stime in clock ticks from one /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat line;
// -1 when the line is not one. The command name may hold spaces and ')': the fields are read
// after the last ')'.
long long stat_cpu_ticks(std::string_view stat_line);

// A process's CPU (all its threads, live and exited) in seconds; 0 when unreadable.
double process_cpu_seconds(int pid);

struct ThreadGroupCpu {
  double seconds = 0;  // summed over the threads of that name
  int threads = 0;
};

// The CPU of a process's live threads in seconds, summed by thread name (comm). A thread that
// has exited is in process_cpu_seconds but in no group; one that ends while this reads is
// skipped.
std::map<std::string, ThreadGroupCpu> cpu_by_thread_name(int pid);

// after - before, name by name: the groups' CPU over an interval (a name missing before counts
// from 0; one gone after is left out; a group whose threads ended in between, at least 0).
std::map<std::string, ThreadGroupCpu> cpu_between(
    const std::map<std::string, ThreadGroupCpu>& before,
    const std::map<std::string, ThreadGroupCpu>& after);

// Keeps, name by name, the larger of `seen` and `sample`. Sampled while threads come and go
// (a replay stops its scheduler and kubelets before it returns), a group keeps what it had
// used in the last sample before its threads ended.
void keep_largest(std::map<std::string, ThreadGroupCpu>& seen,
                  const std::map<std::string, ThreadGroupCpu>& sample);

}  // namespace allox::bench
