// A one-pass JSON reader: RapidJSON's SAX reader (the Debian package rapidjson-dev) driving a
// handler written against nlohmann's SAX interface (null, boolean,
// number_integer, number_unsigned, number_float, string, start_object, key, end_object,
// start_array, end_array), so the readers keep building nlohmann values where they keep any.
//
// Why not nlohmann's own sax_parse: its lexer takes one character at a time through an input
// adapter and appends each to a std::string; reading a 274 KB /filter answer of 5,000 nodes
// took 1.4 ms, most of the emulated kube-scheduler's time per call. RapidJSON scans strings and
// whitespace 16 bytes at a time (SSE2), in place in a copy of the body.
//
// What it accepts is what nlohmann's strict parser accepts: one JSON value (RFC 8259) and
// whitespace; the one exception is a number whose exponent alone is past double's range, refused
// as an overflow even when its significand is zero ("0e400", which nlohmann reads as 0).
// RapidJSON without encoding validation (its validating path scans one byte at a
// time) accepts more, so this adds what nlohmann checks: every string and key is well-formed
// UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF, which also refuses a lone
// "\uDC00" that RapidJSON would encode), and the body holds no NUL byte (RapidJSON reads NUL as
// the end of its input). Numbers come as nlohmann reports them: non-negative integers
// unsigned, negative ones signed, integers past 64 bits and the rest double, each read from its
// text by std::from_chars (exactly rounded, so a rendered double reads back the same).
//
// Used by extender_api/wire.h's one-pass readers and kube/'s watch decoder (kube/watch_event.h).
// Cost: linear in the body, one copy of it.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#if defined(__SSE2__) && !defined(RAPIDJSON_SSE2)
#define RAPIDJSON_SSE2
#endif
#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>

#include "core/utf8.h"

namespace allox::json_sax {

// RapidJSON's handler concept over a handler of nlohmann's SAX interface.
template <class Handler>
class Adapter {
 public:
  explicit Adapter(Handler& handler) : handler_(handler) {}

  bool Null() { return handler_.null(); }
  bool Bool(bool b) { return handler_.boolean(b); }
  bool Int(int i) { return Int64(i); }
  bool Uint(unsigned u) { return handler_.number_unsigned(u); }
  bool Int64(std::int64_t i) {
    return i < 0 ? handler_.number_integer(i)
                 : handler_.number_unsigned(static_cast<std::uint64_t>(i));
  }
  bool Uint64(std::uint64_t u) { return handler_.number_unsigned(u); }
  bool Double(double d) { return handler_.number_float(d, empty_); }
  // Every number comes here as its text (parse() asks for that): RapidJSON 1.1.0's own
  // full-precision conversion reads a zero significand with a large exponent wrongly ("0e55" as
  // 7.9e28, "0e-55" as 7.3e-158; it calls clz(0)). std::from_chars rounds exactly.
  bool RawNumber(const char* text, rapidjson::SizeType length, bool) {
    const char* end = text + length;
    if (std::find_if(text, end, [](char c) { return c == '.' || c == 'e' || c == 'E'; }) == end) {
      if (*text == '-') {
        std::int64_t i = 0;
        if (std::from_chars(text, end, i).ec == std::errc()) return Int64(i);
      } else {
        std::uint64_t u = 0;
        if (std::from_chars(text, end, u).ec == std::errc()) return Uint64(u);
      }
      // An integer past 64 bits reads as a double, as nlohmann reads it.
    }
    double d = 0;
    const std::from_chars_result read = std::from_chars(text, end, d);
    if (read.ec == std::errc()) return Double(d);
    // Out of range: too large is an error; too small is zero (as strtod, nlohmann and RapidJSON
    // read it). A decimal exponent below the digits' own makes it small.
    if (tiny(std::string_view(text, length))) return Double(*text == '-' ? -0.0 : 0.0);
    overflow_.assign(text, std::min<std::size_t>(length, 64));
    return false;
  }
  bool String(const char* text, rapidjson::SizeType length, bool) {
    if (!take(text, length)) return false;
    return handler_.string(scratch_);
  }
  bool Key(const char* text, rapidjson::SizeType length, bool) {
    if (!take(text, length)) return false;
    return handler_.key(scratch_);
  }
  bool StartObject() { return handler_.start_object(static_cast<std::size_t>(-1)); }
  bool EndObject(rapidjson::SizeType) { return handler_.end_object(); }
  bool StartArray() { return handler_.start_array(static_cast<std::size_t>(-1)); }
  bool EndArray(rapidjson::SizeType) { return handler_.end_array(); }

  bool bad_utf8() const { return bad_utf8_; }
  // The number too large for a double that stopped the parse; empty if none did.
  const std::string& overflow() const { return overflow_; }

 private:
  // Whether a number from_chars found out of range is below the smallest double rather than
  // above the largest: its exponent plus the place of its first non-zero digit is negative.
  static bool tiny(std::string_view number) {
    const std::size_t e = number.find_first_of("eE");
    long long exponent = 0;
    if (e != std::string_view::npos) {
      std::string_view digits = number.substr(e + 1);
      const bool negative = !digits.empty() && digits.front() == '-';
      if (!digits.empty() && (digits.front() == '-' || digits.front() == '+')) {
        digits.remove_prefix(1);
      }
      // An exponent of more than 18 digits is far past either end of a double.
      if (digits.size() > 18) return negative;
      std::from_chars(digits.data(), digits.data() + digits.size(), exponent);
      if (negative) exponent = -exponent;
    }
    const std::string_view mantissa = number.substr(0, e);
    const std::size_t point = std::min(mantissa.find('.'), mantissa.size());
    const std::size_t first = mantissa.find_first_of("123456789");
    if (first == std::string_view::npos) return true;  // zero
    // The first non-zero digit's place: 10^(point - first - 1), one less past the point.
    const long long place = first < point ? static_cast<long long>(point - first - 1)
                                          : -static_cast<long long>(first - point);
    return place + exponent < 0;
  }

  bool take(const char* text, rapidjson::SizeType length) {
    std::string_view view(text, length);
    if (!valid_utf8(view)) {
      bad_utf8_ = true;
      return false;
    }
    scratch_.assign(view);
    return true;
  }

  Handler& handler_;
  std::string scratch_;  // the string or key handed on; nlohmann's interface takes std::string&
  const std::string empty_;
  bool bad_utf8_ = false;
  std::string overflow_;
};

// What parse() saw. `error` is set (a "malformed JSON: ..." message, capped) for a body that is
// not JSON; a stop the handler asked for (returning false) leaves it empty with parsed false,
// and the handler knows why.
struct Outcome {
  bool parsed = false;
  std::string error;
};

// Reads `body` into `handler`. The handler's callbacks return false to stop.
template <class Handler>
Outcome parse(std::string_view body, Handler& handler) {
  if (const void* nul = std::memchr(body.data(), '\0', body.size()); nul != nullptr) {
    const auto at = static_cast<const char*>(nul) - body.data();
    return {false, "malformed JSON: a NUL byte at byte " + std::to_string(at)};
  }
  // nlohmann skips a leading byte order mark; so does this.
  if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);
  // NUL-terminated, and parsed in place. With SSE2 the reader loads 16 aligned bytes at a
  // time: the padding keeps the load that finds the NUL inside the allocation.
  std::string text;
  text.reserve(body.size() + 15);
  text.assign(body);
  rapidjson::InsituStringStream stream(text.data());
  Adapter<Handler> adapter(handler);
  rapidjson::Reader reader;
  constexpr unsigned kFlags = rapidjson::kParseInsituFlag | rapidjson::kParseIterativeFlag |
                              rapidjson::kParseNumbersAsStringsFlag;
  const rapidjson::ParseResult result = reader.Parse<kFlags>(stream, adapter);
  if (result) return {true, ""};
  if (adapter.bad_utf8()) {
    return {false, "malformed JSON: a string that is not UTF-8 before byte " +
                       std::to_string(result.Offset())};
  }
  if (!adapter.overflow().empty()) {  // name the number, as nlohmann did
    return {false, "malformed JSON: number overflow parsing '" + adapter.overflow() +
                       "' (at byte " + std::to_string(result.Offset()) + ")"};
  }
  if (result.Code() == rapidjson::kParseErrorTermination) return {false, ""};
  if (result.Code() == rapidjson::kParseErrorNumberTooBig) {  // name the number, as nlohmann did
    std::string_view number = body.substr(std::min(result.Offset(), body.size()));
    number =
        number.substr(0, std::min<std::size_t>(64, number.find_first_not_of("+-0123456789.eE")));
    return {false, "malformed JSON: number overflow parsing '" + std::string(number) +
                       "' (at byte " + std::to_string(result.Offset()) + ")"};
  }
  return {false, std::string("malformed JSON: ") + rapidjson::GetParseError_En(result.Code()) +
                     " (at byte " + std::to_string(result.Offset()) + ")"};
}

}  // namespace allox::json_sax
