// How subcommands end: CLI11 turns a thrown CLI::RuntimeError into the process exit code after
// the callback returns, so commands report failure without calling exit() themselves.
#pragma once

#include <CLI/CLI.hpp>

namespace allox::cli {

// Exit status 1 (input rejected or run failed); the message is already on stderr.
[[noreturn]] inline void fail() {
  throw CLI::RuntimeError(1);
}

}  // namespace allox::cli
