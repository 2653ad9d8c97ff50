// The options of `allox simulate`: their names, help texts, defaults and the checks CLI11 runs on
// their text (numbers at the edge, names from fixed lists, which options exclude which). Checks
// that need several options at once are in inputs.h and rules.h.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/simulate/args.h"

namespace allox::cli {

// Defines every option on `command`, writing into `args`, which must outlive the parse.
void add_simulate_options(CLI::App& command, SimulateArgs& args);

}  // namespace allox::cli
