// allox-bench: alloxd, the kube-scheduler emulator and the matcher measured (bench_command.h).
// Its own binary so that neither alloxd nor allox links the emulator; `allox bench` runs it.
#include <CLI/CLI.hpp>

#include "bench/bench_command.h"

int main(int argc, char** argv) {
  CLI::App app{"allox-bench: benchmarks that print a table of measured figures"};
  app.require_subcommand(1);
  allox::cli::add_bench_commands(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
