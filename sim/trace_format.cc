#include "sim/trace_format.h"

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <sstream>
#include <utility>
#include <vector>

#include "core/input_file.h"
#include "sim/trace_file.h"

namespace allox {
namespace {

// The first two lines that are not blank (nor comments, when `skip_comments`), without leading
// blanks; empty when the text has fewer.
std::pair<std::string_view, std::string_view> first_lines(std::string_view text,
                                                          bool skip_comments) {
  std::string_view found[2];
  std::size_t count = 0;
  while (count < 2 && !text.empty()) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    const std::size_t start = line.find_first_not_of(" \t\r");
    if (start == std::string_view::npos) continue;
    line.remove_prefix(start);
    if (skip_comments && line.front() == '#') continue;
    found[count++] = line;
  }
  return {found[0], found[1]};
}

}  // namespace

// AlloX's format opens with "# <index>" and then "1 <job id> 1 <arrival> <user>".
bool looks_like_allox_trace(std::string_view text) {
  const auto [index, header] = first_lines(text, false);
  if (index.size() < 2 || index.front() != '#') return false;
  const std::size_t digits = index.find_first_not_of(" \t", 1);
  if (digits == std::string_view::npos ||
      index.find_first_not_of("0123456789 \t\r", digits) != std::string_view::npos) {
    return false;
  }
  std::istringstream words{std::string(header)};
  const std::vector<std::string> fields{std::istream_iterator<std::string>(words), {}};
  return fields.size() == 5 && fields[0] == "1";
}

// allox's CSV opens (after comments) with a header that names a job column.
bool looks_like_csv_trace(std::string_view text) {
  std::string_view header = first_lines(text, true).first;
  if (header.find(',') == std::string_view::npos) return false;  // a job and a time column
  while (!header.empty()) {
    const std::size_t comma = std::min(header.find(','), header.size());
    std::string_view column = header.substr(0, comma);
    header.remove_prefix(std::min(comma + 1, header.size()));
    const std::size_t begin = column.find_first_not_of(" \t\r\"");
    if (begin == std::string_view::npos) continue;
    column = column.substr(begin, column.find_last_not_of(" \t\r\"") - begin + 1);
    if (column == "job") return true;
  }
  return false;
}

std::optional<TraceFormat> trace_format_from_name(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".csv") return TraceFormat::kCsv;
  if (ext == ".yaml" || ext == ".yml" || ext == ".json") return TraceFormat::kYaml;
  if (ext == ".txt") return TraceFormat::kAllox;
  return std::nullopt;
}

TraceFormat trace_format_of(const std::string& path, std::string_view text) {
  if (const std::optional<TraceFormat> named = trace_format_from_name(path)) return *named;
  if (looks_like_allox_trace(text)) return TraceFormat::kAllox;
  if (looks_like_csv_trace(text)) return TraceFormat::kCsv;
  return TraceFormat::kYaml;
}

Expected<Trace> load_trace(const std::string& path, std::optional<TraceFormat> format,
                           const AlloxTraceOptions& options) {
  auto text = read_input_file(path);
  if (!text) return text.error();
  switch (format.value_or(trace_format_of(path, *text))) {
    case TraceFormat::kAllox: {
      std::istringstream in(std::move(*text));
      return parse_allox_trace(in, path, options);
    }
    case TraceFormat::kCsv:
      return parse_csv_trace(*text, path);
    case TraceFormat::kYaml:
      break;
  }
  return parse_yaml_trace(*text, path);
}

}  // namespace allox
