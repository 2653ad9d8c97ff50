// allox simulate: replays a trace against one policy, a list, or all of them, and writes
// summary.json / jobs.csv / plots. A thin shell over sim/ (experiment.h, report.h, plots.h); its
// pieces are in cli/simulate/: the options, the inputs they name, the rules they resolve to, the
// runs, what the runs write and the sweeps after them.
#include <iostream>
#include <memory>
#include <vector>

#include "cli/commands.h"
#include "cli/simulate/args.h"
#include "cli/simulate/check.h"
#include "cli/simulate/inputs.h"
#include "cli/simulate/options.h"
#include "cli/simulate/outputs.h"
#include "cli/simulate/rules.h"
#include "cli/simulate/runs.h"
#include "cli/simulate/sweeps.h"
#include "core/output_file.h"
#include "sim/report.h"
#include "sim/trace_file.h"

namespace allox::cli {
namespace {

void simulate(const SimulateArgs& a) {
  check(check_option_pairs(a));
  const Trace trace = check(load_trace(a));
  const Cluster cluster = check(load_cluster(a));
  // A job no machine can run would stay queued for ever: 0 of N completed, exit status 0.
  check(check_trace_runnable(trace, cluster));
  check(check_sweep_gpus(a, cluster));
  if (!a.save_trace.empty()) {
    check(write_output_file(a.save_trace, [&](std::ostream& o) { write_csv_trace(trace, o); }));
  }
  const RunSettings settings = check(resolve_rules(a, trace));
  const std::vector<RunSpec> specs = check(expand_policies(a.policy, a.alpha));

  std::cout << settings_line(a, trace, cluster, settings) << "\n";
  const std::vector<Run> runs = run_with_progress(a, trace, cluster, specs, settings);
  write_comparison_table(summaries_of(runs), std::cout);
  write_runs(a, trace, cluster, runs);

  sweep_alpha(a, trace, cluster, specs, settings);
  sweep_estimate_error(a, trace, cluster, specs, settings);
  sweep_gpus(a, trace, cluster, specs, settings);
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "simulate",
      "Replay a job trace on a cluster under one or more scheduling policies (event-driven; "
      "decisions use estimated times, completions true times) and report JCT and fairness.");
  auto args = std::make_shared<SimulateArgs>();
  add_simulate_options(*cmd, *args);
  cmd->callback([args] { simulate(*args); });
}

}  // namespace allox::cli
