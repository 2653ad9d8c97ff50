// allox validate FILE...: checks input files and says what is wrong with each, precisely.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/exit.h"
#include "core/cluster_file.h"
#include "core/input_file.h"
#include "core/workload_file.h"
#include "core/yaml_fields.h"

namespace allox::cli {

namespace {

enum class FileKind { kCluster, kJobs };

// Tells a cluster file from a jobs file by its top-level keys.
Expected<FileKind> detect_kind(const std::string& path, const std::string& forced) {
  if (forced == "cluster") return FileKind::kCluster;
  if (forced == "jobs") return FileKind::kJobs;
  auto text = read_input_file(path);
  if (!text) return text.error();
  auto root = parse_yaml(*text, path);
  if (!root) return root.error();
  if (root->IsMap()) {
    if ((*root)["machines"] || (*root)["pools"]) return FileKind::kCluster;
    if ((*root)["jobs"] || (*root)["users"]) return FileKind::kJobs;
  }
  return Error{path +
               ":1: cannot tell what this file is: expected a cluster (top-level machines or "
               "pools) or a jobs file (top-level jobs or users); use --kind to say"};
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
      "Check cluster and jobs files (YAML or JSON). With a cluster among them, also check that "
      "every job can run on it. Exit status 1 if any file is rejected.");
  auto files = std::make_shared<std::vector<std::string>>();
  auto kind = std::make_shared<std::string>();
  cmd->add_option("files", *files, "cluster.yaml / jobs.yaml files")->required();
  cmd->add_option("--kind", *kind, "treat every file as this kind instead of guessing")
      ->check(CLI::IsMember({"cluster", "jobs"}));
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
