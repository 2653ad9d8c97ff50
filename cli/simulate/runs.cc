#include "cli/simulate/runs.h"

#include <unistd.h>

#include "cli/simulate/check.h"
#include "cli/simulate/progress_bar.h"

namespace allox::cli {

std::vector<Run> run_with_progress(const SimulateArgs& a, const Trace& trace,
                                   const Cluster& cluster, const std::vector<RunSpec>& specs,
                                   const RunSettings& settings) {
  const bool show = !a.no_progress && (a.progress || isatty(STDERR_FILENO));
  // Asked for with --progress, it shows at once; on a terminal, only for runs that take a while.
  ProgressBar bar(show, specs, a.progress ? 0.0 : 2.0);
  std::vector<Run> runs = check(run_all(trace, cluster, specs, settings.policy, settings.sim,
                                        a.threads, [&](std::size_t i) { return bar.callback(i); }));
  bar.finish();
  return runs;
}

std::vector<SimSummary> summaries_of(const std::vector<Run>& runs) {
  std::vector<SimSummary> s;
  for (const Run& r : runs) s.push_back(r.summary);
  return s;
}

}  // namespace allox::cli
