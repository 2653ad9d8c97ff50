// Renders simulation results for people and for other tools.
//
// - summary.json: policy, alpha (null for policies without α), jobs, completed, avg_jct, p50_jct,
//   p95_jct, p99_jct, makespan, jain, max_rho, sim_wall_s and per_user [{user, jobs, completed,
//   avg_jct, rho, last_finish}]. The comparison CSV has the same columns in the same order (one
//   list in report.cc), per_user aside.
// - jobs.csv: job,user,arrival,start,finish,device,machine,estimated_time,true_time, one row per
//   trace job; start and finish are empty for a job that never ran. Times print with enough
//   digits to recompute every figure of summary.json (ρ also needs the trace's true times).
// - shares.csv: time, then one column per user: the fraction of the cluster's machines the user
//   holds from that time on.
// - A comparison table (several policies, one line each) as aligned text.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/result.h"
#include "sim/metrics.h"
#include "sim/simulator.h"

namespace allox {

void write_summary_json(const SimSummary& summary, std::ostream& out);
void write_jobs_csv(const SimResult& result, std::ostream& out);
void write_shares_csv(const SimResult& result, std::ostream& out);
void write_comparison_table(const std::vector<SimSummary>& summaries, std::ostream& out);
// The same as CSV, with a leading column `x` when sweep values are given (one per summary).
void write_comparison_csv(const std::vector<SimSummary>& summaries, std::ostream& out,
                          const std::vector<double>& x = {}, const std::string& x_name = "x");

// Writes summary.json, jobs.csv and shares.csv into `dir` (created if missing).
Status write_run_files(const SimSummary& summary, const SimResult& result, const std::string& dir);

}  // namespace allox
