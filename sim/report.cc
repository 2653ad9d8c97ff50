#include "sim/report.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/csv.h"
#include "core/output_file.h"

namespace allox {

void write_summary_json(const SimSummary& s, std::ostream& out) {
  nlohmann::ordered_json j;
  j["policy"] = s.policy;
  if (s.alpha) {
    j["alpha"] = *s.alpha;
  } else {
    j["alpha"] = nullptr;  // the policy has no α
  }
  j["jobs"] = s.jobs;
  j["completed"] = s.completed;
  j["avg_jct"] = s.avg_jct;
  j["p50_jct"] = s.p50_jct;
  j["p95_jct"] = s.p95_jct;
  j["p99_jct"] = s.p99_jct;
  j["makespan"] = s.makespan;
  j["jain"] = s.jain;
  j["max_rho"] = s.max_rho;
  j["sim_wall_s"] = s.sim_wall_s;
  nlohmann::ordered_json users = nlohmann::ordered_json::array();
  for (const UserSummary& u : s.per_user) {
    nlohmann::ordered_json ju;
    ju["user"] = u.user;
    ju["jobs"] = u.jobs;
    ju["completed"] = u.completed;
    ju["avg_jct"] = u.avg_jct;
    ju["rho"] = u.rho;
    ju["last_finish"] = u.last_finish;
    users.push_back(ju);
  }
  j["per_user"] = users;
  out << j.dump(2) << "\n";
}

void write_jobs_csv(const SimResult& result, std::ostream& out) {
  out << "job,user,arrival,start,finish,device,machine,estimated_time,true_time\n";
  for (const SimJobRecord& r : result.jobs) {
    out << csv_field(r.job) << ',' << csv_field(r.user) << ',' << csv_number(r.arrival) << ','
        << (r.start ? csv_number(*r.start) : "") << ',' << (r.finish ? csv_number(*r.finish) : "")
        << ',' << csv_field(r.device) << ',' << csv_field(r.machine) << ','
        << (r.finish ? csv_number(r.estimated_time) : "") << ','
        << (r.finish ? csv_number(r.true_time) : "") << '\n';
  }
}

void write_shares_csv(const SimResult& result, std::ostream& out) {
  out << "time";
  for (const std::string& u : result.users) out << ',' << csv_field(u);
  out << '\n';
  const double machines = static_cast<double>(std::max<std::size_t>(result.machines, 1));
  for (const ShareSample& s : result.shares) {
    out << csv_number(s.time);
    for (int busy : s.machines) out << ',' << csv_number(busy / machines);
    out << '\n';
  }
}

void write_comparison_table(const std::vector<SimSummary>& summaries, std::ostream& out) {
  out << std::left << std::setw(12) << "policy" << std::right << std::setw(7) << "alpha"
      << std::setw(13) << "completed" << std::setw(11) << "avg_jct" << std::setw(10) << "p50"
      << std::setw(10) << "p95" << std::setw(10) << "p99" << std::setw(11) << "makespan"
      << std::setw(7) << "jain" << std::setw(9) << "max_rho" << std::setw(9) << "wall_s" << '\n';
  out << std::fixed;
  for (const SimSummary& s : summaries) {
    out << std::left << std::setw(12) << s.policy << std::right << std::setprecision(2)
        << std::setw(7) << (s.alpha ? csv_number(*s.alpha) : std::string("-")) << std::setw(13)
        << (std::to_string(s.completed) + "/" + std::to_string(s.jobs)) << std::setprecision(1)
        << std::setw(11) << s.avg_jct << std::setw(10) << s.p50_jct << std::setw(10) << s.p95_jct
        << std::setw(10) << s.p99_jct << std::setw(11) << s.makespan << std::setprecision(3)
        << std::setw(7) << s.jain << std::setprecision(2) << std::setw(9) << s.max_rho
        << std::setw(9) << s.sim_wall_s << '\n';
  }
  out.unsetf(std::ios::fixed);
}

void write_comparison_csv(const std::vector<SimSummary>& summaries, std::ostream& out,
                          const std::vector<double>& x, const std::string& x_name) {
  if (!x.empty()) out << x_name << ',';
  out << "policy,alpha,jobs,completed,avg_jct,p50_jct,p95_jct,p99_jct,makespan,jain,max_rho,"
         "sim_wall_s\n";
  for (std::size_t i = 0; i < summaries.size(); ++i) {
    const SimSummary& s = summaries[i];
    if (!x.empty()) out << csv_number(x.at(i)) << ',';
    out << csv_field(s.policy) << ',' << (s.alpha ? csv_number(*s.alpha) : "") << ',' << s.jobs
        << ',' << s.completed << ',' << csv_number(s.avg_jct) << ',' << csv_number(s.p50_jct) << ','
        << csv_number(s.p95_jct) << ',' << csv_number(s.p99_jct) << ',' << csv_number(s.makespan)
        << ',' << csv_number(s.jain) << ',' << csv_number(s.max_rho) << ','
        << csv_number(s.sim_wall_s) << '\n';
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
