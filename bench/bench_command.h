// The benchmarks of `allox-bench` (and `allox bench`, which runs it): `cluster` (alloxd against
// kube-scheduler's emulator at scale), `unseen` (pods alloxd has not seen) and `matcher`. Each
// prints a table of measured figures; none is a test.
#pragma once

#include <CLI/CLI.hpp>

namespace allox::cli {

// Adds the subcommands cluster, unseen and matcher to `app`.
void add_bench_commands(CLI::App& app);

}  // namespace allox::cli
