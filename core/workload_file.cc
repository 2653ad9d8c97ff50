#include "core/workload_file.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "core/input_file.h"
#include "core/yaml_fields.h"

namespace allox {

namespace {

constexpr std::int64_t kMaxIterations = 1'000'000'000'000;

void read_user(FieldReader& reader, const YAML::Node& node, std::size_t index, Workload& workload) {
  const std::string subject = "users[" + std::to_string(index) + "]";
  if (!reader.check_map(node, subject, {"name", "weight"})) return;
  const auto name = reader.text(node, "name", subject, true);
  const auto weight =
      reader.positive(node, "weight", name ? "user \"" + *name + "\"" : subject, "shares", false);
  if (name) workload.users.push_back({*name, weight.value_or(1)});
}

void read_times(FieldReader& reader, const YAML::Node& node, const std::string& subject, Job& job) {
  const YAML::Node times = node["time"];
  if (!times || times.IsNull()) {
    reader.fail(node, subject, "time is required (device type -> seconds, e.g. {gpu: 60})");
    return;
  }
  if (!times.IsMap()) {
    reader.fail(times, subject,
                "time must map device types to seconds (e.g. {gpu: 60}), got " + describe(times));
    return;
  }
  for (const auto& entry : times) {
    const std::string device = entry.first.as<std::string>("");
    const std::string field = "time." + device;
    if (!reader.device_name(entry.first, subject, "device type in time", device)) continue;
    const auto seconds =
        reader.seconds_at(entry.second, subject, field, true);
    if (seconds) job.time[device] = *seconds;
  }
  if (times.size() == 0) {
    reader.fail(times, subject, "time is empty: the job can run on no device");
  }
}

std::optional<Job> read_job(FieldReader& reader, const YAML::Node& node, std::size_t index) {
  // Name the job by its id in every message, even about keys read before the id.
  std::string subject = "jobs[" + std::to_string(index) + "]";
  if (node.IsMap() && node["id"] && node["id"].IsScalar() && !node["id"].Scalar().empty()) {
    subject = "job \"" + node["id"].Scalar() + "\"";
  }
  if (!reader.check_map(node, subject,
                        {"id", "user", "arrival", "time", "iterations", "family", "units"})) {
    return std::nullopt;
  }
  Job job;
  const auto id = reader.text(node, "id", subject, true);
  const auto user = reader.text(node, "user", subject, false);
  const auto arrival = reader.seconds(node, "arrival", subject, false, false);
  const auto iterations = reader.integer(node, "iterations", subject, 1, kMaxIterations, false);
  const auto family = reader.text(node, "family", subject, false);
  const auto units = reader.integer(node, "units", subject, 1, kMaxUnits, false);
  read_times(reader, node, subject, job);
  if (!id) return std::nullopt;
  job.id = *id;
  job.user = user.value_or("default");
  job.arrival = arrival.value_or(0);
  job.iterations = iterations;
  job.family = family.value_or("");
  job.units = static_cast<int>(units.value_or(1));
  return job;
}

}  // namespace

Expected<Workload> parse_workload(const std::string& text, const std::string& source,
                                  JobList job_list) {
  auto root = parse_yaml(text, source);
  if (!root) return root.error();
  FieldReader reader(source);
  Workload workload;
  if (!reader.check_map(*root, "", {"users", "jobs"})) return reader.error();

  const auto users = reader.sequence(*root, "users", "");
  for (std::size_t i = 0; i < users.size(); ++i) read_user(reader, users[i], i, workload);
  const auto jobs = reader.sequence(*root, "jobs", "");
  std::set<std::string> job_ids;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    auto job = read_job(reader, jobs[i], i);
    if (!job) continue;
    if (!job_ids.insert(job->id).second) {
      reader.fail(jobs[i], "job \"" + job->id + "\"", "duplicate job id");
    }
    workload.jobs.push_back(std::move(*job));
  }

  std::set<std::string> user_names;
  for (std::size_t i = 0; i < workload.users.size(); ++i) {
    if (!user_names.insert(workload.users[i].name).second) {
      reader.fail(users[i], "user \"" + workload.users[i].name + "\"", "duplicate user name");
    }
  }
  for (const Job& job : workload.jobs) {
    if (user_names.insert(job.user).second) workload.users.push_back({job.user, 1});
  }
  // Only when nothing else is wrong: a list of bad jobs is not an empty one.
  if (reader.ok() && job_list == JobList::kRequired && workload.jobs.empty()) {
    reader.fail((*root)["jobs"] ? (*root)["jobs"] : *root, "",
                "the jobs file has no jobs: list at least one under jobs");
  }
  if (!reader.ok()) return reader.error();
  return workload;
}

Expected<Workload> load_workload_file(const std::string& path, JobList job_list) {
  auto text = read_input_file(path);
  if (!text) return text.error();
  return parse_workload(*text, path, job_list);
}

Status check_runnable(const Cluster& cluster, const Workload& workload, const std::string& source) {
  const auto available = cluster.device_types();
  const std::set<DeviceType> known(available.begin(), available.end());
  std::string known_list;
  for (const DeviceType& d : available) known_list += (known_list.empty() ? "" : ", ") + d;
  std::map<DeviceType, int> largest = largest_node_units(cluster.machines);
  std::string problems;
  for (const Job& job : workload.jobs) {
    int most = 0;
    for (const auto& [device, seconds] : job.time) {
      if (known.count(device) == 0) {
        problems += (problems.empty() ? "" : "\n") + source + ": job \"" + job.id +
                    "\": unknown device type \"" + device +
                    "\" in time (the cluster has: " + known_list + ")";
      } else {
        most = std::max(most, largest[device]);
      }
    }
    if (most > 0 && job.units > most) {
      problems +=
          (problems.empty() ? "" : "\n") + source + ": job \"" + job.id + "\": units " +
          std::to_string(job.units) +
          " is more than any node of its device types offers (largest: " + std::to_string(most) +
          ")";
    }
  }
  if (!problems.empty()) return Error{problems};
  return OkStatus();
}

}  // namespace allox
