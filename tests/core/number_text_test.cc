// core/number_text.h: one finite number, the whole text, nothing else.
#include "core/number_text.h"

#include <gtest/gtest.h>

namespace allox {
namespace {

TEST(NumberTextTest, ReadsPlainAndExponentForms) {
  EXPECT_EQ(2.5, parse_finite_number("2.5"));
  EXPECT_EQ(1000.0, parse_finite_number("1e3"));
  EXPECT_EQ(-4.0, parse_finite_number("-4"));
  EXPECT_EQ(0.0, parse_finite_number("0"));
}

TEST(NumberTextTest, RefusesAnythingButOneFiniteNumber) {
  for (const char* bad : {"", " 1", "1 ", "+1", "1x", "inf", "nan", "1e999", "0x10", "1,5"}) {
    EXPECT_FALSE(parse_finite_number(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace allox
