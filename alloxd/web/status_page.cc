#include "alloxd/web/status_page.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/markup.h"

namespace allox::extender {
namespace {

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

std::string duration(double seconds) {
  seconds = std::max(0.0, seconds);
  if (seconds < 120) return fixed(seconds, 0) + " s";
  if (seconds < 7200) return fixed(seconds / 60, 1) + " min";
  return fixed(seconds / 3600, 1) + " h";
}

std::string variants_cell(const JobView& job) {
  std::string out;
  for (const VariantView& v : job.variants) {
    if (!out.empty()) out += "<br>";
    out += markup_escape(v.device) + ": " + duration(v.estimate.seconds) + " <small>(" +
           source_name(v.estimate.source) + ")</small>";
  }
  return out;
}

constexpr const char* kStyle = R"css(
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; margin-bottom: 0.2em; }
h2 { font-size: 1.1em; margin-top: 1.4em; }
table { border-collapse: collapse; min-width: 40em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.7em; text-align: left; font-size: 0.9em; }
th { background: #f3f3f3; }
.summary span { margin-right: 1.5em; }
.error { color: #a00; }
small { color: #666; }
)css";

// The rows of each list the page shows: the first page of /v1/queue and /v1/fairness at this
// limit, then a line saying how many more there are and where to read them.
constexpr std::size_t kRows = 100;

std::string more_line(std::size_t shown, std::size_t total, const char* what, const char* path) {
  if (total <= shown) return "";
  const std::string next = std::string(path) + "?limit=500&amp;continue=" + std::to_string(shown);
  return "<p><small>and " + std::to_string(total - shown) + " more " + what +
         ": <a href=\"" + next + "\">" + path + "</a></small></p>\n";
}

// The summary line: nodes, machines, jobs, fairness and the last plan.
std::string summary_section(const QueueView& queue, const FairnessReport& fairness) {
  std::string html;
  html += "<span>Nodes: " + std::to_string(queue.nodes) + "</span>";
  html += "<span>Machines idle: " + std::to_string(queue.idle_machines) + " of " +
          std::to_string(queue.machines) + "</span>";
  html += "<span>Queued jobs: " + std::to_string(queue.queued.size()) + "</span>";
  html += "<span>Running jobs: " + std::to_string(queue.running.size()) + "</span>";
  html += "<span>Jain's index: " + fixed(fairness.jain_windowed_share, 3) + "</span>";
  if (queue.plan_solved_at > 0) {
    html += "<span>Last plan: " + duration(queue.now - queue.plan_solved_at) + " ago, solved in " +
            fixed(queue.plan_solve_seconds * 1000, 2) + " ms</span>";
  }
  html += "</p>\n";
  if (!queue.plan_error.empty()) {
    html +=
        "<p class=\"error\">Scheduling round failed: " + markup_escape(queue.plan_error) + "</p>\n";
  }

  return html;
}

// Each user's share: a bar chart and a table.
std::string shares_section(const FairnessReport& fairness) {
  std::string html;
  html += "<h2>Per-user share</h2>\n";
  if (fairness.users.empty()) {
    html += "<p>No users yet.</p>\n";
  } else {
    const int row = 26, label = 140, width = 360;
    double top = 0;
    for (const UserReport& u : fairness.users)
      top = std::max({top, u.current_share, u.windowed_share});
    if (top <= 0) top = 1;
    const std::size_t users = std::min(fairness.users.size(), kRows);
    int height = row * static_cast<int>(users) + 10;
    html += "<svg role=\"img\" aria-label=\"per-user share chart\" width=\"" +
            std::to_string(label + width + 160) + "\" height=\"" + std::to_string(height) +
            "\" xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\" font-size=\"13\">";
    for (std::size_t i = 0; i < users; ++i) {
      const UserReport& u = fairness.users[i];
      int y = static_cast<int>(i) * row + 5;
      int bar = static_cast<int>(std::lround(u.current_share / top * width));
      int window_bar = static_cast<int>(std::lround(u.windowed_share / top * width));
      html +=
          "<text x=\"0\" y=\"" + std::to_string(y + 15) + "\">" + markup_escape(u.user) + "</text>";
      html += "<rect x=\"" + std::to_string(label) + "\" y=\"" + std::to_string(y + 2) +
              "\" width=\"" + std::to_string(window_bar) +
              "\" height=\"18\" fill=\"#c9dcf0\"><title>windowed share</title></rect>";
      html += "<rect x=\"" + std::to_string(label) + "\" y=\"" + std::to_string(y + 6) +
              "\" width=\"" + std::to_string(bar) +
              "\" height=\"10\" fill=\"#2f6db5\"><title>current share</title></rect>";
      html += "<text x=\"" + std::to_string(label + width + 8) + "\" y=\"" +
              std::to_string(y + 15) + "\">" + fixed(u.current_share, 3) + " (window " +
              fixed(u.windowed_share, 3) + ")</text>";
    }
    html +=
        "</svg>\n<table><tr><th>User</th><th>Share</th><th>Window share</th><th>Queued</th>"
        "<th>Running</th><th>Done</th><th>Mean JCT</th></tr>\n";
    for (std::size_t i = 0; i < users; ++i) {
      const UserReport& u = fairness.users[i];
      html += "<tr><td>" + markup_escape(u.user) + "</td><td>" + fixed(u.current_share, 3) +
              "</td><td>" + fixed(u.windowed_share, 3) + "</td><td>" + std::to_string(u.queued) +
              "</td><td>" + std::to_string(u.running) + "</td><td>" + std::to_string(u.done) +
              "</td><td>" + (u.mean_jct ? duration(*u.mean_jct) : std::string("-")) +
              "</td></tr>\n";
    }
    html += "</table>\n" + more_line(users, fairness.users.size(), "users", "/v1/fairness");
  }

  return html;
}

// The queued jobs in plan order, with where and when each starts.
std::string queue_section(const QueueView& queue) {
  std::string html;
  html += "<h2>Queue</h2>\n";
  if (queue.queued.empty()) {
    html += "<p>The queue is empty.</p>\n";
  } else {
    html +=
        "<table><tr><th>#</th><th>Job</th><th>User</th><th>Estimates</th><th>Plan</th>"
        "<th>Waiting</th></tr>\n";
    const std::size_t queued = std::min(queue.queued.size(), kRows);
    for (std::size_t i = 0; i < queued; ++i) {
      const JobView& job = queue.queued[i];
      std::string plan = "not planned yet";
      std::string position = "-";
      if (job.planned_start) {
        plan = "starts now on " + markup_escape(job.planned_start->node) + " (" +
               markup_escape(units_text(job.planned_start->device, job.planned_start->units)) +
               ")";
        position = "0";
      } else if (job.planned_wait) {
        position = std::to_string(job.planned_wait->position);
        plan = job.planned_wait->estimated_start
                   ? "est. start in " + duration(*job.planned_wait->estimated_start - queue.now)
                   : std::string("waiting for a fairness round");
      }
      html += "<tr><td>" + position + "</td><td>" + markup_escape(job.record.id) + "</td><td>" +
              markup_escape(job.record.user) + "</td><td>" + variants_cell(job) + "</td><td>" +
              plan + "</td><td>" + duration(queue.now - job.record.arrival) + "</td></tr>\n";
    }
    html += "</table>\n" + more_line(queued, queue.queued.size(), "queued jobs", "/v1/queue");
  }

  return html;
}

// The running jobs and where they run.
std::string placements_section(const QueueView& queue) {
  std::string html;
  html += "<h2>Placements</h2>\n";
  if (queue.running.empty()) {
    html += "<p>No job is running.</p>\n";
  } else {
    html +=
        "<table><tr><th>Job</th><th>User</th><th>Pod</th><th>Node</th><th>Device</th>"
        "<th>Running for</th><th>Est. remaining</th></tr>\n";
    const std::size_t running = std::min(queue.running.size(), kRows);
    for (std::size_t i = 0; i < running; ++i) {
      const JobView& job = queue.running[i];
      const JobRecord& r = job.record;
      html += "<tr><td>" + markup_escape(r.id) + "</td><td>" + markup_escape(r.user) + "</td><td>" +
              markup_escape(r.pod_namespace + "/" + r.pod_name) + "</td><td>" +
              markup_escape(r.node) + "</td><td>" + markup_escape(units_text(r.device, r.units)) +
              "</td><td>" +
              duration(queue.now - r.start) + "</td><td>" +
              (job.remaining ? duration(*job.remaining) : std::string("-")) + "</td></tr>\n";
    }
    html += "</table>\n" + more_line(running, queue.running.size(), "running jobs", "/v1/queue");
  }
  return html;
}

}  // namespace

std::string render_status_page(const QueueView& queue, const FairnessReport& fairness,
                               const Timeline& timeline) {
  std::string html;
  html += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  html += "<meta http-equiv=\"refresh\" content=\"5\">";
  html += "<title>allox scheduler status</title><style>";
  html += kStyle;
  html += "</style></head><body>\n<h1>allox scheduler status</h1>\n<p class=\"summary\">";
  html += summary_section(queue, fairness);
  html += shares_section(fairness);
  if (!timeline.machines.empty()) {
    html += "<h2>Timeline</h2>\n<p><small>Each machine's jobs since " +
            duration(timeline.now - timeline.from) +
            " ago, coloured by user; solid: done, darker: running, dashed: the plan's next "
            "starts; the red line is now.</small></p>\n";
    html += render_machine_timeline(timeline) + "\n";
    html += "<h2>Share over time</h2>\n" + render_share_history(timeline) + "\n";
  }

  html += queue_section(queue);
  html += placements_section(queue);
  html +=
      "<p><small>JSON: <a href=\"/v1/queue\">/v1/queue</a> · "
      "<a href=\"/v1/fairness\">/v1/fairness</a> · <a href=\"/metrics\">/metrics</a></small>"
      "</p>\n</body></html>\n";
  return html;
}

}  // namespace allox::extender
