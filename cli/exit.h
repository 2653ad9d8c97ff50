// How subcommands end: CLI11 turns a thrown CLI::RuntimeError into the process exit code after
// the callback returns, so commands report failure without calling exit() themselves.
#pragma once

#include <CLI/CLI.hpp>

#include <iostream>
#include <string_view>
#include <utility>

#include "core/result.h"

namespace allox::cli {

// Exit status 1 (input rejected or run failed); the message is already on stderr.
[[noreturn]] inline void fail() {
  throw CLI::RuntimeError(1);
}

// The value, or the error on stderr after the command's name ("allox plan: <message>") and
// exit status 1.
template <class T>
T value_or_fail(Expected<T> e, std::string_view command) {
  if (!e.ok()) {
    std::cerr << command << ": " << e.message() << "\n";
    fail();
  }
  return std::move(*e);
}

}  // namespace allox::cli
