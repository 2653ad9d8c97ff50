// The `allox` subcommands. Each lives in cli/<name>_command.cc and registers itself on the app;
// it parses arguments, calls library code, and renders the result. No scheduling logic here.
#pragma once

#include <CLI/CLI.hpp>

namespace allox::cli {

void add_report_command(CLI::App& app);
void add_validate_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_solve_command(CLI::App& app);
void add_simulate_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_replay_command(CLI::App& app);

}  // namespace allox::cli
