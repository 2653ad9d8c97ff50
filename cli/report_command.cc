// allox report RUN: per-user fairness report (shares, queue, JCT, worst rho, Jain's index) from
// a simulation output (its jobs.csv, or the directory holding it). A thin shell over
// fairness/report.h.
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/exit.h"
#include "core/cluster_file.h"
#include "core/workload_file.h"
#include "fairness/jobs_csv.h"
#include "fairness/report.h"

namespace allox::cli {

namespace {

struct ReportArgs {
  std::string run;
  std::string cluster;
  std::string jobs;
  std::optional<double> now;
  double window = 3600;
  bool json = false;
};

void run_report(const ReportArgs& args) {
  std::string path = args.run;
  if (std::filesystem::is_directory(path))
    path = (std::filesystem::path(path) / "jobs.csv").string();
  auto runs = load_jobs_csv(path);
  if (!runs) {
    std::cerr << runs.message() << "\n";
    fail();
  }
  ReportInput input;
  input.jobs = std::move(*runs);
  input.now = args.now;
  input.window = args.window;
  if (!args.cluster.empty()) {
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
    auto workload = load_workload_file(args.jobs);
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
      "report", "Per-user fairness report (shares, queue, JCT, worst rho, Jain's index) of a run");
  cmd->add_option("run", args->run, "simulation output: jobs.csv or the directory holding it")
      ->required();
  cmd->add_option("--cluster", args->cluster,
                  "cluster file for machine counts (default: machines seen in the run)");
  cmd->add_option("--jobs", args->jobs, "jobs file whose users section gives the weights");
  cmd->add_option("--now", args->now, "report time in seconds (default: the run's last event)");
  cmd->add_option("--window", args->window, "usage window in seconds")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", args->json, "print JSON instead of a table");
  cmd->callback([args] { run_report(*args); });
}

}  // namespace allox::cli
