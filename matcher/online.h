// Online use of the matcher for the simulator and the extender (docs/design.md,
// "Matcher").
//
// At every event (arrival, completion, new estimate) the caller re-plans the queue it wants
// matched — all of it, or the jobs of the users a fairness round admits — and starts only the
// jobs planned first on an idle machine. The rest of the plan is advisory: an estimated start time
// for every job, which the extender shows to people and the simulator logs.
//
// Cost: one solve() (see matcher.h). A caller that re-plans at every event should keep one
// PriceMemory and pass it in SolveOptions::memory: re-planning 1,000 queued jobs after one
// arrival then takes ~5 ms instead of ~18 ms (docs/results.md); answers are the same.
// Thread-safety: as solve(); a PriceMemory is used by one caller at a time.
#pragma once

#include <cstddef>
#include <vector>

#include "core/result.h"
#include "matcher/matcher.h"

namespace allox::matcher {

struct StartNow {
  std::size_t job = 0;      // index into MatchingProblem::jobs
  std::size_t machine = 0;  // index into MatchingProblem::machines; an idle machine
};

struct OnlineDecision {
  std::vector<StartNow> start_now;      // at most one job per idle machine, ordered by machine
  std::vector<double> estimated_start;  // per job (absolute seconds); now for jobs in start_now
  double objective = 0;                 // planned Σ (finish − now) of the given jobs, seconds
};

// Plans `problem` exactly and returns the jobs to start now. Errors as solve().
Expected<OnlineDecision> decide_online(const MatchingProblem& problem,
                                       const SolveOptions& options = {});

// The same projection of a plan already computed for `problem`.
OnlineDecision online_decision(const MatchingProblem& problem, const Schedule& plan);

}  // namespace allox::matcher
