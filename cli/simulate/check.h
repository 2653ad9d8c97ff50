// How `allox simulate` stops on an error: the message on stderr after the command's name, exit
// status 1 (cli/exit.h).
#pragma once

#include <utility>

#include "cli/exit.h"
#include "core/result.h"

namespace allox::cli {

inline void check(const Status& s) {
  value_or_fail(s, "allox simulate");
}

// The value, or the error reported as above.
template <class T>
T check(Expected<T> e) {
  return value_or_fail(std::move(e), "allox simulate");
}

}  // namespace allox::cli
