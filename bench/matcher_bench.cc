#include "bench/matcher_bench.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <string_view>

#include "fairness/policy.h"
#include "matcher/online.h"

namespace allox::matcher::bench {
namespace {

// What a child process sends back through its pipe.
struct ChildReport {
  bool ok = false;
  double solve_ms = 0;
  double cpu_ms = 0;
  std::size_t arcs = 0;
  std::size_t model_arcs = 0;
  int rounds = 0;
  double objective = 0;
  char error[256] = {};
};

double cpu_now_ms() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since)
      .count();
}

// The job book's snapshot of `instance` as alloxd's planner sees it: every busy machine runs a
// job whose estimate ends at busy_until, except every 50th, whose estimate ran out (free by now
// in the plan, but it cannot start a job); queued jobs round robin over kPolicyUsers users.
struct PolicyInstance {
  std::vector<Job> queued;
  std::deque<Job> running;
  ClusterState state;
};

constexpr std::size_t kPolicyUsers = 8;
constexpr double kStarvationBound = 3600;  // alloxd's default (alloxd/config.h)

PolicyInstance policy_instance(const BenchInstance& instance, double starved) {
  PolicyInstance out;
  ClusterState& state = out.state;
  state.now = instance.now;
  state.machines = instance.machines;
  out.queued = instance.jobs;
  for (std::size_t j = 0; j < out.queued.size(); ++j) {
    out.queued[j].user = "user" + std::to_string(j % kPolicyUsers);
  }
  for (std::size_t m = 0; m < state.machines.size(); ++m) {
    Machine& machine = state.machines[m];
    const bool busy = machine.busy_until > state.now;
    if (busy && m % 50 == 0) machine.busy_until = state.now;  // its estimate ran out
    state.idle.push_back(!busy);
    if (!busy) continue;
    Job& job = out.running.emplace_back();
    job.id = "running-" + std::to_string(m);
    job.user = "user" + std::to_string(m % kPolicyUsers);
    job.time[machine.device] = machine.busy_until - state.now;
    state.running.push_back({&job, m, state.now, machine.busy_until, 0});
  }
  const auto starved_jobs =
      static_cast<std::size_t>(starved * static_cast<double>(out.queued.size()));
  for (std::size_t j = 0; j < out.queued.size(); ++j) {
    const double since = j < starved_jobs ? state.now - 2 * kStarvationBound : state.now;
    state.queue.push_back({&out.queued[j], since, 0, {}});
  }
  return out;
}

// Applies a decision's starts to the snapshot, as the job book would once they bind.
void apply_starts(ClusterState& state, const Decision& decision) {
  std::map<std::string_view, std::size_t> started;
  for (const Placement& p : decision.start) started.emplace(p.job_id, p.machine);
  std::vector<QueuedJob> left;
  for (QueuedJob& queued : state.queue) {
    auto it = started.find(queued.job->id);
    if (it == started.end()) {
      left.push_back(std::move(queued));
      continue;
    }
    Machine& machine = state.machines[it->second];
    machine.busy_until = state.now + queued.job->time.at(machine.device);
    state.idle[it->second] = false;
    state.running.push_back({queued.job, it->second, state.now, machine.busy_until, 0});
  }
  state.queue = std::move(left);
}

// The busy machine that frees first finishes its job: the clock moves there.
void finish_first(ClusterState& state) {
  auto first = std::min_element(state.running.begin(), state.running.end(),
                                [](const RunningJob& a, const RunningJob& b) {
                                  return a.estimated_finish < b.estimated_finish;
                                });
  if (first == state.running.end()) return;
  state.now = std::max(state.now, first->estimated_finish);
  state.idle[first->machine] = true;
  state.running.erase(first);
}

ChildReport measure_policy(const BenchCase& bench_case, const BenchOptions& options) {
  ChildReport report;
  const BenchInstance instance = make_instance(bench_case, options.seed);
  PolicyOptions policy_options;
  policy_options.alpha = 0.5;
  policy_options.batch_rounds = true;
  policy_options.starvation_bound = kStarvationBound;
  policy_options.matcher_backend = backend_name(options.backend);
  std::vector<double> times;
  std::vector<double> cpu_times;
  for (int r = 0; r < options.repetitions; ++r) {
    PolicyInstance snapshot = policy_instance(instance, bench_case.starved);
    Expected<std::unique_ptr<SchedulingPolicy>> policy = make_policy("allox", policy_options);
    if (!policy.ok()) {
      std::snprintf(report.error, sizeof report.error, "%s", policy.message().c_str());
      return report;
    }
    if (bench_case.warm) {
      Expected<Decision> before = (*policy)->decide(snapshot.state);
      if (!before.ok()) {
        std::snprintf(report.error, sizeof report.error, "%s", before.message().c_str());
        return report;
      }
      apply_starts(snapshot.state, *before);
      finish_first(snapshot.state);
    }
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = cpu_now_ms();
    Expected<Decision> decision = (*policy)->decide(snapshot.state);
    cpu_times.push_back(cpu_now_ms() - cpu_start);
    times.push_back(elapsed_ms(start));
    if (!decision.ok()) {
      std::snprintf(report.error, sizeof report.error, "%s", decision.message().c_str());
      return report;
    }
  }
  report.solve_ms = median(times);
  report.cpu_ms = median(cpu_times);
  report.ok = true;
  return report;
}

ChildReport measure_in_process(const BenchCase& bench_case, const BenchOptions& options,
                               bool naive) {
  if (bench_case.policy) return measure_policy(bench_case, options);
  ChildReport report;
  BenchInstance instance = make_instance(bench_case, options.seed);
  // The assignment solver has no naive graph; LEMON solves it as the reference.
  const Backend backend =
      naive && options.backend == Backend::kAssignment ? Backend::kLemon : options.backend;
  SolveOptions solve_options{.backend = backend, .naive_graph = naive};
  // A warm planner solved the queue before the arrival; each repetition starts from that memory.
  PriceMemory warmed;
  if (bench_case.warm) {
    const std::vector<PendingJob> before(instance.pending.begin(), instance.pending.end() - 1);
    const MatchingProblem earlier{instance.now, instance.machines, before, {}};
    solve_options.memory = &warmed;
    if (!solve(earlier, solve_options).ok()) return report;
  }
  std::vector<double> times;
  std::vector<double> cpu_times;
  for (int r = 0; r < options.repetitions; ++r) {
    Expected<Schedule> plan = Error{""};
    if (bench_case.online) {
      // The queue was planned before; one more job arrives and the queue is re-planned.
      PriceMemory memory = warmed;
      if (bench_case.warm) solve_options.memory = &memory;
      const auto start = std::chrono::steady_clock::now();
      const double cpu_start = cpu_now_ms();
      Expected<OnlineDecision> decision = decide_online(instance.problem(), solve_options);
      cpu_times.push_back(cpu_now_ms() - cpu_start);
      times.push_back(elapsed_ms(start));
      if (!decision.ok()) {
        std::snprintf(report.error, sizeof report.error, "%s", decision.message().c_str());
        return report;
      }
      report.objective = decision->objective;
      memory = warmed;
      plan = solve(instance.problem(), solve_options);  // for the statistics only
    } else {
      const auto start = std::chrono::steady_clock::now();
      const double cpu_start = cpu_now_ms();
      plan = solve(instance.problem(), solve_options);
      cpu_times.push_back(cpu_now_ms() - cpu_start);
      times.push_back(elapsed_ms(start));
    }
    if (!plan.ok()) {
      std::snprintf(report.error, sizeof report.error, "%s", plan.message().c_str());
      return report;
    }
    report.arcs = plan->stats.arcs;
    report.model_arcs = plan->stats.model_arcs;
    report.rounds = plan->stats.rounds;
    report.objective = plan->objective;
  }
  report.solve_ms = median(times);
  report.cpu_ms = median(cpu_times);
  report.ok = true;
  return report;
}

Expected<Measurement> measure(const BenchCase& bench_case, const BenchOptions& options,
                              bool naive) {
  int fds[2];
  if (pipe(fds) != 0) return Error{std::string("pipe: ") + std::strerror(errno)};
  const pid_t child = fork();
  if (child < 0) return Error{std::string("fork: ") + std::strerror(errno)};
  if (child == 0) {
    close(fds[0]);
    const ChildReport report = measure_in_process(bench_case, options, naive);
    const bool written = write(fds[1], &report, sizeof report) == sizeof report;
    _exit(written ? 0 : 1);
  }
  close(fds[1]);
  ChildReport report;
  const bool got = read(fds[0], &report, sizeof report) == sizeof report;
  close(fds[0]);
  int status = 0;
  rusage usage{};
  wait4(child, &status, 0, &usage);
  if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Error{"benchmark " + bench_case.name + ": the measuring process died"};
  }
  if (!report.ok) return Error{"benchmark " + bench_case.name + ": " + report.error};
  return Measurement{
      report.solve_ms, report.cpu_ms,     static_cast<double>(usage.ru_maxrss) / 1024.0,
      report.arcs,     report.model_arcs, report.rounds,
      report.objective};
}

}  // namespace

BenchInstance make_instance(const BenchCase& bench_case, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  BenchInstance instance;
  const std::size_t types = bench_case.distinct ? bench_case.machines : bench_case.types;
  std::vector<std::string> devices;
  for (std::size_t t = 0; t < types; ++t) devices.push_back("d" + std::to_string(t));
  if (bench_case.gpu_nodes) {
    devices = types == 2 ? std::vector<std::string>{"cpu", "gpu"}
                         : std::vector<std::string>{"cpu", "k80", "p100", "v100"};
    devices.resize(types);
  }
  for (std::size_t m = 0; m < bench_case.machines; ++m) {
    Machine machine;
    machine.name = "m" + std::to_string(m);
    if (bench_case.gpu_nodes) {
      const std::size_t node = m / 10;
      machine.device = m % 10 < 8 ? devices[1 + node % (types - 1)] : devices[0];
    } else {
      machine.device = devices[m * types / bench_case.machines];
    }
    if (unit(rng) < bench_case.busy) machine.busy_until = std::round(unit(rng) * 600'000) / 1000;
    instance.machines.push_back(machine);
  }
  // Per type a base speed; per job a size and a per-type affinity.
  std::vector<double> type_speed(types);
  for (double& speed : type_speed) speed = 0.3 + 1.7 * unit(rng);
  if (bench_case.gpu_nodes) type_speed[0] = 0.1 + 0.2 * unit(rng);  // a CPU bundle
  const std::size_t jobs = bench_case.jobs + (bench_case.online ? 1 : 0);
  for (std::size_t j = 0; j < jobs; ++j) {
    Job job;
    job.id = "j" + std::to_string(j);
    const double size = 60 * std::exp(unit(rng) * std::log(180.0));  // 1 min .. 3 h
    for (std::size_t t = 0; t < types; ++t) {
      const double affinity = 0.5 + unit(rng);
      job.time[devices[t]] = std::round(size * affinity / type_speed[t] * 1000) / 1000;
    }
    instance.jobs.push_back(std::move(job));
  }
  instance.pending = pending_jobs(instance.jobs);
  return instance;
}

std::vector<BenchCase> standard_cases() {
  return {
      {"3 types, identical", 200, 20, 3, false, 0, false, false, true},
      {"3 types, identical", 1'000, 100, 3, false, 0, false, false, true},
      {"3 types, identical", 10'000, 1'000, 3, false, 0, false, false, true, false, 100,
       "matcher, 10,000 jobs x 1,000 machines in 3 types"},
      {"all distinct", 200, 20, 0, true, 1, false, false, true},
      {"all distinct", 500, 50, 0, true, 1, false, false, true},
      {"all distinct", 2'000, 100, 0, true, 1, false, false, true, false, 250,
       "matcher, 2,000 jobs x 100 distinct machines"},
      {"re-plan 1 arrival, half busy, cold", 1'000, 100, 3, false, 0.5, true, false, true},
      {"re-plan 1 arrival, half busy, warm", 1'000, 100, 3, false, 0.5, true, true, false},
      {"re-plan 1 arrival, all distinct, cold", 1'000, 100, 0, true, 1, true, false, false},
      {"re-plan 1 arrival, all distinct, warm", 1'000, 100, 0, true, 1, true, true, false},
      {"re-plan 1 arrival, half busy, cold", 10'000, 1'000, 3, false, 0.5, true, false, false},
      {"re-plan 1 arrival, half busy, warm", 10'000, 1'000, 3, false, 0.5, true, true, false, false,
       20, "re-plan after one arrival, warm, 10,000 queued"},
      {"5,000 nodes x (8 GPUs + 2 CPUs)", 50'000, 50'000, 4, false, 0, false, false, false, true,
       1'000, "plan at 50,000 queued on 5,000 nodes"},
      {"5,000 nodes, 1 arrival, warm", 50'000, 50'000, 4, false, 0, true, true, false, true},
      // alloxd's input at 5,000 nodes: one GPU type and CPU bundles, most machines busy, each
      // until its own time (a group per machine).
      {"5,000 nodes, 95% busy, distinct", 50'000, 50'000, 2, false, 0.95, false, false, false, true,
       1'000, "plan at 50,000 queued, 5,000 busy nodes"},
      {"alloxd 5,000: backlog", 50'000, 50'000, 2, false, 0.1, false, false, false, true, 0, "",
       true},
      {"alloxd 5,000: backlog, half starved", 50'000, 50'000, 2, false, 0.1, false, false, false,
       true, 1'000, "alloxd decide at 50,000 queued", true, 0.5},
      {"alloxd 5,000: 95% busy, warm", 50'000, 50'000, 2, false, 0.95, false, true, false, true, 0,
       "", true},
      {"alloxd 5,000: 95% busy, starved, warm", 50'000, 50'000, 2, false, 0.95, false, true, false,
       true, 0, "", true, 1},
  };
}

Expected<double> time_simulator_row(const std::string& allox_binary, const SimulatorRow& row) {
  const pid_t child = fork();
  if (child < 0) return Error{std::string("fork: ") + std::strerror(errno)};
  if (child == 0) {
    // The table goes nowhere: only the child's CPU time is measured.
    if (std::freopen("/dev/null", "w", stdout) == nullptr) _exit(127);
    execlp(allox_binary.c_str(), allox_binary.c_str(), "simulate", "--trace", row.trace.c_str(),
          "--gpus", "10", "--cpus", "20", "--profiling", "--policy", "allox", "--alpha", "1",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(child, &status, 0, &usage);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Error{"allox simulate on " + row.trace + " failed (exit status " +
                 std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")"};
  }
  const auto ms = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_usec) / 1e3;
  };
  return ms(usage.ru_utime) + ms(usage.ru_stime);
}

Expected<BenchRow> run_case(const BenchCase& bench_case, const BenchOptions& options) {
  BenchRow row;
  row.bench_case = bench_case;
  Expected<Measurement> grouped = measure(bench_case, options, false);
  if (!grouped.ok()) return grouped.error();
  row.grouped = *grouped;
  // Naive graph: every machine gets one slot per job it could hold.
  const std::size_t jobs = bench_case.jobs + (bench_case.online ? 1 : 0);
  row.naive_arcs = jobs * jobs * bench_case.machines + jobs * bench_case.machines;
  if (bench_case.naive && row.naive_arcs <= options.max_naive_arcs) {
    BenchOptions once = options;
    once.repetitions = 1;
    Expected<Measurement> naive = measure(bench_case, once, true);
    if (!naive.ok()) return naive.error();
    row.naive = *naive;
  }
  return row;
}

}  // namespace allox::matcher::bench
