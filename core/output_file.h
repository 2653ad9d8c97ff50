// Writes an output file (a run's summary.json and CSVs, figures, plans) whole, creating its
// directory, with errors that name the path: the one writer every command's outputs go through.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>

#include "core/result.h"

namespace allox {

// Creates path's directory if missing, opens `path` (truncating), lets `body` write, and checks
// the stream after closing. Errors: "cannot write <path>", "error writing <path>".
Status write_output_file(const std::filesystem::path& path,
                         const std::function<void(std::ostream&)>& body);

}  // namespace allox
