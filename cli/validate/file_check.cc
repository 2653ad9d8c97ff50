#include "cli/validate/file_check.h"

#include <sstream>
#include <utility>

#include "alloxd/config.h"
#include "core/cluster_file.h"
#include "core/yaml_fields.h"
#include "sim/allox_trace.h"
#include "sim/trace_file.h"
#include "sim/trace_format.h"

namespace allox::cli {

namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A jobs file whose jobs say what the scheduler believes (`estimate`) is a simulation trace.
bool has_estimates(const YAML::Node& root) {
  // On a const node a missing key reads as an invalid node, which throws when asked its type.
  const YAML::Node jobs = root["jobs"];
  if (!jobs || !jobs.IsSequence()) return false;
  for (const YAML::Node& job : jobs) {
    if (job.IsMap() && job["estimate"]) return true;
  }
  return false;
}

// Parses a trace of any format; the summary line names what was read.
Expected<std::string> check_trace(const std::string& path, const std::string& text, FileKind kind,
                                  Checked& checked) {
  Expected<Trace> trace = Error{""};
  if (kind == FileKind::kAlloxTrace) {
    std::istringstream in(text);
    trace = parse_allox_trace(in, path);
  } else {
    trace =
        kind == FileKind::kCsvTrace ? parse_csv_trace(text, path) : parse_yaml_trace(text, path);
  }
  if (!trace) return trace.error();
  const std::string summary = "trace: " + std::to_string(trace->jobs.size()) + " jobs, " +
                              std::to_string(trace->users.size()) + " users";
  checked.traces.emplace_back(path, std::move(*trace));
  return summary;
}

Expected<std::string> check_alloxd_config(const std::string& path, const std::string& text) {
  auto config = extender::parse_extender_config(text, path);
  if (!config) return config.error();
  return "alloxd config: " + std::to_string(config->nodes.size()) + " nodes, policy " +
         config->policy;
}

// The summary line of a cluster or jobs file, kept for the cross-check of jobs against clusters.
Expected<std::string> check_model_file(const std::string& path, const std::string& text,
                                       FileKind kind, Checked& checked) {
  if (kind == FileKind::kCluster) {
    auto cluster = parse_cluster(text, path);
    if (!cluster) return cluster.error();
    const std::string summary = "cluster: " + std::to_string(cluster->machines.size()) +
                                " machines, " + std::to_string(cluster->device_types().size()) +
                                " device types";
    checked.cluster = std::move(*cluster);
    return summary;
  }
  auto workload = parse_workload(text, path);
  if (!workload) {
    // A file of users and no jobs key is what `allox report --jobs` reads for their weights:
    // valid for that, and said so, since the commands that plan refuse it. An empty `jobs: []`
    // stays a mistake.
    auto root = parse_yaml(text, path);
    if (!root || !root->IsMap() || (*root)["jobs"]) return workload.error();
    auto users = parse_workload(text, path, JobList::kMayBeEmpty);
    if (!users || users->users.empty()) return workload.error();
    return "users: " + std::to_string(users->users.size()) +
           " users and no jobs, for report --jobs; simulate, solve and plan need jobs";
  }
  const std::string summary = "jobs: " + std::to_string(workload->jobs.size()) + " jobs, " +
                              std::to_string(workload->users.size()) + " users";
  checked.workloads.emplace_back(path, std::move(*workload));
  return summary;
}

}  // namespace

// Tells the file's kind by --kind, its extension, or its content: the top-level keys of YAML,
// else the opening lines of the text formats (a pipe or /dev/stdin has no extension).
Expected<FileKind> detect_kind(const std::string& path, const std::string& text,
                               const std::string& forced) {
  if (forced == "cluster") return FileKind::kCluster;
  if (forced == "jobs") return FileKind::kJobs;
  if (forced == "trace") return FileKind::kTrace;
  if (forced == "alloxd") return FileKind::kAlloxdConfig;
  if (ends_with(path, ".txt")) return FileKind::kAlloxTrace;
  if (ends_with(path, ".csv")) return FileKind::kCsvTrace;
  auto root = parse_yaml(text, path);
  if (root && root->IsMap()) {
    if ((*root)["machines"] || (*root)["pools"]) return FileKind::kCluster;
    if ((*root)["listen"] || (*root)["nodes"] || (*root)["apiserver"]) {
      return FileKind::kAlloxdConfig;
    }
    if (has_estimates(*root)) return FileKind::kTrace;
    if ((*root)["jobs"] || (*root)["users"]) return FileKind::kJobs;
  }
  if (!root || !root->IsMap()) {
    if (looks_like_allox_trace(text)) return FileKind::kAlloxTrace;
    if (looks_like_csv_trace(text)) return FileKind::kCsvTrace;
  }
  if (!root) return root.error();
  // Nothing, blanks or comments, or `[]` (an empty `{}` is an alloxd config on every default).
  if (root->IsNull() || (root->IsSequence() && root->size() == 0)) {
    return Error{path + ":1: the file " + (root->IsNull() ? "is empty" : "is an empty list") +
                 ": expected a cluster, a jobs file, a trace or an alloxd config"};
  }
  return Error{path +
               ":1: cannot tell what this file is: expected a cluster (top-level machines or "
               "pools), a jobs file or trace (top-level jobs or users), or an alloxd config "
               "(listen, nodes); use --kind to say"};
}

Expected<std::string> check_text(const std::string& path, const std::string& text,
                                 const std::string& forced, Checked& checked) {
  auto kind = detect_kind(path, text, forced);
  if (!kind) return kind.error();
  switch (*kind) {
    case FileKind::kCluster:
    case FileKind::kJobs:
      return check_model_file(path, text, *kind, checked);
    case FileKind::kAlloxdConfig:
      return check_alloxd_config(path, text);
    case FileKind::kTrace:
    case FileKind::kAlloxTrace:
    case FileKind::kCsvTrace:
      return check_trace(path, text, *kind, checked);
  }
  return Error{path + ": unknown kind"};
}

std::vector<Error> check_jobs_runnable(const Checked& checked) {
  std::vector<Error> errors;
  if (!checked.cluster) return errors;
  for (const auto& [path, workload] : checked.workloads) {
    if (auto runnable = check_runnable(*checked.cluster, workload, path); !runnable) {
      errors.push_back(Error{runnable.message()});
    }
  }
  for (const auto& [path, trace] : checked.traces) {
    if (Status runnable = check_trace_runnable(trace, *checked.cluster); !runnable.ok()) {
      errors.push_back(Error{path + ": " + runnable.message()});
    }
  }
  return errors;
}

}  // namespace allox::cli
