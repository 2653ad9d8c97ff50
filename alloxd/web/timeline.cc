#include "alloxd/web/timeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "core/markup.h"
#include "core/time_text.h"

namespace allox::extender {

std::vector<ShareHistory::Entry> ShareHistory::intern(
    const std::map<std::string, double>& shares) {
  std::vector<Entry> entries;
  for (const auto& [user, share] : shares) {
    if (share == 0) continue;
    auto [it, added] = ids_.try_emplace(user, 0);
    if (added) {
      if (free_ids_.empty()) {
        it->second = static_cast<std::uint32_t>(names_.size());
        names_.push_back(user);
        uses_.push_back(0);
      } else {
        it->second = free_ids_.back();
        free_ids_.pop_back();
        names_[it->second] = user;
      }
    }
    ++uses_[it->second];
    entries.push_back({it->second, share});
  }
  entries.shrink_to_fit();
  return entries;
}

void ShareHistory::release(const Sample& sample) {
  for (const Entry& entry : sample.entries) {
    if (--uses_[entry.user] != 0) continue;
    ids_.erase(names_[entry.user]);
    std::string().swap(names_[entry.user]);
    free_ids_.push_back(entry.user);
  }
}

void ShareHistory::record(double at, const std::map<std::string, double>& shares) {
  std::lock_guard lock(mu_);
  std::vector<Entry> entries = intern(shares);
  if (!samples_.empty() && at - samples_.back().at < resolution_) {
    // Keep the newest value within one resolution step.
    release(samples_.back());
    samples_.back().entries = std::move(entries);
    return;
  }
  samples_.push_back({at, std::move(entries)});
  while (samples_.size() > capacity_) {
    release(samples_.front());
    samples_.pop_front();
  }
}

std::vector<ShareSample> ShareHistory::since(double from) const {
  std::lock_guard lock(mu_);
  std::vector<ShareSample> out;
  for (const Sample& s : samples_) {
    if (s.at < from) continue;
    ShareSample sample{s.at, {}};
    for (const Entry& entry : s.entries) sample.shares.emplace(names_[entry.user], entry.share);
    out.push_back(std::move(sample));
  }
  return out;
}

ShareHistory::Footprint ShareHistory::footprint() const {
  std::lock_guard lock(mu_);
  Footprint f;
  f.samples = samples_.size();
  f.bytes = samples_.size() * sizeof(Sample);
  for (const Sample& s : samples_) {
    f.entries += s.entries.size();
    f.bytes += s.entries.capacity() * sizeof(Entry);
  }
  for (std::size_t id = 0; id < names_.size(); ++id) {
    if (uses_[id] == 0) continue;
    ++f.names;
    // The name in names_ and its copy as the index's key.
    f.bytes += 2 * (sizeof(std::string) + names_[id].capacity() + 1);
  }
  f.bytes += uses_.capacity() * sizeof(std::uint32_t) + free_ids_.capacity() * sizeof(std::uint32_t);
  return f;
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
constexpr std::size_t kMaxTimelineBars = 2000;
constexpr std::size_t kMaxShareLines = 10;

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
  // At most kMaxTimelineBars bars: the running ones, then the plan's next starts, then the most
  // recently finished.
  std::vector<const TimelineBar*> drawn;
  for (const TimelineBar& bar : t.bars) drawn.push_back(&bar);
  if (drawn.size() > kMaxTimelineBars) {
    const auto rank = [](const TimelineBar* b) {
      return b->kind == TimelineBar::Kind::kRunning ? 0 : b->kind == TimelineBar::Kind::kPlanned ? 1 : 2;
    };
    std::stable_sort(drawn.begin(), drawn.end(), [&](const TimelineBar* a, const TimelineBar* b) {
      if (rank(a) != rank(b)) return rank(a) < rank(b);
      return a->end > b->end;
    });
    drawn.resize(kMaxTimelineBars);
  }
  for (const TimelineBar* drawn_bar : drawn) {
    const TimelineBar& bar = *drawn_bar;
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
  std::map<std::string, double> peak;  // each user's largest share in the window
  double top = 0;
  for (const ShareSample& s : t.shares) {
    for (const auto& [user, share] : s.shares) {
      double& p = peak[user];
      p = std::max(p, share);
      top = std::max(top, share);
    }
  }
  if (top <= 0) top = 1;
  // The kMaxShareLines users with the largest peaks get a line (the rest are named by count),
  // each of at most one point per pixel.
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& [user, p] : peak) ranked.emplace_back(-p, user);
  std::sort(ranked.begin(), ranked.end());
  std::set<std::string> users;
  for (std::size_t i = 0; i < ranked.size() && i < kMaxShareLines; ++i) users.insert(ranked[i].second);
  const auto width = static_cast<std::size_t>(kWidth);
  const std::size_t step = std::max<std::size_t>(1, (t.shares.size() + width - 1) / width);
  std::string svg = open_chart("share over time", t, height);
  int legend = 0;
  for (const std::string& user : users) {
    std::string points;
    for (std::size_t i = 0; i < t.shares.size(); i += step) {
      const ShareSample& s = t.shares[i];
      auto it = s.shares.find(user);
      const double share = it == s.shares.end() ? 0 : it->second;
      points += num(x_of(t, s.at)) + "," + num(height - 4 - share / top * (height - 10)) + " ";
    }
    svg += "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" + user_colour(user) +
           "\" points=\"" + points + "\"><title>" + markup_escape(user) + "</title></polyline>";
    svg += "<text x=\"0\" y=\"" + std::to_string(12 + 14 * legend++) + "\" fill=\"" +
           user_colour(user) + "\">" + markup_escape(user) + "</text>";
  }
  if (ranked.size() > users.size()) {
    svg += "<text x=\"0\" y=\"" + std::to_string(12 + 14 * legend) + "\">and " +
           std::to_string(ranked.size() - users.size()) + " more users</text>";
  }
  svg += "<text x=\"" + std::to_string(kLabel - 4) + "\" y=\"10\" text-anchor=\"end\">" + num(top) +
         "</text>";
  return svg + "</svg>";
}

}  // namespace allox::extender
