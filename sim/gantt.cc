#include "sim/gantt.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "core/markup.h"

namespace allox {
namespace {

// A readable palette (Okabe–Ito, then Tableau), cycled when there are more users.
const char* kColours[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00",
                          "#F0E442", "#4E79A7", "#F28E2B", "#59A14F", "#B07AA1", "#9C755F"};

// A "nice" tick step (1, 2 or 5 × 10^k) giving about `target` ticks over `span`.
double tick_step(double span, int target) {
  const double raw = span / target;
  const double base = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * base >= raw) return m * base;
  }
  return 10 * base;
}

}  // namespace

void write_gantt_svg(const SimResult& result, const Cluster& cluster, const std::string& title,
                     std::ostream& out) {
  const double label_w = 110, row_h = 22, top = 40, chart_w = 860, legend_w = 140;
  const std::size_t rows = cluster.machines.size();
  double end = 0;
  for (const Machine& m : cluster.machines) end = std::max(end, m.busy_until);
  for (const SimJobRecord& r : result.jobs) {
    if (r.finish) end = std::max(end, *r.finish);
  }
  if (end <= 0) end = 1;
  const double scale = chart_w / end;
  const double height = top + rows * row_h + 40;
  std::map<std::string, std::size_t> row_of;
  for (std::size_t i = 0; i < rows; ++i) row_of[cluster.machines[i].name] = i;
  std::map<std::string, std::size_t> colour_of;
  for (std::size_t u = 0; u < result.users.size(); ++u) colour_of[result.users[u]] = u;

  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << label_w + chart_w + legend_w + 20
      << "\" height=\"" << std::max(height, top + result.users.size() * 18.0 + 20)
      << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  out << "<text x=\"" << label_w << "\" y=\"20\" font-size=\"14\">" << markup_escape(title)
      << "</text>\n";
  for (std::size_t i = 0; i < rows; ++i) {
    const double y = top + i * row_h;
    out << "<text x=\"" << label_w - 6 << "\" y=\"" << y + row_h * 0.65 << "\" text-anchor=\"end\">"
        << markup_escape(cluster.machines[i].name) << "</text>\n";
    out << "<rect x=\"" << label_w << "\" y=\"" << y << "\" width=\"" << chart_w << "\" height=\""
        << row_h - 2 << "\" fill=\"#f4f4f4\"/>\n";
    if (cluster.machines[i].busy_until > 0) {
      out << "<rect x=\"" << label_w << "\" y=\"" << y << "\" width=\""
          << cluster.machines[i].busy_until * scale << "\" height=\"" << row_h - 2
          << "\" fill=\"#bbbbbb\"><title>busy until " << cluster.machines[i].busy_until
          << " s</title></rect>\n";
    }
  }
  const double axis_y = top + rows * row_h + 4;
  const double step = tick_step(end, 8);
  for (double t = 0; t <= end + 1e-9; t += step) {
    const double x = label_w + t * scale;
    out << "<line x1=\"" << x << "\" y1=\"" << top << "\" x2=\"" << x << "\" y2=\"" << axis_y
        << "\" stroke=\"#999\" stroke-width=\"0.5\"/>\n";
    out << "<text x=\"" << x << "\" y=\"" << axis_y + 14 << "\" text-anchor=\"middle\">" << t
        << "</text>\n";
  }
  for (const SimJobRecord& r : result.jobs) {
    if (!r.finish || !row_of.count(r.machine)) continue;
    const double from = r.last_start.value_or(*r.start);
    const double x = label_w + from * scale, w = std::max((*r.finish - from) * scale, 0.5);
    const double y = top + row_of[r.machine] * row_h;
    const char* colour = kColours[colour_of[r.user] % (sizeof(kColours) / sizeof(*kColours))];
    out << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << row_h - 2
        << "\" fill=\"" << colour << "\" stroke=\"white\" stroke-width=\"0.5\"><title>"
        << markup_escape(r.job) << " (" << markup_escape(r.user) << "): " << from << " – "
        << *r.finish << " s on " << markup_escape(r.machine) << "</title></rect>\n";
    if (w > 7.0 * r.job.size() + 4) {
      out << "<text x=\"" << x + 3 << "\" y=\"" << y + row_h * 0.65 << "\" fill=\"white\">"
          << markup_escape(r.job) << "</text>\n";
    }
  }
  out << "<text x=\"" << label_w + chart_w / 2 << "\" y=\"" << axis_y + 30
      << "\" text-anchor=\"middle\">time (s)</text>\n";
  const double lx = label_w + chart_w + 15;
  for (std::size_t u = 0; u < result.users.size(); ++u) {
    const double y = top + u * 18;
    out << "<rect x=\"" << lx << "\" y=\"" << y << "\" width=\"12\" height=\"12\" fill=\""
        << kColours[u % (sizeof(kColours) / sizeof(*kColours))] << "\"/>\n";
    out << "<text x=\"" << lx + 17 << "\" y=\"" << y + 10 << "\">" << markup_escape(result.users[u])
        << "</text>\n";
  }
  out << "</svg>\n";
}

}  // namespace allox
