#include "kubesim/cluster_threads.h"

#include <atomic>

#include "core/thread_priority.h"

namespace allox::emulator {

namespace {
std::atomic<ClusterThreads> g_cluster_threads{ClusterThreads::kNormal};
}  // namespace

void set_cluster_threads(ClusterThreads threads) {
  g_cluster_threads.store(threads);
}

ClusterThreads cluster_threads() {
  return g_cluster_threads.load();
}

void become_cluster_thread(const char* name) {
  allox::name_this_thread(name);
  if (cluster_threads() == ClusterThreads::kIdle) (void)allox::run_this_thread_when_idle();
}

void become_scheduling_thread(const char* name) {
  allox::name_this_thread(name);
}

}  // namespace allox::emulator
