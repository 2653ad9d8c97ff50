// Numbers read from text that tenants and operators write (annotations, quantities): the whole
// text must be one finite number in plain or exponent form ("2.5", "1e3"); nothing else passes.
//
// Thread-safe: a pure function.
#pragma once

#include <optional>
#include <string_view>

namespace allox {

// The number `text` spells, or nullopt for anything else: empty, trailing bytes, a leading '+',
// whitespace, "inf", "nan", or a value that overflows a double.
std::optional<double> parse_finite_number(std::string_view text);

}  // namespace allox
