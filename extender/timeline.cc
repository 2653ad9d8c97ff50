#include "extender/timeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "core/markup.h"
#include "core/time_text.h"

namespace allox::extender {

void ShareHistory::record(double at, const std::map<std::string, double>& shares) {
  std::lock_guard lock(mu_);
  if (!samples_.empty() && at - samples_.back().at < resolution_) {
    samples_.back().shares = shares;  // keep the newest value within one resolution step
    return;
  }
  samples_.push_back({at, shares});
  while (samples_.size() > capacity_) samples_.pop_front();
}

std::vector<ShareSample> ShareHistory::since(double from) const {
  std::lock_guard lock(mu_);
  std::vector<ShareSample> out;
  for (const ShareSample& s : samples_)
    if (s.at >= from) out.push_back(s);
  return out;
}

std::string user_colour(const std::string& user) {
  static const char* palette[] = {"#2f6db5", "#d9822b", "#3a9a5b", "#b8434b", "#7d5ba6",
                                  "#8c6d3f", "#c2549a", "#5f6b73", "#a4a832", "#2aa3b0"};
  std::size_t hash = 2166136261u;
  for (unsigned char c : user) hash = (hash ^ c) * 16777619u;
  return palette[hash % (sizeof palette / sizeof palette[0])];
}

namespace {

std::string num(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", v);
  return buffer;
}

constexpr int kLabel = 160, kWidth = 720, kRow = 16;

double x_of(const Timeline& t, double at) {
  const double span = std::max(1.0, t.to - t.from);
  return kLabel + std::clamp((at - t.from) / span, 0.0, 1.0) * kWidth;
}

std::string axis(const Timeline& t, int y) {
  std::string out;
  for (int i = 0; i <= 4; ++i) {
    const double at = t.from + (t.to - t.from) * i / 4;
    const double x = x_of(t, at);
    out += "<line x1=\"" + num(x) + "\" y1=\"0\" x2=\"" + num(x) + "\" y2=\"" + std::to_string(y) +
           "\" stroke=\"#ddd\"/>";
    out += "<text x=\"" + num(x) + "\" y=\"" + std::to_string(y + 14) +
           "\" text-anchor=\"middle\">" + clock_label(at, TimeZone::kLocal) + "</text>";
  }
  const double now = x_of(t, t.now);
  out += "<line x1=\"" + num(now) + "\" y1=\"0\" x2=\"" + num(now) + "\" y2=\"" +
         std::to_string(y) +
         "\" stroke=\"#a00\" stroke-dasharray=\"3,3\"><title>now</title></line>";
  return out;
}

// The <svg> element of a chart `height` pixels high with its time axis below.
std::string open_chart(const char* label, const Timeline& t, int height) {
  return "<svg role=\"img\" aria-label=\"" + std::string(label) + "\" width=\"" +
         std::to_string(kLabel + kWidth + 10) + "\" height=\"" + std::to_string(height + 20) +
         "\" xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\" font-size=\"11\">" +
         axis(t, height);
}

}  // namespace

std::string render_machine_timeline(const Timeline& t) {
  std::map<std::string, int> row;
  for (const std::string& m : t.machines) row.emplace(m, static_cast<int>(row.size()));
  const int height = kRow * static_cast<int>(t.machines.size()) + 4;
  std::string svg = open_chart("machine timeline", t, height);
  for (const auto& [machine, r] : row) {
    svg += "<text x=\"0\" y=\"" + std::to_string(r * kRow + 12) + "\">" + markup_escape(machine) +
           "</text>";
  }
  for (const TimelineBar& bar : t.bars) {
    auto it = row.find(bar.machine);
    if (it == row.end() || bar.end < t.from || bar.start > t.to) continue;
    const double x0 = x_of(t, bar.start), x1 = std::max(x_of(t, bar.end), x0 + 2);
    const char* kind = bar.kind == TimelineBar::Kind::kDone      ? "done"
                       : bar.kind == TimelineBar::Kind::kRunning ? "running"
                                                                 : "planned";
    svg += "<rect class=\"" + std::string(kind) + "\" x=\"" + num(x0) + "\" y=\"" +
           std::to_string(it->second * kRow + 2) + "\" width=\"" + num(x1 - x0) + "\" height=\"" +
           std::to_string(kRow - 4) + "\" fill=\"" + user_colour(bar.user) + "\"" +
           (bar.kind == TimelineBar::Kind::kPlanned
                ? " fill-opacity=\"0.35\" stroke=\"" + user_colour(bar.user) +
                      "\" stroke-dasharray=\"4,2\""
                : std::string(bar.kind == TimelineBar::Kind::kRunning ? " fill-opacity=\"0.8\""
                                                                      : "")) +
           "><title>" + markup_escape(bar.job) + " (" + markup_escape(bar.user) + ", " + kind +
           ")</title></rect>";
  }
  return svg + "</svg>";
}

std::string render_share_history(const Timeline& t) {
  const int height = 140;
  std::set<std::string> users;
  double top = 0;
  for (const ShareSample& s : t.shares) {
    for (const auto& [user, share] : s.shares) {
      users.insert(user);
      top = std::max(top, share);
    }
  }
  if (top <= 0) top = 1;
  std::string svg = open_chart("share over time", t, height);
  int legend = 0;
  for (const std::string& user : users) {
    std::string points;
    for (const ShareSample& s : t.shares) {
      auto it = s.shares.find(user);
      const double share = it == s.shares.end() ? 0 : it->second;
      points += num(x_of(t, s.at)) + "," + num(height - 4 - share / top * (height - 10)) + " ";
    }
    svg += "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" + user_colour(user) +
           "\" points=\"" + points + "\"><title>" + markup_escape(user) + "</title></polyline>";
    svg += "<text x=\"0\" y=\"" + std::to_string(12 + 14 * legend++) + "\" fill=\"" +
           user_colour(user) + "\">" + markup_escape(user) + "</text>";
  }
  svg += "<text x=\"" + std::to_string(kLabel - 4) + "\" y=\"10\" text-anchor=\"end\">" + num(top) +
         "</text>";
  return svg + "</svg>";
}

}  // namespace allox::extender
