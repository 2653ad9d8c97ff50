// kube/quantity.h: Kubernetes quantities as numbers.
#include "kube/quantity.h"

#include <gtest/gtest.h>

namespace allox::kube {
namespace {

TEST(QuantityTest, UsesKubernetesSuffixes) {
  struct Case {
    const char* text;
    double want;
  };
  const Case cases[] = {{"8", 8},      {"500m", 0.5}, {"1k", 1000},    {"32Gi", 32.0 * (1 << 30)},
                        {"1e3", 1000}, {"2.5", 2.5},  {"1Mi", 1048576}};
  for (const Case& c : cases) {
    auto q = parse_quantity(c.text);
    ASSERT_TRUE(q.ok()) << c.text << ": " << q.message();
    EXPECT_DOUBLE_EQ(c.want, *q) << c.text;
  }
  for (const char* bad : {"", "abc", "-1", "1x", "Gi", "1.2.3"}) {
    EXPECT_FALSE(parse_quantity(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace allox::kube
