// allox: command-line front end to the allox libraries (see cli/commands.h).
#include <CLI/CLI.hpp>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"allox: scheduling for clusters with interchangeable CPUs, GPUs and accelerators"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "allox 0.1.0");
  allox::cli::add_report_command(app);
  allox::cli::add_validate_command(app);
  allox::cli::add_bench_command(app);
  allox::cli::add_solve_command(app);
  allox::cli::add_simulate_command(app);
  allox::cli::add_plan_command(app);
  allox::cli::add_replay_command(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
