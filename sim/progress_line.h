// The one-line progress report of a command that runs several simulations: which run of how
// many is going (by label), the share of all runs done, the time spent and an estimate of the
// time left. Runs of one command replay the same trace, so they progress at comparable rates and
// the estimate is elapsed × (1 − done) / done, with done the mean of the runs' fractions.
// Pure: the caller draws it (cli/simulate_command.cc redraws it on stderr).
#pragma once

#include <string>
#include <vector>

namespace allox {

// `fractions[i]` in [0, 1] is run i's share of jobs finished; `labels[i]` names it. Names the
// lowest-numbered run still going (started and unfinished; else the next to start) and how many
// others run beside it, e.g.
//   "run 3 of 13 (sjf, +1 running) [##########          ] 25%  1m05s, about 3m15s left".
std::string progress_line(const std::vector<std::string>& labels,
                          const std::vector<double>& fractions, double elapsed_seconds);

// "42s", "1m05s", "2h03m".
std::string duration_text(double seconds);

}  // namespace allox
