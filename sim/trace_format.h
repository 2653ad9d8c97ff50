// Which of allox's trace formats a file is in, for inputs whose name does not say (a pipe,
// /dev/stdin, a file without an extension): sim/allox_trace.h's AlloX format opens with
// "# <index>" and then "1 <job id> 1 <arrival> <user>"; sim/trace_file.h's CSV opens (after
// comment lines) with a header naming a `job` column; anything else is YAML or JSON. Each test
// reads at most the text's first lines.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "sim/allox_trace.h"
#include "sim/trace.h"

namespace allox {

enum class TraceFormat { kAllox, kYaml, kCsv };

// By the file name: .csv, .yaml/.yml/.json, .txt (AlloX); nullopt for any other.
std::optional<TraceFormat> trace_format_from_name(const std::string& path);

bool looks_like_allox_trace(std::string_view text);
bool looks_like_csv_trace(std::string_view text);

// By the name, else by the opening lines: AlloX, CSV, else YAML.
TraceFormat trace_format_of(const std::string& path, std::string_view text);

// Reads the trace at `path` once (core/input_file.h's limits; a pipe works), in `format` or, when
// none is given, in trace_format_of()'s. `options` apply to the AlloX format.
Expected<Trace> load_trace(const std::string& path, std::optional<TraceFormat> format,
                           const AlloxTraceOptions& options = {});

}  // namespace allox
