#include "matcher/online.h"

#include <algorithm>

namespace allox::matcher {

OnlineDecision online_decision(const MatchingProblem& problem, const Schedule& plan) {
  OnlineDecision decision;
  decision.objective = plan.objective;
  decision.estimated_start.reserve(plan.assignments.size());
  for (const Assignment& a : plan.assignments) {
    decision.estimated_start.push_back(a.start);
    if (a.position == 1 && is_idle(problem, a.machine))
      decision.start_now.push_back({a.job, a.machine});
  }
  std::sort(decision.start_now.begin(), decision.start_now.end(),
            [](const StartNow& x, const StartNow& y) { return x.machine < y.machine; });
  return decision;
}

Expected<OnlineDecision> decide_online(const MatchingProblem& problem,
                                       const SolveOptions& options) {
  Expected<Schedule> plan = solve(problem, options);
  if (!plan.ok()) return plan.error();
  return online_decision(problem, *plan);
}

}  // namespace allox::matcher
