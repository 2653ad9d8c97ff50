#include "extender/emulator/cluster_threads.h"

#include <atomic>

#include "extender/thread_priority.h"

namespace allox::emulator {

namespace {
std::atomic<ClusterThreads> g_cluster_threads{ClusterThreads::kNormal};
std::atomic<SchedulingThread> g_scheduling_thread{SchedulingThread::kNormal};
}  // namespace

void set_cluster_threads(ClusterThreads threads) {
  g_cluster_threads.store(threads);
}

ClusterThreads cluster_threads() {
  return g_cluster_threads.load();
}

void become_cluster_thread(const char* name) {
  extender::name_this_thread(name);
  if (cluster_threads() == ClusterThreads::kIdle) (void)extender::run_this_thread_when_idle();
}

void set_scheduling_thread(SchedulingThread thread) {
  g_scheduling_thread.store(thread);
}

SchedulingThread scheduling_thread() {
  return g_scheduling_thread.load();
}

Status become_scheduling_thread(const char* name) {
  extender::name_this_thread(name);
  if (scheduling_thread() == SchedulingThread::kRealtime) {
    return extender::run_this_thread_in_realtime();
  }
  return OkStatus();
}

}  // namespace allox::emulator
