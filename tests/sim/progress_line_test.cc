#include "sim/progress_line.h"

#include <gtest/gtest.h>

namespace allox {
namespace {

TEST(ProgressLine, NamesTheRunAndEstimatesTheTimeLeft) {
  struct Case {
    std::vector<double> fractions;
    double elapsed;
    std::string want;
  };
  const std::vector<std::string> labels = {"allox-a0.1", "fifo", "sjf", "drf"};
  const Case cases[] = {
      // Runs 1 and 2 done, run 3 halfway: 2.5 of 4 runs in 50 s, so 1.5 runs take 30 s more.
      {{1, 1, 0.5, 0}, 50, "run 3 of 4 (sjf) [############        ] 62%  50s, about 30s left"},
      // Two threads: runs 1 and 2 both going; a quarter done in 65 s leaves 3 × 65 s.
      {{0.5, 0.5, 0, 0},
       65,
       "run 1 of 4 (allox-a0.1, +1 running) [#####               ] 25%  1m05s, about 3m15s left"},
      // Nothing reported yet: no estimate.
      {{0, 0, 0, 0}, 3, "run 1 of 4 (allox-a0.1) [                    ] 0%  3s"},
      // All done, after 2 h 1 min 40 s.
      {{1, 1, 1, 1}, 7300, "run 4 of 4 (drf) [####################] 100%  2h01m"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.want, progress_line(labels, c.fractions, c.elapsed)) << c.want;
  }
}

}  // namespace
}  // namespace allox
