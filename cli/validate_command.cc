// allox validate FILE...: checks input files and says what is wrong with each, precisely.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "alloxd/config.h"
#include "cli/commands.h"
#include "cli/exit.h"
#include "core/cluster_file.h"
#include "core/input_file.h"
#include "core/workload_file.h"
#include "core/yaml_fields.h"
#include "sim/allox_trace.h"
#include "sim/trace_file.h"
#include "sim/trace_format.h"

namespace allox::cli {

namespace {

enum class FileKind { kCluster, kJobs, kTrace, kAlloxTrace, kCsvTrace, kAlloxdConfig };

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A jobs file whose jobs say what the scheduler believes (`estimate`) is a simulation trace.
bool has_estimates(const YAML::Node& root) {
  const YAML::Node jobs = root["jobs"];
  if (!jobs.IsSequence()) return false;
  for (const YAML::Node& job : jobs) {
    if (job.IsMap() && job["estimate"]) return true;
  }
  return false;
}

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

// Parses a trace of any format; the summary line names what was read.
Expected<std::string> check_trace(const std::string& path, const std::string& text,
                                  FileKind kind) {
  Expected<Trace> trace = Error{""};
  if (kind == FileKind::kAlloxTrace) {
    std::istringstream in(text);
    trace = parse_allox_trace(in, path);
  } else {
    trace = kind == FileKind::kCsvTrace ? parse_csv_trace(text, path) : parse_yaml_trace(text, path);
  }
  if (!trace) return trace.error();
  return "trace: " + std::to_string(trace->jobs.size()) + " jobs, " +
         std::to_string(trace->users.size()) + " users";
}

Expected<std::string> check_alloxd_config(const std::string& path, const std::string& text) {
  auto config = extender::parse_extender_config(text, path);
  if (!config) return config.error();
  return "alloxd config: " + std::to_string(config->nodes.size()) + " nodes, policy " +
         config->policy;
}

struct Checked {
  std::optional<Cluster> cluster;
  std::vector<std::pair<std::string, Workload>> workloads;
  bool all_valid = true;
};

// The summary line of a cluster or jobs file, kept for the cross-check of jobs against clusters.
Expected<std::string> check_model_file(const std::string& path, const std::string& text,
                                       FileKind kind, Checked& checked) {
  if (kind == FileKind::kCluster) {
    auto cluster = parse_cluster(text, path);
    if (!cluster) return cluster.error();
    const std::string summary = "cluster: " + std::to_string(cluster->machines.size()) +
                                " machines, " +
                                std::to_string(cluster->device_types().size()) + " device types";
    checked.cluster = std::move(*cluster);
    return summary;
  }
  auto workload = parse_workload(text, path);
  if (!workload) return workload.error();
  const std::string summary = "jobs: " + std::to_string(workload->jobs.size()) + " jobs, " +
                              std::to_string(workload->users.size()) + " users";
  checked.workloads.emplace_back(path, std::move(*workload));
  return summary;
}

// Reads the file once (a pipe, `<(command)` or /dev/stdin gives its text only once) and checks
// that text as the kind it is.
void check_file(const std::string& path, const std::string& forced, Checked& checked) {
  Expected<std::string> summary = Error{""};
  if (auto text = read_input_file(path); !text) {
    summary = text.error();
  } else if (auto kind = detect_kind(path, *text, forced); !kind) {
    summary = kind.error();
  } else if (*kind == FileKind::kCluster || *kind == FileKind::kJobs) {
    summary = check_model_file(path, *text, *kind, checked);
  } else if (*kind == FileKind::kAlloxdConfig) {
    summary = check_alloxd_config(path, *text);
  } else {
    summary = check_trace(path, *text, *kind);
  }
  if (!summary) {
    std::cerr << summary.message() << "\n";
    checked.all_valid = false;
    return;
  }
  std::cout << "ok: " << path << " (" << *summary << ")\n";
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "validate",
      "Check cluster and jobs files (YAML or JSON), simulation traces (YAML, CSV, AlloX .txt) and "
      "alloxd configs. With a cluster among them, also check that every job can run on it. Each "
      "file is read once, so a pipe works (<(command), /dev/stdin); its kind comes from --kind, "
      "its extension or its content. Exit status 1 if any file is rejected.");
  auto files = std::make_shared<std::vector<std::string>>();
  auto kind = std::make_shared<std::string>();
  cmd->add_option("files", *files, "files to check")->required();
  cmd->add_option("--kind", *kind, "treat every file as this kind instead of guessing")
      ->check(CLI::IsMember({"cluster", "jobs", "trace", "alloxd"}));
  cmd->callback([files, kind] {
    Checked checked;
    for (const std::string& path : *files) check_file(path, *kind, checked);
    if (checked.cluster) {
      for (const auto& [path, workload] : checked.workloads) {
        auto runnable = check_runnable(*checked.cluster, workload, path);
        if (!runnable) {
          std::cerr << runnable.message() << "\n";
          checked.all_valid = false;
        }
      }
    }
    if (!checked.all_valid) fail();
  });
}

}  // namespace allox::cli
