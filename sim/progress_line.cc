#include "sim/progress_line.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace allox {

std::string duration_text(double seconds) {
  const long long s = std::llround(std::max(seconds, 0.0));
  char text[32];
  if (s < 60) {
    std::snprintf(text, sizeof text, "%llds", s);
  } else if (s < 3600) {
    std::snprintf(text, sizeof text, "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(text, sizeof text, "%lldh%02lldm", s / 3600, s % 3600 / 60);
  }
  return text;
}

std::string progress_line(const std::vector<std::string>& labels,
                          const std::vector<double>& fractions, double elapsed_seconds) {
  const std::size_t runs = fractions.size();
  std::size_t current = runs;
  std::size_t others = 0;
  for (std::size_t i = 0; i < runs; ++i) {
    const bool going = fractions[i] > 0 && fractions[i] < 1;
    if (!going) continue;
    if (current == runs) {
      current = i;
    } else {
      ++others;
    }
  }
  if (current == runs) {  // none going: the first not finished
    for (std::size_t i = 0; i < runs && current == runs; ++i) {
      if (fractions[i] < 1) current = i;
    }
  }
  double done = 0;
  for (double f : fractions) done += std::clamp(f, 0.0, 1.0);
  done = runs == 0 ? 1 : done / static_cast<double>(runs);

  if (current == runs && runs > 0) current = runs - 1;  // all done: the last
  std::string line = "run " + std::to_string(current + 1) + " of " + std::to_string(runs);
  if (current < labels.size()) {
    line += " (" + labels[current];
    if (others > 0) line += ", +" + std::to_string(others) + " running";
    line += ")";
  }
  constexpr int kWidth = 20;
  const int filled = static_cast<int>(done * kWidth);
  line += " [" + std::string(filled, '#') + std::string(kWidth - filled, ' ') + "] " +
          std::to_string(static_cast<int>(done * 100)) + "%  " + duration_text(elapsed_seconds);
  if (done > 0 && done < 1) {
    line += ", about " + duration_text(elapsed_seconds * (1 - done) / done) + " left";
  }
  return line;
}

}  // namespace allox
