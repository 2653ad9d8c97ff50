// `kubesim replay` (and `allox replay`, which runs it): a whole fake cluster on one machine, sped
// up, with the real alloxd against it (replay_command.cc says what it starts and prints).
#pragma once

#include <CLI/CLI.hpp>

namespace allox::cli {

// Adds the subcommand `replay` to `app`.
void add_replay_command(CLI::App& app);

}  // namespace allox::cli
