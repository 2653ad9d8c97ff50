#include "sim/trace_file.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <set>
#include <sstream>
#include <vector>

#include "core/csv.h"
#include "core/input_file.h"
#include "core/utf8.h"
#include "core/yaml_fields.h"

namespace allox {
namespace {

// ---- YAML ----

void read_device_times(FieldReader& reader, const YAML::Node& node, const char* key,
                       const std::string& subject, std::map<DeviceType, double>& out) {
  const YAML::Node times = node[key];
  if (!times || times.IsNull()) return;
  if (!times.IsMap()) {
    reader.fail(times, subject,
                std::string(key) + " must map device types to seconds (e.g. {gpu: 60}), got " +
                    describe(times));
    return;
  }
  for (const auto& entry : times) {
    const std::string device = entry.first.as<std::string>("");
    if (!reader.device_name(entry.first, subject, std::string("device type in ") + key, device)) {
      continue;
    }
    const auto seconds =
        reader.seconds_at(entry.second, subject, std::string(key) + "." + device, true);
    if (seconds) out[device] = *seconds;
  }
}

void read_yaml_job(FieldReader& reader, const YAML::Node& node, std::size_t index, Trace& trace) {
  std::string subject = "jobs[" + std::to_string(index) + "]";
  if (node.IsMap() && node["id"] && node["id"].IsScalar() && !node["id"].Scalar().empty()) {
    subject = "job \"" + node["id"].Scalar() + "\"";
  }
  if (!reader.check_map(
          node, subject,
          {"id", "user", "arrival", "time", "estimate", "iterations", "family", "units"})) {
    return;
  }
  TraceJob tj;
  const auto id = reader.text(node, "id", subject, true);
  const auto user = reader.text(node, "user", subject, false);
  const auto arrival = reader.seconds(node, "arrival", subject, false, false);
  const auto iterations = reader.integer(node, "iterations", subject, 1, 1'000'000'000'000, false);
  const auto family = reader.text(node, "family", subject, false);
  const auto units = reader.integer(node, "units", subject, 1, kMaxUnits, false);
  if (!node["time"] || node["time"].IsNull()) {
    reader.fail(node, subject, "time is required (device type -> seconds, e.g. {gpu: 60})");
  }
  read_device_times(reader, node, "time", subject, tj.true_time);
  std::map<DeviceType, double> estimate;
  read_device_times(reader, node, "estimate", subject, estimate);
  for (const auto& [device, seconds] : estimate) {
    if (!tj.true_time.count(device)) {
      reader.fail(node["estimate"], subject,
                  "estimate." + device + " given but time." + device + " is not");
    }
  }
  if (!id) return;
  tj.job.id = *id;
  tj.job.user = user.value_or("default");
  tj.job.arrival = arrival.value_or(0);
  tj.job.iterations = iterations;
  tj.job.family = family.value_or("");
  tj.job.units = static_cast<int>(units.value_or(1));
  tj.job.time = tj.true_time;
  for (const auto& [device, seconds] : estimate) {
    if (tj.job.time.count(device)) tj.job.time[device] = seconds;
  }
  trace.jobs.push_back(std::move(tj));
}

// ---- CSV ----

std::string bad_device(const std::string& column) {
  const std::string shown = is_utf8_text(column) ? column : "(not UTF-8 text)";
  return "column '" + shown +
         "': the device type must be a device type name (lowercase letters, digits, '-', '_', "
         "'.'; at most 63 characters)";
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

Expected<Trace> finish(Trace trace, const std::string& source) {
  add_missing_users(trace);
  sort_by_arrival(trace);
  if (Status s = validate_trace(trace); !s.ok()) return Error{source + ": " + s.message()};
  return trace;
}

}  // namespace

Expected<Trace> parse_yaml_trace(const std::string& text, const std::string& source) {
  auto root = parse_yaml(text, source);
  if (!root) return root.error();
  FieldReader reader(source);
  if (!reader.check_map(*root, "", {"users", "jobs"})) return reader.error();
  Trace trace;
  const auto users = reader.sequence(*root, "users", "");
  std::set<std::string> user_names;
  for (std::size_t i = 0; i < users.size(); ++i) {
    const std::string subject = "users[" + std::to_string(i) + "]";
    if (!reader.check_map(users[i], subject, {"name", "weight"})) continue;
    const auto name = reader.text(users[i], "name", subject, true);
    const auto weight = reader.positive(users[i], "weight", subject, "shares", false);
    if (!name) continue;
    if (!user_names.insert(*name).second) {
      reader.fail(users[i], "user \"" + *name + "\"", "duplicate user name");
    }
    trace.users.push_back({*name, weight.value_or(1)});
  }
  const auto jobs = reader.sequence(*root, "jobs", "");
  std::set<std::string> ids;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const std::size_t before = trace.jobs.size();
    read_yaml_job(reader, jobs[i], i, trace);
    if (trace.jobs.size() > before && !ids.insert(trace.jobs.back().job.id).second) {
      reader.fail(jobs[i], "job \"" + trace.jobs.back().job.id + "\"", "duplicate job id");
    }
  }
  // Only when nothing else is wrong: a list of bad jobs is not an empty one.
  if (reader.ok() && trace.jobs.empty()) {
    reader.fail((*root)["jobs"] ? (*root)["jobs"] : *root, "",
                "the trace has no jobs: list at least one under jobs");
  }
  if (!reader.ok()) return reader.error();
  return finish(std::move(trace), source);
}

Expected<Trace> parse_csv_trace(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  auto fail = [&](const std::string& what) {
    return Error{source + ":" + std::to_string(line_no) + ": " + what};
  };
  std::vector<std::string> header;
  while (header.empty() && std::getline(in, line)) {
    ++line_no;
    if (trim(line).empty() || line[0] == '#') continue;
    auto fields = split_csv_record(line);
    if (!fields) return fail(fields.message());
    header = std::move(*fields);  // the splitter drops blanks around unquoted fields
  }
  if (header.empty()) {
    line_no = std::max(line_no, 1);  // an empty file has no line 0
    return fail("the trace is empty: expected a header row, then a row per job");
  }

  enum class Column { kJob, kUser, kArrival, kUnits, kTime, kEstimate };
  std::vector<std::pair<Column, DeviceType>> columns;
  bool has_job = false, has_time = false;
  std::set<std::string> seen;
  for (const std::string& name : header) {
    if (!seen.insert(name).second) return fail("column '" + name + "' appears twice");
    if (name == "job") {
      columns.push_back({Column::kJob, ""});
      has_job = true;
    } else if (name == "user") {
      columns.push_back({Column::kUser, ""});
    } else if (name == "arrival") {
      columns.push_back({Column::kArrival, ""});
    } else if (name == "units") {
      columns.push_back({Column::kUnits, ""});
    } else if (name.rfind("time.", 0) == 0 && name.size() > 5) {
      if (!is_device_type_name(name.substr(5))) return fail(bad_device(name));
      columns.push_back({Column::kTime, name.substr(5)});
      has_time = true;
    } else if (name.rfind("estimate.", 0) == 0 && name.size() > 9) {
      if (!is_device_type_name(name.substr(9))) return fail(bad_device(name));
      columns.push_back({Column::kEstimate, name.substr(9)});
    } else {
      return fail("unknown column '" + name +
                  "' (expected job, user, arrival, units, time.<device>, estimate.<device>)");
    }
  }
  if (!has_job) return fail("a 'job' column is required");
  if (!has_time) return fail("at least one 'time.<device>' column is required");

  Trace trace;
  const int header_line = line_no;
  while (std::getline(in, line)) {
    ++line_no;
    if (trim(line).empty() || line[0] == '#') continue;
    auto fields = split_csv_record(line);
    if (!fields) return fail(fields.message());
    if (fields->size() != columns.size()) {
      return fail("expected " + std::to_string(columns.size()) + " fields, got " +
                  std::to_string(fields->size()));
    }
    TraceJob tj;
    std::map<DeviceType, double> estimate;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const std::string& value = (*fields)[c];
      const auto& [kind, device] = columns[c];
      const std::string& column = header[c];
      std::optional<double> x;
      switch (kind) {
        case Column::kJob:
          if (value.empty()) return fail("job id is empty");
          if (!is_utf8_text(value)) return fail("job must be UTF-8 text without control characters");
          tj.job.id = value;
          break;
        case Column::kUser:
          if (!is_utf8_text(value)) {
            return fail("user must be UTF-8 text without control characters");
          }
          tj.job.user = value.empty() ? "default" : value;
          break;
        case Column::kArrival:
          if (value.empty()) break;
          x = parse_decimal(value);
          if (!x || *x < 0 || *x > kMaxInputSeconds) {
            return fail(column + " must be a number of seconds from 0 to " +
                        csv_number(kMaxInputSeconds) + ", got '" + value + "'");
          }
          tj.job.arrival = *x;
          break;
        case Column::kUnits:
          if (value.empty()) break;
          x = parse_decimal(value);
          if (!x || *x < 1 || *x > kMaxUnits || *x != std::floor(*x)) {
            return fail(column + " must be a whole number of devices in 1.." +
                        std::to_string(kMaxUnits) + ", got '" + value + "'");
          }
          tj.job.units = static_cast<int>(*x);
          break;
        case Column::kTime:
        case Column::kEstimate:
          if (value.empty()) break;
          x = parse_decimal(value);
          if (!x || *x <= 0 || *x > kMaxInputSeconds) {
            return fail(column + " must be a positive number of seconds up to " +
                        csv_number(kMaxInputSeconds) + ", got '" + value + "'");
          }
          (kind == Column::kTime ? tj.true_time : estimate)[device] = *x;
          break;
      }
    }
    if (tj.true_time.empty()) return fail("job " + tj.job.id + " has no time.<device> value");
    tj.job.time = tj.true_time;
    for (const auto& [device, x] : estimate) {
      if (!tj.true_time.count(device)) {
        return fail("job " + tj.job.id + ": estimate." + device + " given but time." + device +
                    " is empty");
      }
      tj.job.time[device] = x;
    }
    trace.jobs.push_back(std::move(tj));
  }
  if (trace.jobs.empty()) {
    return Error{source + ":" + std::to_string(header_line) +
                 ": the trace has no jobs: add a row per job under the header"};
  }
  return finish(std::move(trace), source);
}

Expected<Trace> load_yaml_trace(const std::string& path) {
  auto text = read_input_file(path);
  if (!text) return text.error();
  return parse_yaml_trace(*text, path);
}

Expected<Trace> load_csv_trace(const std::string& path) {
  auto text = read_input_file(path);
  if (!text) return text.error();
  return parse_csv_trace(*text, path);
}

void write_csv_trace(const Trace& trace, std::ostream& out) {
  std::set<DeviceType> devices;
  for (const TraceJob& tj : trace.jobs) {
    for (const auto& [device, t] : tj.true_time) devices.insert(device);
  }
  // The units column only when some job needs more than one device: single-device traces stay
  // in the plain format that other tools read.
  const bool units = std::any_of(trace.jobs.begin(), trace.jobs.end(),
                                 [](const TraceJob& tj) { return tj.job.units != 1; });
  out << "job,user,arrival";
  if (units) out << ",units";
  for (const DeviceType& d : devices) out << ",time." << d;
  for (const DeviceType& d : devices) out << ",estimate." << d;
  out << '\n';
  for (const TraceJob& tj : trace.jobs) {
    // A row starting with '#' reads as a comment: such an id is written quoted.
    std::string id = csv_field(tj.job.id);
    if (id.starts_with('#')) id = '"' + id + '"';
    out << id << ',' << csv_field(tj.job.user) << ','
        << csv_number(tj.job.arrival);
    if (units) out << ',' << tj.job.units;
    for (const DeviceType& d : devices) {
      auto t = tj.true_time.find(d);
      out << ',' << (t == tj.true_time.end() ? "" : csv_number(t->second));
    }
    for (const DeviceType& d : devices) {
      auto e = tj.job.time.find(d);
      const bool exact = e == tj.job.time.end() || e->second == tj.true_time.at(d);
      out << ',' << (exact ? "" : csv_number(e->second));
    }
    out << '\n';
  }
}

}  // namespace allox
