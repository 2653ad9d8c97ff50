// Reads a user-supplied input file (cluster, jobs, trace, config) into memory, refusing files
// over a size limit before reading them, so a mistaken 100 MB argument costs nothing.
#pragma once

#include <cstddef>
#include <string>

#include "core/result.h"

namespace allox {

// Large enough for a 100,000-job trace, small enough to parse comfortably.
inline constexpr std::size_t kMaxInputBytes = 32u << 20;

// The whole file. Errors name the path: missing, unreadable, a directory, or over `limit` bytes.
// A pipe with a writer is read to its end; a FIFO without one is refused at once, never waited on.
Expected<std::string> read_input_file(const std::string& path, std::size_t limit = kMaxInputBytes);

// The same for a file a service reads at start-up (its config, a token file): only a regular file
// (or a symlink to one) is read. A FIFO, device or socket is refused without waiting for a writer,
// so a wrong path can never block start-up; /dev/null is refused rather than read as empty.
Expected<std::string> read_regular_file(const std::string& path,
                                        std::size_t limit = kMaxInputBytes);

}  // namespace allox
