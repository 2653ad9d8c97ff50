#include "kubesim/json_equal.h"

#include <algorithm>

namespace allox::emulator {

bool equal_except(const nlohmann::json& a, const nlohmann::json& b,
                  std::initializer_list<std::string_view> skip) {
  if (!a.is_object() || !b.is_object()) return a == b;
  auto skipped = [&](const std::string& key) {
    return std::find(skip.begin(), skip.end(), key) != skip.end();
  };
  // Objects iterate in key order (a std::map), so one walk of both compares member by member.
  auto ia = a.begin(), ib = b.begin();
  while (true) {
    while (ia != a.end() && skipped(ia.key())) ++ia;
    while (ib != b.end() && skipped(ib.key())) ++ib;
    if (ia == a.end() || ib == b.end()) return ia == a.end() && ib == b.end();
    if (ia.key() != ib.key() || *ia != *ib) return false;
    ++ia;
    ++ib;
  }
}

}  // namespace allox::emulator
