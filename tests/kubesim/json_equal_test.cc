// kubesim/json_equal.h: equality that leaves named members out, checked against the
// copy-erase-compare it replaces.
#include "kubesim/json_equal.h"

#include <gtest/gtest.h>

namespace allox::emulator {
namespace {

using nlohmann::json;

// The definition equal_except must agree with: erase the skipped members from copies.
bool by_copies(json a, json b, std::initializer_list<std::string_view> skip) {
  if (a.is_object() && b.is_object()) {
    for (std::string_view key : skip) {
      a.erase(std::string(key));
      b.erase(std::string(key));
    }
  }
  return a == b;
}

TEST(JsonEqualTest, AgreesWithErasingFromCopies) {
  const json base = {{"a", 1}, {"b", {{"x", "y"}}}, {"c", json::array({1, 2})}, {"z", nullptr}};
  struct Case {
    json other;
    bool want;  // equal ignoring "b" and "q"
  };
  const Case cases[] = {
      {base, true},
      {{{"a", 1}, {"c", json::array({1, 2})}, {"z", nullptr}}, true},  // a skipped one missing
      {{{"a", 1}, {"b", 7}, {"c", json::array({1, 2})}, {"z", nullptr}, {"q", 3}}, true},
      {{{"a", 2}, {"b", {{"x", "y"}}}, {"c", json::array({1, 2})}, {"z", nullptr}}, false},
      {{{"a", 1}, {"c", json::array({1, 2})}}, false},                             // z missing
      {{{"a", 1}, {"c", json::array({1, 2})}, {"z", nullptr}, {"zz", 0}}, false},  // extra member
      {{{"a", 1}, {"c", json::array({2, 1})}, {"z", nullptr}}, false},
      {{{"a", 1.0}, {"c", json::array({1, 2})}, {"z", nullptr}}, true},  // json's number equality
      {json::array({1}), false},
      {nullptr, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(equal_except(base, c.other, {"b", "q"}), c.want) << c.other.dump();
    EXPECT_EQ(equal_except(c.other, base, {"b", "q"}), c.want) << c.other.dump();
    EXPECT_EQ(equal_except(base, c.other, {"b", "q"}), by_copies(base, c.other, {"b", "q"}))
        << c.other.dump();
  }
  EXPECT_TRUE(equal_except(json::array({1}), json::array({1}), {"a"}));
  EXPECT_TRUE(equal_except(json::object(), json::object(), {}));
}

}  // namespace
}  // namespace allox::emulator
