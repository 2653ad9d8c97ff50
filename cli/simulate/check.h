// How `allox simulate` stops on an error: the message on stderr after the command's name, exit
// status 1 (cli/exit.h).
#pragma once

#include <iostream>
#include <utility>

#include "cli/exit.h"
#include "core/result.h"

namespace allox::cli {

inline void check(const Status& s) {
  if (!s.ok()) {
    std::cerr << "allox simulate: " << s.message() << "\n";
    fail();
  }
}

// The value, or the error reported as above.
template <class T>
T check(Expected<T> e) {
  if (!e.ok()) {
    std::cerr << "allox simulate: " << e.message() << "\n";
    fail();
  }
  return std::move(*e);
}

}  // namespace allox::cli
