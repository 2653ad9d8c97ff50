#include "fairness/jobs_csv.h"

#include <cmath>
#include <map>
#include <sstream>

#include "core/csv.h"
#include "core/input_file.h"
#include "core/model.h"
#include "core/utf8.h"

namespace allox {
namespace {

std::string format_seconds_bound() {
  std::ostringstream out;
  out << kMaxInputSeconds;
  return out.str();
}

}  // namespace

Expected<std::vector<JobRun>> read_jobs_csv(std::istream& in, const std::string& origin) {
  std::string line;
  if (!std::getline(in, line)) return Error{origin + ": empty file, expected a jobs.csv header"};
  auto header = split_csv_record(line);
  if (!header) return Error{origin + ":1: " + header.message()};
  std::map<std::string, std::size_t> column;
  for (std::size_t i = 0; i < header->size(); ++i) column[(*header)[i]] = i;
  for (const char* required : {"job", "user", "arrival", "start", "finish", "device", "machine"}) {
    if (!column.contains(required)) {
      return Error{origin + ":1: missing column '" + required + "'"};
    }
  }
  std::vector<JobRun> jobs;
  std::map<std::string, int> first_line;  // job id -> the line that has it
  for (int line_no = 2; std::getline(in, line); ++line_no) {
    if (line.empty() || line == "\r") continue;
    const std::string where = origin + ":" + std::to_string(line_no) + ": ";
    auto fields = split_csv_record(line);
    if (!fields) return Error{where + fields.message()};
    if (fields->size() != header->size()) {
      return Error{where + "expected " + std::to_string(header->size()) + " fields, got " +
                   std::to_string(fields->size())};
    }
    auto field = [&](const char* name) -> const std::string& { return (*fields)[column[name]]; };
    auto time = [&](const char* name, bool optional) -> Expected<std::optional<double>> {
      const std::string& text = field(name);
      if (text.empty() && optional) return std::optional<double>{};
      std::optional<double> value = parse_decimal(text);
      if (!value) return Error{where + name + ": expected a number, got '" + text + "'"};
      if (!(*value >= 0 && *value <= kMaxInputSeconds)) {
        return Error{where + name + ": expected seconds in 0.." + format_seconds_bound() +
                     ", got '" + text + "'"};
      }
      return value;
    };
    for (const char* name : {"job", "user", "device", "machine"}) {
      if (!is_utf8_text(field(name))) {
        return Error{where + name + ": expected UTF-8 text without control characters"};
      }
    }
    for (const char* name : {"job", "user"}) {
      if (field(name).empty()) return Error{where + name + ": required"};
    }
    if (auto [it, fresh] = first_line.emplace(field("job"), line_no); !fresh) {
      return Error{where + "job: '" + field("job") + "' is already on line " +
                   std::to_string(it->second)};
    }
    JobRun run;
    run.job = field("job");
    run.user = field("user");
    run.device = field("device");
    run.machine = field("machine");
    auto arrival = time("arrival", false);
    auto start = time("start", true);
    auto finish = time("finish", true);
    for (const auto* parsed : {&arrival, &start, &finish}) {
      if (!parsed->ok()) return parsed->error();
    }
    run.arrival = **arrival;
    run.start = *start;
    run.finish = *finish;
    if (run.start) {  // a job that ran says where
      for (const char* name : {"device", "machine"}) {
        if (field(name).empty()) return Error{where + name + ": required for a job that started"};
      }
    }
    if (column.contains("units")) {
      std::optional<double> units = parse_decimal(field("units"));
      if (!units || *units < 1 || *units > kMaxUnits || *units != std::floor(*units)) {
        return Error{where + "units: expected a whole number of devices in 1.." +
                     std::to_string(kMaxUnits) + ", got '" + field("units") + "'"};
      }
      run.units = static_cast<int>(*units);
    }
    if (column.contains("true_time") && run.finish) {
      auto true_time = time("true_time", true);
      if (!true_time.ok()) return true_time.error();
      run.run_time = *true_time;
    }
    jobs.push_back(std::move(run));
  }
  return jobs;
}

Expected<std::vector<JobRun>> load_jobs_csv(const std::string& path) {
  auto text = read_input_file(path);  // the 32 MiB input limit, refused before reading
  if (!text) return text.error();
  std::istringstream in(*text);
  return read_jobs_csv(in, path);
}

}  // namespace allox
