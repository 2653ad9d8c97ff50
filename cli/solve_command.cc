// allox solve: plans a queue exactly (matcher/matcher.h) and prints the schedule, as JSON for
// programs or as a per-machine table for people. A thin shell: load, solve, render. A jobs file
// with a job of several units is planned by matcher/multi_unit.h instead: a feasible plan with
// its lower bound and gap, one row per job naming its units.
#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/exit.h"
#include "cli/number_checks.h"
#include "core/cluster_file.h"
#include "core/workload_file.h"
#include "matcher/matcher.h"
#include "matcher/multi_unit.h"

namespace allox::cli {
namespace {

struct SolveArgs {
  std::string cluster;
  std::string jobs;
  std::string backend = "auto";
  double now = 0;
  std::string format = "json";
};

void print_json(const Cluster& cluster, const Workload& workload, const matcher::Schedule& plan,
                double solve_ms) {
  nlohmann::ordered_json out;
  out["objective"] = plan.objective;
  out["backend"] = matcher::backend_name(plan.backend);
  out["solve_ms"] = solve_ms;
  out["assignments"] = nlohmann::ordered_json::array();
  const auto queues = matcher::machine_queues(plan, cluster.machines.size());
  for (std::size_t m = 0; m < queues.size(); ++m) {
    for (std::size_t job : queues[m]) {
      const matcher::Assignment& a = plan.assignments[job];
      out["assignments"].push_back({{"job", workload.jobs[job].id},
                                    {"machine", cluster.machines[m].name},
                                    {"device", cluster.machines[m].device},
                                    {"position", a.position},
                                    {"start", a.start},
                                    {"finish", a.finish}});
    }
  }
  std::cout << out.dump(2) << "\n";
}

std::string seconds(double value) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(3) << value;
  return out.str();
}

void print_table(const Cluster& cluster, const Workload& workload, const matcher::Schedule& plan,
                 double solve_ms, double now) {
  std::cout << workload.jobs.size() << " jobs on " << cluster.machines.size()
            << " machines, planned at t = " << seconds(now) << " s by "
            << matcher::backend_name(plan.backend) << " in " << seconds(solve_ms) << " ms\n"
            << "total completion time (sum of finish - now): " << seconds(plan.objective)
            << " s\n\n";
  std::cout << std::left << std::setw(16) << "machine" << std::setw(10) << "device" << std::right
            << std::setw(4) << "pos"
            << "  " << std::left << std::setw(20) << "job" << std::right << std::setw(12) << "start"
            << std::setw(12) << "finish"
            << "\n";
  const auto queues = matcher::machine_queues(plan, cluster.machines.size());
  for (std::size_t m = 0; m < queues.size(); ++m) {
    const Machine& machine = cluster.machines[m];
    if (queues[m].empty()) {
      std::cout << std::left << std::setw(16) << machine.name << std::setw(10) << machine.device
                << "   -  (no queued job)\n";
      continue;
    }
    for (std::size_t job : queues[m]) {
      const matcher::Assignment& a = plan.assignments[job];
      std::cout << std::left << std::setw(16) << machine.name << std::setw(10) << machine.device
                << std::right << std::setw(4) << a.position << "  " << std::left << std::setw(20)
                << workload.jobs[job].id << std::right << std::setw(12) << seconds(a.start)
                << std::setw(12) << seconds(a.finish) << "\n";
    }
  }
}

// Jobs of several units: one entry per job with its units, in start order.
void print_gangs(const Cluster& cluster, const Workload& workload,
                 const matcher::GangSchedule& plan, double solve_ms, bool table) {
  std::vector<std::size_t> order(plan.assignments.size());
  for (std::size_t j = 0; j < order.size(); ++j) order[j] = j;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return plan.assignments[a].start < plan.assignments[b].start;
  });
  auto node_of = [&](const matcher::GangAssignment& a) {
    const Machine& m = cluster.machines[a.machines.front()];
    return m.node.empty() ? m.name : m.node;
  };
  if (!table) {
    nlohmann::ordered_json out;
    out["objective"] = plan.objective;
    out["lower_bound"] = plan.lower_bound;
    out["gap"] = plan.gap();
    out["exact"] = plan.exact;
    out["solve_ms"] = solve_ms;
    out["assignments"] = nlohmann::ordered_json::array();
    for (std::size_t j : order) {
      const matcher::GangAssignment& a = plan.assignments[j];
      nlohmann::ordered_json units = nlohmann::ordered_json::array();
      for (std::size_t m : a.machines) units.push_back(cluster.machines[m].name);
      out["assignments"].push_back({{"job", workload.jobs[j].id},
                                    {"node", node_of(a)},
                                    {"device", cluster.machines[a.machines.front()].device},
                                    {"machines", units},
                                    {"start", a.start},
                                    {"finish", a.finish}});
    }
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::cout << workload.jobs.size() << " jobs of several units on " << cluster.machines.size()
            << " machines, planned in " << seconds(solve_ms) << " ms\n"
            << "total completion time (sum of finish - now): " << seconds(plan.objective)
            << " s, lower bound " << seconds(plan.lower_bound) << " s (gap "
            << seconds(100 * plan.gap()) << "%)\n\n";
  std::cout << std::left << std::setw(20) << "job" << std::setw(16) << "node" << std::setw(10)
            << "device" << std::right << std::setw(6) << "units" << std::setw(12) << "start"
            << std::setw(12) << "finish\n";
  for (std::size_t j : order) {
    const matcher::GangAssignment& a = plan.assignments[j];
    std::cout << std::left << std::setw(20) << workload.jobs[j].id << std::setw(16) << node_of(a)
              << std::setw(10) << cluster.machines[a.machines.front()].device << std::right
              << std::setw(6) << a.machines.size() << std::setw(12) << seconds(a.start)
              << std::setw(12) << seconds(a.finish) << "\n";
  }
}

template <class T>
T or_fail(Expected<T> value) {
  return value_or_fail(std::move(value), "allox solve");
}

void run_solve(const SolveArgs& args) {
  const Cluster cluster = or_fail(load_cluster_file(args.cluster));
  const Workload workload = or_fail(load_workload_file(args.jobs));
  const matcher::Backend backend = or_fail(matcher::parse_backend(args.backend));
  const auto start = std::chrono::steady_clock::now();
  if (std::any_of(workload.jobs.begin(), workload.jobs.end(),
                  [](const Job& job) { return job.units > 1; })) {
    std::vector<matcher::GangJob> jobs;
    for (const Job& job : workload.jobs) jobs.push_back({&job.id, &job.time, job.units});
    const matcher::GangSchedule plan = or_fail(matcher::solve_gangs(
        {.now = args.now, .machines = cluster.machines, .jobs = jobs}, {.backend = backend}));
    const double solve_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    print_gangs(cluster, workload, plan, solve_ms, args.format == "table");
    return;
  }
  const std::vector<matcher::PendingJob> pending = matcher::pending_jobs(workload.jobs);
  const matcher::MatchingProblem problem{args.now, cluster.machines, pending, {}};

  const matcher::Schedule plan = or_fail(matcher::solve(problem, {.backend = backend}));
  const double solve_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  if (args.format == "table") {
    print_table(cluster, workload, plan, solve_ms, args.now);
  } else {
    print_json(cluster, workload, plan, solve_ms);
  }
}

}  // namespace

void add_solve_command(CLI::App& app) {
  auto args = std::make_shared<SolveArgs>();
  auto* cmd = app.add_subcommand(
      "solve",
      "Plan every job of a jobs file on a cluster, minimising total completion time exactly "
      "(all jobs are taken as queued at --now; arrival times are not used). Prints the "
      "schedule: JSON with objective, backend, solve_ms and assignments (position 1 runs first "
      "on its machine), or a per-machine table.");
  cmd->add_option("--cluster", args->cluster, "cluster.yaml (or JSON)")->required();
  cmd->add_option("--jobs", args->jobs, "jobs.yaml (or JSON)")->required();
  cmd->add_option("--backend", args->backend, "min-cost flow solver")
      ->check(CLI::IsMember({"auto", "lemon", "boost", "glpk", "transport", "assignment"}))
      ->capture_default_str();
  cmd->add_option("--now", args->now,
                  "planning time in seconds; machines busy until a later "
                  "time start their queue then")
      ->check(number_in(0, kMaxInputSeconds, true))
      ->capture_default_str();
  cmd->add_option("--format", args->format, "json or table")
      ->check(CLI::IsMember({"json", "table"}))
      ->capture_default_str();
  cmd->callback([args] { run_solve(*args); });
}

}  // namespace allox::cli
