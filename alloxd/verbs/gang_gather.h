// Where the /bind calls of one gang's members meet (docs/design.md, "Gangs"): the all-or-nothing
// step kube-scheduler's coscheduling plugin takes in Permit, done at the extender's bind.
//
// Each member's /bind arrives and waits. When the gang's `size`-th member arrives, its thread
// runs `bind_all` for every member at once (the Bindings, the start), and each waiting member
// returns its own outcome. When `wait` passes since the gang's first member arrived with fewer
// than `size` there, the gathering ends: every waiting member returns an error and none was
// bound (kube-scheduler un-assumes each and tries it again; a later arrival starts a new
// gathering). A gathering whose bind_all runs is never timed out: its members wait for it.
//
// A waiting member holds its thread (the blocking pool's: http/blocking_pool.h) for at most
// `wait`. The pool's 16 threads are shared with the reports, so a gang of more members than
// that could never gather: the book parks such a gang (kMaxGangBoundTogether, model/pod.h) and
// its members never reach /bind. See docs/design.md, "Gangs".
//
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "extender_api/wire.h"

namespace allox::extender {

class GangGather {
 public:
  struct Member {
    std::string pod;  // namespace/name
    BindingArgs args;
  };
  // Every member's outcome, by pod: "" bound, else why not.
  using Outcomes = std::map<std::string, std::string>;
  using BindAll = std::function<Outcomes(const std::vector<Member>& members)>;

  // This member's outcome ("" bound). A member arriving again (a retry while still gathered)
  // takes its earlier arrival's place.
  std::string arrive(const std::string& gang, Member member, int size,
                     std::chrono::milliseconds wait, const BindAll& bind_all);
  // Members waiting now, over all gangs (tests, metrics).
  std::size_t waiting() const;

 private:
  struct Gathering {
    std::vector<Member> members;
    std::chrono::steady_clock::time_point deadline;
    bool binding = false;    // bind_all runs
    bool done = false;       // outcomes final
    bool timed_out = false;  // ended by the deadline, none bound
    Outcomes outcomes;
    std::size_t waiting = 0;
  };
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::shared_ptr<Gathering>> gathering_;  // by gang (job id)
};

}  // namespace allox::extender
