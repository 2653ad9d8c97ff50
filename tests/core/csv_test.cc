// core/csv.h: the one CSV splitter, quoting and number format every CSV reader and writer uses.
#include "core/csv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace allox {
namespace {

TEST(CsvTest, SplitsPlainAndQuotedFields) {
  struct Case {
    std::string line;
    std::vector<std::string> fields;
  };
  const Case cases[] = {
      {"", {""}},
      {"a", {"a"}},
      {"a,b,,c", {"a", "b", "", "c"}},
      {"a,", {"a", ""}},
      {R"("x,y",z)", {"x,y", "z"}},
      {R"("say ""hi""",2)", {R"(say "hi")", "2"}},
      {"a,b\r", {"a", "b"}},
      {R"(1,"",3)", {"1", "", "3"}},
      {" a , b\t,\tc d ", {"a", "b", "c d"}},
      {R"( " a " , "" ,x)", {" a ", "", "x"}},
  };
  for (const Case& c : cases) {
    auto fields = split_csv_record(c.line);
    ASSERT_TRUE(fields.ok()) << c.line;
    EXPECT_EQ(c.fields, *fields) << c.line;
  }
}

TEST(CsvTest, UnterminatedQuoteIsAnError) {
  auto fields = split_csv_record(R"(a,"b,c)");
  ASSERT_FALSE(fields.ok());
  EXPECT_EQ("unterminated quote", fields.message());
}

// What csv_field writes, split_csv_record reads back, for any text without a newline.
TEST(CsvTest, QuotedFieldsRoundTrip) {
  std::mt19937 rng(7);
  const std::string alphabet = "ab,\" \r\t1";
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<std::string> fields(1 + rng() % 4);
    std::string line;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      for (std::size_t n = rng() % 6; n > 0; --n) fields[i] += alphabet[rng() % alphabet.size()];
      line += (i ? "," : "") + csv_field(fields[i]);
    }
    auto back = split_csv_record(line);
    ASSERT_TRUE(back.ok()) << line;
    EXPECT_EQ(fields, *back) << line;
  }
  EXPECT_EQ("plain", csv_field("plain"));
  EXPECT_EQ(R"("a,b")", csv_field("a,b"));
  EXPECT_EQ(R"(" a")", csv_field(" a"));
  EXPECT_EQ("\"a\t\"", csv_field("a\t"));
  EXPECT_EQ("a b", csv_field("a b"));
}

// The one number syntax of allox's text inputs: plain decimals only.
TEST(CsvTest, ParseDecimalTakesPlainFiniteDecimalsOnly) {
  EXPECT_EQ(3.0, parse_decimal("3"));
  EXPECT_EQ(-0.5, parse_decimal("-0.5"));
  EXPECT_EQ(1e20, parse_decimal("1e+20"));
  EXPECT_EQ(0.25, parse_decimal("+.25"));
  for (const char* bad : {"", " 3", "3 ", "0x10", "inf", "nan", "1e999", "3s", "1,5", "--1"}) {
    EXPECT_FALSE(parse_decimal(bad).has_value()) << bad;
  }
}

TEST(CsvTest, NumbersAreShortAndReadBackExactly) {
  EXPECT_EQ("0.1", csv_number(0.1));
  EXPECT_EQ("1800", csv_number(1800));
  EXPECT_EQ("-2.5", csv_number(-2.5));
  EXPECT_EQ("1e+20", csv_number(1e20));
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> any(-1e6, 1e6);
  for (int trial = 0; trial < 1000; ++trial) {
    const double x = any(rng);
    EXPECT_EQ(x, std::stod(csv_number(x))) << csv_number(x);
    EXPECT_EQ(x, parse_decimal(csv_number(x))) << "what allox writes it reads back";
  }
  EXPECT_EQ(std::numeric_limits<double>::max(),
            std::stod(csv_number(std::numeric_limits<double>::max())));
}

// csv_number once printed through an ostream at growing precision; reports and goldens keep
// those exact bytes. The reference below is that implementation.
TEST(CsvTest, NumbersPrintAsTheStreamPrintedThem) {
  auto stream_number = [](double value) {
    for (int digits = 6; digits < 17; ++digits) {
      std::ostringstream shorter;
      shorter << std::setprecision(digits) << value;
      if (std::strtod(shorter.str().c_str(), nullptr) == value) return shorter.str();
    }
    std::ostringstream out;
    out << std::setprecision(17) << value;
    return out.str();
  };
  std::vector<double> values = {0,
                                -0.0,
                                1,
                                0.1,
                                1.0 / 3,
                                2.0 / 3,
                                1e-7,
                                123456.5,
                                1234567,
                                1e15,
                                1e16,
                                1e17,
                                5e-324,
                                std::numeric_limits<double>::min(),
                                std::numeric_limits<double>::max(),
                                std::numeric_limits<double>::lowest(),
                                std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity()};
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> exponent(-300, 300), mantissa(-10, 10);
  std::uniform_int_distribution<int> whole(0, 1000000);
  for (int trial = 0; trial < 5000; ++trial) {
    values.push_back(mantissa(rng) * std::pow(10.0, exponent(rng)));
    values.push_back(whole(rng) / 100.0);  // money-like and time-like values
  }
  for (double x : values) EXPECT_EQ(stream_number(x), csv_number(x)) << x;
  EXPECT_EQ(stream_number(std::nan("")), csv_number(std::nan("")));
}

}  // namespace
}  // namespace allox
