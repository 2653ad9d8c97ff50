// The scheduling class of the emulated cluster's own threads: the fake API server's, the fake
// kubelets', the emulated kube-scheduler's binders and the bench's pollers. Not the emulated
// kube-scheduler's scheduling thread, which is the client whose /filter round trips are timed,
// and not the replay's thread that creates it (a thread started from an idle-class thread would
// inherit the class, and an unprivileged thread cannot leave it).
//
// kNormal (the default) shares the cores with alloxd as equals. kIdle runs the emulated cluster
// on what alloxd and the kube-scheduler thread leave, as an API server and kubelets on machines
// of their own would: on a 2-core machine shared at equal class, the kernel alone makes a
// loopback round trip's p99 several ms (bench/wakeup_floor.cc, docs/performance.md).
#pragma once

#include "core/result.h"

namespace allox::emulator {

enum class ClusterThreads { kNormal, kIdle };

// Process-wide; set once before the cluster's threads start (a thread reads it when it starts).
void set_cluster_threads(ClusterThreads threads);
ClusterThreads cluster_threads();

// What each of the emulated cluster's threads does first: names itself and, with kIdle, enters
// the idle class (a refusal leaves it in the class it inherited, which is still correct).
void become_cluster_thread(const char* name);

// Names the emulated kube-scheduler's scheduling thread (the /filter client). It stays in the
// normal class, as the shipped kube-scheduler's does: a benchmark whose client ran real-time
// would time a round trip no cluster sees.
void become_scheduling_thread(const char* name);

}  // namespace allox::emulator
