// How the plots tell their series apart, chosen once for every figure (sim/plots.h).
//
// Up to 16 line series stay distinct in colour and in line style together: a 12-colour palette
// (Tableau 10 without its red, with navy, mustard, lime and ochre; readable on white and in
// grey-scale print by its dash patterns) is paired with 5 dash patterns, so series i and k < 60
// never share both. allox is always the same strong red, whatever the number or order of the
// other series: runs whose label starts with "allox" take red, solid and thick for the first,
// then the next dash patterns. Filled areas (per-user shares) take the palette in user order.
#pragma once

#include <string>
#include <vector>

namespace allox {

struct SeriesStyle {
  std::string colour;  // "#rrggbb"
  int dash = 1;        // gnuplot dash type: 1 solid, 2 dashed, 3 dotted, 4 dash-dot, 5 dash-dot-dot
  double width = 2;    // line width
  int point = 7;       // gnuplot point type for linespoints
};

inline constexpr const char* kAlloxColour = "#d62728";

// One style per label, in label order.
std::vector<SeriesStyle> line_styles(const std::vector<std::string>& labels);

// The palette colour of fill series i (cycled beyond 12).
std::string fill_colour(std::size_t i);

// gnuplot's words for a line: "lc rgb '#1f77b4' dt 2 lw 2 pt 5".
std::string gnuplot_line(const SeriesStyle& style);

}  // namespace allox
