#include "core/number_text.h"

#include <charconv>
#include <cmath>

namespace allox {

std::optional<double> parse_finite_number(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

}  // namespace allox
