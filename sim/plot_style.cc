#include "sim/plot_style.h"

#include <sstream>

namespace allox {
namespace {

constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#17becf",
                                    "#393b79", "#e6ab02", "#66a61e", "#a6761d"};
constexpr std::size_t kColours = sizeof(kPalette) / sizeof(*kPalette);
constexpr int kDashes = 5;
constexpr int kPoints[] = {7, 5, 9, 11, 13, 4, 6, 8, 10, 12};
constexpr std::size_t kPointTypes = sizeof(kPoints) / sizeof(*kPoints);

bool is_allox(const std::string& label) { return label.rfind("allox", 0) == 0; }

}  // namespace

std::vector<SeriesStyle> line_styles(const std::vector<std::string>& labels) {
  std::vector<SeriesStyle> styles;
  std::size_t others = 0, alloxes = 0;
  for (const std::string& label : labels) {
    SeriesStyle s;
    if (is_allox(label)) {
      s.colour = kAlloxColour;
      s.dash = 1 + static_cast<int>(alloxes % kDashes);
      s.width = 3;
      s.point = 7;
      ++alloxes;
    } else {
      s.colour = kPalette[others % kColours];
      s.dash = 1 + static_cast<int>(others % kDashes);
      s.point = kPoints[(others + 1) % kPointTypes];
      ++others;
    }
    styles.push_back(s);
  }
  return styles;
}

std::string fill_colour(std::size_t i) { return kPalette[i % kColours]; }

std::string gnuplot_line(const SeriesStyle& style) {
  std::ostringstream out;
  out << "lc rgb '" << style.colour << "' dt " << style.dash << " lw " << style.width << " pt "
      << style.point;
  return out.str();
}

}  // namespace allox
