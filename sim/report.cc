#include "sim/report.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "core/csv.h"
#include "core/output_file.h"

namespace allox {

namespace {

using Fields = nlohmann::ordered_json;

// The one list of a run's figures, in order: summary.json's keys and comparison.csv's columns.
Fields summary_fields(const SimSummary& s) {
  return {{"policy", s.policy},
          {"alpha", s.alpha ? Fields(*s.alpha) : Fields(nullptr)},  // null: the policy has no α
          {"jobs", s.jobs},
          {"completed", s.completed},
          {"avg_jct", s.avg_jct},
          {"p50_jct", s.p50_jct},
          {"p95_jct", s.p95_jct},
          {"p99_jct", s.p99_jct},
          {"makespan", s.makespan},
          {"jain", s.jain},
          {"max_rho", s.max_rho},
          {"sim_wall_s", s.sim_wall_s}};
}

Fields user_fields(const UserSummary& u) {
  return {{"user", u.user},       {"jobs", u.jobs}, {"completed", u.completed},
          {"avg_jct", u.avg_jct}, {"rho", u.rho},   {"last_finish", u.last_finish}};
}

// A figure as CSV text: at most 12 significant digits, then the shortest text that reads back as
// that. Simulated times and estimates are sums and products of the trace's decimals, so their
// last binary digits are arithmetic noise (20 × 1.238 is 24.759999999999998); 12 digits keep a
// microsecond at a day of simulated time and drop the noise (24.76).
std::string report_number(double value) {
  char text[40];
  const auto written =
      std::to_chars(text, text + sizeof text, value, std::chars_format::general, 12);
  double rounded = 0;
  std::from_chars(text, written.ptr, rounded);
  return csv_number(rounded);
}

// One field as CSV: text quoted where needed, null empty, numbers at report precision.
std::string csv_cell(const Fields& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return csv_field(value.get<std::string>());
  if (value.is_number_float()) return report_number(value.get<double>());
  return value.dump();  // integers
}

}  // namespace

void write_summary_json(const SimSummary& s, std::ostream& out) {
  Fields j = summary_fields(s);
  Fields users = Fields::array();
  for (const UserSummary& u : s.per_user) users.push_back(user_fields(u));
  j["per_user"] = users;
  if (s.plan) {  // only runs with inexact (multi-unit) plans
    j["plan"] = {{"solves", s.plan->solves},
                 {"cost", s.plan->cost},
                 {"lower_bound", s.plan->bound},
                 {"gap", s.plan->bound > 0 ? s.plan->cost / s.plan->bound - 1 : 0.0},
                 {"worst_gap", s.plan->worst_gap}};
  }
  out << j.dump(2) << "\n";
}

void write_jobs_csv(const SimResult& result, std::ostream& out) {
  // The units column only when some job held several devices: single-device runs write the plain
  // format.
  const bool units = std::any_of(result.jobs.begin(), result.jobs.end(),
                                 [](const SimJobRecord& r) { return r.units != 1; });
  out << "job,user,arrival,start,finish,device,machine,estimated_time,true_time"
      << (units ? ",units\n" : "\n");
  for (const SimJobRecord& r : result.jobs) {
    out << csv_field(r.job) << ',' << csv_field(r.user) << ',' << report_number(r.arrival) << ','
        << (r.start ? report_number(*r.start) : "") << ','
        << (r.finish ? report_number(*r.finish) : "") << ',' << csv_field(r.device) << ','
        << csv_field(r.machine) << ',' << (r.finish ? report_number(r.estimated_time) : "") << ','
        << (r.finish ? report_number(r.true_time) : "");
    if (units) out << ',' << r.units;
    out << '\n';
  }
}

void write_shares_csv(const SimResult& result, std::ostream& out) {
  out << "time";
  for (const std::string& u : result.users) out << ',' << csv_field(u);
  out << '\n';
  const double machines = static_cast<double>(std::max<std::size_t>(result.machines, 1));
  for (const ShareSample& s : result.shares) {
    out << report_number(s.time);
    for (int busy : s.machines) out << ',' << report_number(busy / machines);
    out << '\n';
  }
}

void write_comparison_table(const std::vector<SimSummary>& summaries, std::ostream& out) {
  // The policy column fits its longest label ("drf-ext-fastest"), so every row lines up.
  std::size_t label = std::string("policy").size();
  for (const SimSummary& s : summaries) label = std::max(label, s.policy.size());
  const int first = static_cast<int>(label) + 2;
  out << std::left << std::setw(first) << "policy" << std::right << std::setw(7) << "alpha"
      << std::setw(13) << "completed" << std::setw(11) << "avg_jct" << std::setw(10) << "p50"
      << std::setw(10) << "p95" << std::setw(10) << "p99" << std::setw(11) << "makespan"
      << std::setw(7) << "jain" << std::setw(9) << "max_rho" << std::setw(9) << "wall_s" << '\n';
  out << std::fixed;
  for (const SimSummary& s : summaries) {
    out << std::left << std::setw(first) << s.policy << std::right << std::setprecision(2)
        << std::setw(7) << (s.alpha ? csv_number(*s.alpha) : std::string("-")) << std::setw(13)
        << (std::to_string(s.completed) + "/" + std::to_string(s.jobs)) << std::setprecision(1)
        << std::setw(11) << s.avg_jct << std::setw(10) << s.p50_jct << std::setw(10) << s.p95_jct
        << std::setw(10) << s.p99_jct << std::setw(11) << s.makespan << std::setprecision(3)
        << std::setw(7) << s.jain << std::setprecision(2) << std::setw(9) << s.max_rho
        << std::setw(9) << s.sim_wall_s << '\n';
  }
  // A policy that leaves jobs queued to the end (a static share under one machine, say): its
  // figures are over fewer jobs, which the table must not hide.
  for (const SimSummary& s : summaries) {
    if (s.completed == s.jobs) continue;
    out << s.policy << ": " << s.jobs - s.completed << " of " << s.jobs
        << " jobs never finished; its figures count only the " << s.completed
        << " that finished\n";
  }
  for (const SimSummary& s : summaries) {
    if (!s.plan || s.plan->bound <= 0) continue;
    out << s.policy << ": " << s.plan->solves << " multi-unit plans, cost " << std::setprecision(2)
        << 100 * (s.plan->cost / s.plan->bound - 1) << "% above their lower bounds (worst "
        << 100 * s.plan->worst_gap << "%)\n";
  }
  out.unsetf(std::ios::fixed);
}

void write_comparison_csv(const std::vector<SimSummary>& summaries, std::ostream& out,
                          const std::vector<double>& x, const std::string& x_name) {
  const auto header = [&](const Fields& fields) {
    if (!x.empty()) out << x_name << ',';
    const char* comma = "";
    for (const auto& [key, value] : fields.items()) out << std::exchange(comma, ",") << key;
    out << '\n';
  };
  header(summary_fields(SimSummary{}));
  for (std::size_t i = 0; i < summaries.size(); ++i) {
    if (!x.empty()) out << csv_number(x.at(i)) << ',';
    const Fields fields = summary_fields(summaries[i]);
    const char* comma = "";
    for (const auto& [key, value] : fields.items()) {
      out << std::exchange(comma, ",") << csv_cell(value);
    }
    out << '\n';
  }
}

Status write_run_files(const SimSummary& summary, const SimResult& result, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{"cannot create " + dir + ": " + ec.message()};
  const std::filesystem::path base(dir);
  if (Status s = write_output_file(base / "summary.json",
                                   [&](std::ostream& o) { write_summary_json(summary, o); });
      !s.ok())
    return s;
  if (Status s =
          write_output_file(base / "jobs.csv", [&](std::ostream& o) { write_jobs_csv(result, o); });
      !s.ok())
    return s;
  return write_output_file(base / "shares.csv",
                           [&](std::ostream& o) { write_shares_csv(result, o); });
}

}  // namespace allox
