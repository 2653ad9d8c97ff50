// Names read from user files (jobs, users, machines) end up in JSON outputs and terminals, so
// they must be text: valid UTF-8 (a JSON writer refuses anything else) and free of control
// characters, which would rewrite a terminal line or split a CSV record.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace allox {

// True for valid UTF-8 (shortest forms, no surrogates, at most U+10FFFF) holding no C0 control
// character other than tab, and no DEL.
bool is_utf8_text(std::string_view text);

// Whether `text` is well-formed UTF-8 as RFC 3629 defines it.
inline bool valid_utf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p != end) {
    // ASCII, 8 bytes at a time: the common case for names and reasons.
    while (end - p >= 8) {
      std::uint64_t word;
      std::memcpy(&word, p, sizeof word);
      if ((word & 0x8080808080808080ULL) != 0) break;
      p += 8;
    }
    if (p == end) return true;
    const unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int tail = 0;
    unsigned char low = 0x80, high = 0xBF;  // the range of the byte after the lead
    if (c >= 0xC2 && c <= 0xDF) {
      tail = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      tail = 2;
      if (c == 0xE0) low = 0xA0;   // overlong
      if (c == 0xED) high = 0x9F;  // U+D800..U+DFFF, surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      tail = 3;
      if (c == 0xF0) low = 0x90;   // overlong
      if (c == 0xF4) high = 0x8F;  // past U+10FFFF
    } else {
      return false;
    }
    if (end - p <= tail) return false;
    if (p[1] < low || p[1] > high) return false;
    for (int i = 2; i <= tail; ++i) {
      if (p[i] < 0x80 || p[i] > 0xBF) return false;
    }
    p += tail + 1;
  }
  return true;
}


}  // namespace allox
