#include "core/csv.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace allox {

Expected<std::vector<std::string>> split_csv_record(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  if (quoted) return Error{"unterminated quote"};
  return fields;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
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
