// GLPK's environment (its memory pool and terminal hooks) is per thread: the first GLPK call on
// a thread creates it, and only glp_free_env() on that thread frees it. A thread that calls
// GLPK and then ends (the simulator's one thread per policy) would leave it behind, about 5 KB
// each. Call this before a thread's first GLPK call: the environment goes with the thread.
//
// Thread-safe: acts on the calling thread only.
#pragma once

#include <glpk.h>

namespace allox::matcher {

inline void glpk_env_ends_with_thread() {
  struct Guard {
    ~Guard() { glp_free_env(); }
  };
  thread_local Guard guard;
  (void)guard;  // odr-use: constructed on the thread's first call, destroyed at its end
}

}  // namespace allox::matcher
