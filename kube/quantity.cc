#include "kube/quantity.h"

#include <string>

#include "core/number_text.h"

namespace allox::kube {

Expected<double> parse_quantity(std::string_view text) {
  struct Suffix {
    std::string_view text;
    double factor;
  };
  static constexpr Suffix kSuffixes[] = {{"Ki", 1024.0},
                                         {"Mi", 1048576.0},
                                         {"Gi", 1073741824.0},
                                         {"Ti", 1099511627776.0},
                                         {"Pi", 1125899906842624.0},
                                         {"Ei", 1152921504606846976.0},
                                         {"n", 1e-9},
                                         {"u", 1e-6},
                                         {"m", 1e-3},
                                         {"k", 1e3},
                                         {"M", 1e6},
                                         {"G", 1e9},
                                         {"T", 1e12},
                                         {"P", 1e15},
                                         {"E", 1e18}};
  if (text.empty()) return Error{"empty quantity"};
  for (const Suffix& suffix : kSuffixes) {
    if (text.size() > suffix.text.size() && text.ends_with(suffix.text)) {
      auto number = parse_finite_number(text.substr(0, text.size() - suffix.text.size()));
      if (number && *number >= 0) return *number * suffix.factor;
      break;
    }
  }
  auto number = parse_finite_number(text);  // plain or exponent form (1e3)
  if (number && *number >= 0) return *number;
  // Appended rather than `"'" + std::string(text) + ...`: g++ 12 at -O3 misreads that insert at
  // the front of a temporary as an overlapping memcpy (a false -Wrestrict, GCC bug 105651).
  std::string message = "'";
  message.append(text).append("' is not a quantity");
  return Error{message};
}

}  // namespace allox::kube
