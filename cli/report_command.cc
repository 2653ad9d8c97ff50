// allox report RUN | --store DB: per-user fairness report (shares, queue, JCT, worst rho, Jain's
// index) from a simulation output (its jobs.csv, or the directory holding it) or from alloxd's
// SQLite store. A thin shell over fairness/report.h.
#include <ctime>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include "alloxd/config.h"
#include "alloxd/store/store.h"
#include "alloxd/web/reports.h"
#include "cli/commands.h"
#include "cli/exit.h"
#include "cli/number_checks.h"
#include "core/cluster_file.h"
#include "core/input_file.h"
#include "core/model.h"
#include "core/workload_file.h"
#include "fairness/jobs_csv.h"
#include "fairness/report.h"

namespace allox::cli {

namespace {

struct ReportArgs {
  std::string run;
  std::string store;
  std::string cluster;
  std::string config;  // alloxd.yaml: its nodes are the inventory
  std::string jobs;
  std::optional<double> now;
  double window = 3600;
  bool json = false;
};

// alloxd's job lifecycle as report rows; times are unix seconds, machines "node/device-slot".
Expected<std::vector<JobRun>> runs_from_store(const std::string& path) {
  // Read-only: a report never creates, migrates or writes a store (nor another application's
  // database given by mistake), and may read one a running alloxd writes.
  auto store = extender::Store::open_for_reading(path);
  if (!store) return store.error();
  auto state = (*store)->load();
  if (!state) return state.error();
  std::vector<JobRun> runs;
  for (const extender::JobRecord& j : state->jobs) {
    if (auto run = extender::report_run(j)) runs.push_back(std::move(*run));
  }
  return runs;
}

void run_report(const ReportArgs& args) {
  if (args.run.empty() && args.store.empty()) {
    std::cerr << "allox report: give a simulation output (RUN) or --store DB\n";
    fail();
  }
  std::string path = args.run;
  Expected<std::vector<JobRun>> runs = std::vector<JobRun>{};
  std::optional<double> now = args.now;
  if (!args.store.empty()) {
    path = args.store;
    runs = runs_from_store(path);
    // A live store's running jobs are still running: report them as of the wall clock.
    if (!now) now = static_cast<double>(std::time(nullptr));
  } else {
    if (std::filesystem::is_directory(path)) {
      path = (std::filesystem::path(path) / "jobs.csv").string();
    }
    runs = load_jobs_csv(path);
  }
  if (!runs) {
    std::cerr << runs.message() << "\n";
    fail();
  }
  // Machines a store's jobs happened to use are not the cluster: shares need its real size.
  if (!args.store.empty() && args.config.empty() && args.cluster.empty()) {
    std::cerr << "allox report --store: give the cluster's size with --config alloxd.yaml (its "
                 "nodes) or --cluster FILE\n";
    fail();
  }
  ReportInput input;
  input.jobs = std::move(*runs);
  input.now = now;
  input.window = args.window;
  if (!args.config.empty()) {
    // Read as any input (a pipe with a writer too), not as alloxd reads its own config at start-up.
    auto text = read_input_file(args.config);
    auto config = text ? extender::parse_extender_config(*text, args.config)
                       : Expected<extender::ExtenderConfig>(text.error());
    if (!config) {
      std::cerr << config.message() << "\n";
      fail();
    }
    if (config->nodes.empty()) {
      std::cerr << args.config << ": lists no nodes (an apiserver inventory is not in the file); "
                << "give the cluster with --cluster\n";
      fail();
    }
    for (const extender::NodeInventory& node : config->nodes) {
      for (const auto& [device, count] : node.machines) input.machines[device] += count;
    }
  } else if (!args.cluster.empty()) {
    auto cluster = load_cluster_file(args.cluster);
    if (!cluster) {
      std::cerr << cluster.message() << "\n";
      fail();
    }
    for (const Machine& m : cluster->machines) ++input.machines[m.device];
  } else {
    input.machines = machines_seen(input.jobs);
  }
  if (!args.jobs.empty()) {
    auto workload = load_workload_file(args.jobs, JobList::kMayBeEmpty);  // its users' weights
    if (!workload) {
      std::cerr << workload.message() << "\n";
      fail();
    }
    input.users = workload->users;
  }
  auto report = make_report(input);
  if (!report) {
    std::cerr << path << ": " << report.message() << "\n";
    fail();
  }
  if (args.json) {
    std::cout << report_json(*report) << "\n";
  } else {
    write_report_table(*report, std::cout);
  }
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Per-user fairness report (shares, queue, JCT, worst rho, Jain's index) of a simulation "
      "run or of alloxd's store");
  CLI::Option* run =
      cmd->add_option("run", args->run, "simulation output: jobs.csv or the directory holding it");
  CLI::Option* store = cmd->add_option("--store", args->store,
                                       "alloxd's SQLite store instead of a simulation output "
                                       "(report time: now, unless --now)");
  run->excludes(store);
  CLI::Option* cluster =
      cmd->add_option("--cluster", args->cluster,
                      "cluster file for machine counts (default: machines seen in a run)");
  cmd->add_option("--config", args->config, "alloxd.yaml whose nodes give the machine counts")
      ->excludes(cluster);
  cmd->add_option("--jobs", args->jobs, "jobs file whose users section gives the weights");
  // Both within the times an input may state, as solve --now: a report time of 1e308 printed
  // figures of 300 digits.
  cmd->add_option("--now", args->now, "report time in seconds (default: the run's last event)")
      ->check(number_in(0, kMaxInputSeconds, true));
  cmd->add_option("--window", args->window, "usage window in seconds")
      ->capture_default_str()
      ->check(number_in(0, kMaxInputSeconds));
  cmd->add_flag("--json", args->json, "print JSON instead of a table");
  cmd->callback([args] { run_report(*args); });
}

}  // namespace allox::cli
