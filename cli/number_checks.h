// Validators for the commands' numeric options. CLI11 runs them on the option's text before
// converting it and prefixes the option's name to the message, so every rejected value reads
// "--gpus: must be a whole number >= 0, got '-5'" and the command exits non-zero. NaN is never
// a number here; infinity only where the validator says so.
#pragma once

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>

#include "core/csv.h"

namespace allox::cli {

namespace number_checks_detail {

inline std::optional<double> parse_number(const std::string& text, bool whole) {
  double v = 0;
  const char* end = text.data() + text.size();
  // from_chars rejects a leading '+'; people write it.
  const char* begin = text.data() + (!text.empty() && text[0] == '+' ? 1 : 0);
  auto [ptr, ec] = std::from_chars(begin, end, v);
  if (ec != std::errc() || ptr != end || begin == end || std::isnan(v)) return std::nullopt;
  if (whole && (std::isinf(v) || v != std::floor(v))) return std::nullopt;
  return v;
}

inline CLI::Validator bounded(double low, bool low_open, double high, bool high_open, bool whole,
                              bool allow_infinity, const std::string& need) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const std::optional<double> v = parse_number(text, whole);
        const bool in_range = v && (low_open ? *v > low : *v >= low) &&
                              (high_open ? *v < high : *v <= high) &&
                              (allow_infinity || !std::isinf(*v));
        return in_range ? std::string() : "must be " + need + ", got '" + text + "'";
      },
      need);
}

}  // namespace number_checks_detail

// A whole number >= min (counts: machines, jobs, threads, users).
inline CLI::Validator whole_at_least(long long min) {
  return number_checks_detail::bounded(static_cast<double>(min), false, INFINITY, true, true,
                                       false, "a whole number >= " + std::to_string(min));
}

// A whole number in min..max (counts with a bound: synthetic jobs and users).
inline CLI::Validator whole_in(long long min, long long max) {
  return number_checks_detail::bounded(static_cast<double>(min), false, static_cast<double>(max),
                                       false, true, false,
                                       "a whole number in " + std::to_string(min) + ".." +
                                           std::to_string(max));
}

// A finite number > min (seconds, rates), or >= min when `inclusive`.
inline CLI::Validator number_above(double min, bool inclusive = false) {
  return number_checks_detail::bounded(min, !inclusive, INFINITY, true, false, false,
                                       std::string("a number ") + (inclusive ? ">= " : "> ") +
                                           csv_number(min));
}

// A number > min, or "inf".
inline CLI::Validator number_above_or_inf(double min) {
  return number_checks_detail::bounded(min, true, INFINITY, false, false, true,
                                       "a number > " + csv_number(min) + " or inf");
}

// A number in (low, high] (α), or [low, high) with `low_closed_high_open`.
inline CLI::Validator number_in(double low, double high, bool low_closed_high_open = false) {
  const std::string need = low_closed_high_open
                               ? "a number in [" + csv_number(low) + ", " + csv_number(high) + ")"
                               : "a number in (" + csv_number(low) + ", " + csv_number(high) + "]";
  return number_checks_detail::bounded(low, !low_closed_high_open, high, low_closed_high_open,
                                       false, false, need);
}

}  // namespace allox::cli
