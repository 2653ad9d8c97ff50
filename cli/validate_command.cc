// allox validate FILE...: checks input files and says what is wrong with each, precisely.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
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

// Tells the file's kind by its extension or its top-level keys.
Expected<FileKind> detect_kind(const std::string& path, const std::string& forced) {
  if (forced == "cluster") return FileKind::kCluster;
  if (forced == "jobs") return FileKind::kJobs;
  if (forced == "trace") return FileKind::kTrace;
  if (forced == "alloxd") return FileKind::kAlloxdConfig;
  if (ends_with(path, ".txt")) return FileKind::kAlloxTrace;
  if (ends_with(path, ".csv")) return FileKind::kCsvTrace;
  auto text = read_input_file(path);
  if (!text) return text.error();
  auto root = parse_yaml(*text, path);
  if (!root) return root.error();
  if (root->IsMap()) {
    if ((*root)["machines"] || (*root)["pools"]) return FileKind::kCluster;
    if ((*root)["listen"] || (*root)["nodes"] || (*root)["apiserver"]) {
      return FileKind::kAlloxdConfig;
    }
    if (has_estimates(*root)) return FileKind::kTrace;
    if ((*root)["jobs"] || (*root)["users"]) return FileKind::kJobs;
  }
  return Error{path +
               ":1: cannot tell what this file is: expected a cluster (top-level machines or "
               "pools), a jobs file or trace (top-level jobs or users), or an alloxd config "
               "(listen, nodes); use --kind to say"};
}

// Loads a trace of any format; the summary line names what was read.
Expected<std::string> check_trace(const std::string& path, FileKind kind) {
  auto trace = kind == FileKind::kAlloxTrace ? load_allox_trace(path)
               : kind == FileKind::kCsvTrace ? load_csv_trace(path)
                                             : load_yaml_trace(path);
  if (!trace) return trace.error();
  return "trace: " + std::to_string(trace->jobs.size()) + " jobs, " +
         std::to_string(trace->users.size()) + " users";
}

Expected<std::string> check_alloxd_config(const std::string& path) {
  auto config = extender::load_extender_config(path);
  if (!config) return config.error();
  return "alloxd config: " + std::to_string(config->nodes.size()) + " nodes, policy " +
         config->policy;
}

struct Checked {
  std::optional<Cluster> cluster;
  std::vector<std::pair<std::string, Workload>> workloads;
  bool all_valid = true;
};

void check_file(const std::string& path, const std::string& forced, Checked& checked) {
  auto kind = detect_kind(path, forced);
  if (!kind) {
    std::cerr << kind.message() << "\n";
    checked.all_valid = false;
    return;
  }
  if (*kind != FileKind::kCluster && *kind != FileKind::kJobs) {
    auto summary =
        *kind == FileKind::kAlloxdConfig ? check_alloxd_config(path) : check_trace(path, *kind);
    if (!summary) {
      std::cerr << summary.message() << "\n";
      checked.all_valid = false;
      return;
    }
    std::cout << "ok: " << path << " (" << *summary << ")\n";
    return;
  }
  if (*kind == FileKind::kCluster) {
    auto cluster = load_cluster_file(path);
    if (!cluster) {
      std::cerr << cluster.message() << "\n";
      checked.all_valid = false;
      return;
    }
    std::cout << "ok: " << path << " (cluster: " << cluster->machines.size() << " machines, "
              << cluster->device_types().size() << " device types)\n";
    checked.cluster = std::move(*cluster);
    return;
  }
  auto workload = load_workload_file(path);
  if (!workload) {
    std::cerr << workload.message() << "\n";
    checked.all_valid = false;
    return;
  }
  std::cout << "ok: " << path << " (jobs: " << workload->jobs.size() << " jobs, "
            << workload->users.size() << " users)\n";
  checked.workloads.emplace_back(path, std::move(*workload));
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "validate",
      "Check cluster and jobs files (YAML or JSON), simulation traces (YAML, CSV, AlloX .txt) and "
      "alloxd configs. With a cluster among them, also check that every job can run on it. Exit "
      "status 1 if any file is rejected.");
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
