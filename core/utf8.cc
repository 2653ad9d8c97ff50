#include "core/utf8.h"

namespace allox {

bool is_utf8_text(std::string_view text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && byte != '\t') || byte == 0x7f) return false;
  }
  return valid_utf8(text);
}

}  // namespace allox
