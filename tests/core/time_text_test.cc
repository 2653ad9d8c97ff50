// core/time_text.h: the texts Kubernetes reads (metav1.Time, MicroTime) and the clock label,
// against instants whose calendar date the test states itself.
#include "core/time_text.h"

#include <gtest/gtest.h>

#include <chrono>

namespace allox {
namespace {

using namespace std::chrono;

// 2026-11-22T21:10:00Z: 20,779 days after the epoch (56 years, 14 of them leap), plus 21 h 10 min.
constexpr long long kInstant = 20779LL * 86400 + 21 * 3600 + 10 * 60;

TEST(TimeTextTest, Rfc3339IsTheSecondTheInstantFallsInInUtc) {
  EXPECT_EQ("2026-11-22T21:10:00Z", rfc3339(static_cast<double>(kInstant)));
  EXPECT_EQ("2026-11-22T21:10:00Z", rfc3339(kInstant + 0.999));
  EXPECT_EQ("1970-01-01T00:00:00Z", rfc3339(0.0));
  EXPECT_EQ("1969-12-31T23:59:59Z", rfc3339(-0.5)) << "floored, not truncated toward zero";
  const system_clock::time_point at{seconds(kInstant) + microseconds(123456)};
  EXPECT_EQ("2026-11-22T21:10:00Z", rfc3339(at));
}

TEST(TimeTextTest, MicroTimeKeepsSixDigits) {
  EXPECT_EQ("2026-11-22T21:10:00.123456Z",
            rfc3339_micro(system_clock::time_point{seconds(kInstant) + microseconds(123456)}));
  EXPECT_EQ("2026-11-22T21:10:05.000007Z",
            rfc3339_micro(system_clock::time_point{seconds(kInstant + 5) + microseconds(7)}));
}

TEST(TimeTextTest, ClockLabelIsHoursAndMinutes) {
  EXPECT_EQ("21:10", clock_label(kInstant + 59.9));
  EXPECT_EQ(5u, clock_label(kInstant, TimeZone::kLocal).size());
}

}  // namespace
}  // namespace allox
