// Reads the simulator's jobs.csv (sim/report.h) into report input rows.
//
// Columns are found by header name, in any order: job, user, arrival, start, finish, device,
// machine are required; true_time (the run time used for rho) is optional and other columns
// are ignored. Empty start/finish mean the job never started/finished. Fields may be quoted
// ("a,b" with "" for a quote). A row needs a job id (once per file) and a user, times in
// 0..kMaxInputSeconds, and for a job that started its device and machine. Errors name the
// origin, line and column.
#pragma once

#include <istream>
#include <string>
#include <vector>

#include "core/result.h"
#include "fairness/report.h"

namespace allox {

Expected<std::vector<JobRun>> read_jobs_csv(std::istream& in, const std::string& origin);
Expected<std::vector<JobRun>> load_jobs_csv(const std::string& path);

}  // namespace allox
