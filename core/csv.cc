#include "core/csv.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace allox {

Expected<std::vector<std::string>> split_csv_record(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  // Blanks outside quotes at a field's ends are layout, not content: `kept` is the field's length
  // up to its last quoted or non-blank character, and a field is cut to it when it ends.
  std::size_t kept = 0;
  const auto is_blank = [](char c) { return c == ' ' || c == '\t'; };
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    std::string& field = fields.back();
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
      kept = field.size();
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      field.resize(kept);
      fields.emplace_back();
      kept = 0;
    } else if (is_blank(c)) {
      if (!field.empty()) field += c;
    } else if (c != '\r') {
      field += c;
      kept = field.size();
    }
  }
  if (quoted) return Error{"unterminated quote"};
  fields.back().resize(kept);
  return fields;
}

std::string csv_field(const std::string& text) {
  const bool blank_end = !text.empty() && (text.front() == ' ' || text.front() == '\t' ||
                                           text.back() == ' ' || text.back() == '\t');
  if (!blank_end && text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::optional<double> parse_decimal(const std::string& text) {
  if (text.empty()) return std::nullopt;
  for (char c : text) {
    const bool allowed =
        (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E';
    if (!allowed) return std::nullopt;
  }
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::string csv_number(double value) {
  // Six digits print most values as people write them; more only when needed to read back.
  // to_chars(general, p) writes what printf("%.*g") and an ostream at setprecision(p) write,
  // without a locale or a stream per digit count (this runs for every number of every report).
  char text[40];
  for (int digits = 6; digits < 17; ++digits) {
    const auto written =
        std::to_chars(text, text + sizeof text, value, std::chars_format::general, digits);
    double back = 0;
    // An out-of-range neighbour of DBL_MAX leaves `back` unset: just "not yet".
    const auto read = std::from_chars(text, written.ptr, back);
    if (read.ec == std::errc() && back == value) return std::string(text, written.ptr);
  }
  const auto written =
      std::to_chars(text, text + sizeof text, value, std::chars_format::general, 17);
  return std::string(text, written.ptr);
}

}  // namespace allox
