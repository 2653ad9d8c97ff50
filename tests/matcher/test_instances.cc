#include "tests/matcher/test_instances.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>

namespace allox::matcher::testing {
namespace {

std::int64_t ticks(double seconds) {
  return std::llround(seconds * kTicksPerSecond);
}

}  // namespace

std::string Instance::describe() const {
  std::ostringstream out;
  out << "now=" << now << "\n";
  for (const Machine& m : machines) {
    out << "  machine " << m.name << " " << m.device << " busy_until=" << m.busy_until << "\n";
  }
  for (const Job& j : jobs) {
    out << "  job " << j.id << ":";
    for (const auto& [device, time] : j.time) out << " " << device << "=" << time;
    out << "\n";
  }
  return out.str();
}

Instance random_instance(std::mt19937& rng, const InstanceShape& shape, int jobs, int machines) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto seconds = [&](int max) {
    double s = uniform(0, max);
    if (shape.fractional) s += uniform(0, 999) / 1000.0;
    return s;
  };
  Instance instance;
  instance.now = uniform(0, 10);
  std::vector<std::string> present;
  for (int m = 0; m < machines; ++m) {
    Machine machine;
    machine.name = "m" + std::to_string(m);
    machine.device = shape.devices[uniform(0, static_cast<int>(shape.devices.size()) - 1)];
    // Half the machines are free (some since long ago), half busy for a while.
    machine.busy_until =
        uniform(0, 1) ? instance.now - uniform(0, 3) : instance.now + seconds(shape.max_residual);
    present.push_back(machine.device);
    instance.machines.push_back(machine);
  }
  for (int j = 0; j < jobs; ++j) {
    Job job;
    job.id = "j" + std::to_string(j);
    for (const std::string& device : shape.devices) {
      if (uniform(0, 3) > 0) job.time[device] = seconds(shape.max_time);
    }
    const std::string& fallback = present[uniform(0, static_cast<int>(present.size()) - 1)];
    if (!job.time.count(fallback)) job.time[fallback] = seconds(shape.max_time);
    instance.jobs.push_back(job);
  }
  instance.pending = pending_jobs(instance.jobs);
  return instance;
}

std::int64_t brute_force_objective(const Instance& instance) {
  const std::size_t machines = instance.machines.size();
  const std::size_t jobs = instance.jobs.size();
  std::vector<std::int64_t> residual(machines);
  std::vector<std::vector<std::int64_t>> time(jobs, std::vector<std::int64_t>(machines, -1));
  for (std::size_t m = 0; m < machines; ++m) {
    const Machine& machine = instance.machines[m];
    residual[m] = ticks(std::max(0.0, machine.busy_until - instance.now));
    for (std::size_t j = 0; j < jobs; ++j) {
      if (auto t = instance.jobs[j].time_on(machine.device)) time[j][m] = ticks(*t);
    }
  }
  const std::uint32_t all = (std::uint32_t{1} << jobs) - 1;
  std::int64_t best = std::numeric_limits<std::int64_t>::max();
  // Fill machine m's queue front to back; at any point move on to the next machine.
  std::function<void(std::size_t, std::int64_t, std::uint32_t, std::int64_t)> fill =
      [&](std::size_t m, std::int64_t clock, std::uint32_t used, std::int64_t cost) {
        if (m == machines) {
          if (used == all) best = std::min(best, cost);
          return;
        }
        fill(m + 1, m + 1 < machines ? residual[m + 1] : 0, used, cost);
        for (std::size_t j = 0; j < jobs; ++j) {
          if ((used >> j & 1) || time[j][m] < 0) continue;
          const std::int64_t finish = clock + time[j][m];
          fill(m, finish, used | std::uint32_t{1} << j, cost + finish);
        }
      };
  if (machines > 0) fill(0, residual[0], 0, 0);
  return best;
}

std::vector<std::string> plan_problems(const Instance& instance, const Schedule& plan) {
  std::vector<std::string> problems;
  auto report = [&](const std::string& what) { problems.push_back(what); };
  const std::size_t jobs = instance.jobs.size();
  if (plan.assignments.size() != jobs) {
    report("plan has " + std::to_string(plan.assignments.size()) + " assignments for " +
           std::to_string(jobs) + " jobs");
    return problems;
  }
  std::vector<std::vector<const Assignment*>> queues(instance.machines.size());
  for (std::size_t i = 0; i < jobs; ++i) {
    const Assignment& a = plan.assignments[i];
    if (a.job != i)
      report("assignment " + std::to_string(i) + " is for job " + std::to_string(a.job));
    if (a.machine >= instance.machines.size()) {
      report("job " + std::to_string(i) + " on unknown machine");
      continue;
    }
    queues[a.machine].push_back(&a);
  }
  std::int64_t objective = 0;
  auto near = [](double a, double b) {
    return std::abs(a - b) <= 1e-6 * std::max(1.0, std::abs(b));
  };
  for (std::size_t m = 0; m < queues.size(); ++m) {
    auto& queue = queues[m];
    std::sort(queue.begin(), queue.end(),
              [](const Assignment* x, const Assignment* y) { return x->position < y->position; });
    const Machine& machine = instance.machines[m];
    std::int64_t clock = ticks(std::max(0.0, machine.busy_until - instance.now));
    for (std::size_t k = 0; k < queue.size(); ++k) {
      const Assignment& a = *queue[k];
      const std::string name = "job " + instance.jobs[a.job].id + " on " + machine.name;
      if (a.position != k + 1)
        report(name + ": position " + std::to_string(a.position) + " where " +
               std::to_string(k + 1) + " was expected");
      const auto time = instance.jobs[a.job].time_on(machine.device);
      if (!time) {
        report(name + ": cannot run on " + machine.device);
        continue;
      }
      const double start = instance.now + static_cast<double>(clock) / kTicksPerSecond;
      clock += ticks(*time);
      const double finish = instance.now + static_cast<double>(clock) / kTicksPerSecond;
      if (!near(a.start, start))
        report(name + ": start " + std::to_string(a.start) + " != " + std::to_string(start));
      if (!near(a.finish, finish))
        report(name + ": finish " + std::to_string(a.finish) + " != " + std::to_string(finish));
      objective += clock;
    }
  }
  if (objective != plan.objective_ticks) {
    report("objective_ticks " + std::to_string(plan.objective_ticks) + " but the schedule costs " +
           std::to_string(objective));
  }
  if (!near(plan.objective, static_cast<double>(objective) / kTicksPerSecond)) {
    report("objective " + std::to_string(plan.objective) + " s disagrees with objective_ticks");
  }
  return problems;
}

Instance long_queue(std::mt19937& rng, int jobs,
                    const std::vector<std::pair<std::string, double>>& machines) {
  Instance instance;
  for (std::size_t m = 0; m < machines.size(); ++m) {
    instance.machines.push_back({"m" + std::to_string(m), machines[m].first, machines[m].second});
  }
  std::uniform_int_distribution<int> gpu(10, 3600);
  std::uniform_int_distribution<int> cpu(10, 7200);
  for (int j = 0; j < jobs; ++j) {
    Job job;
    job.id = "j" + std::to_string(j);
    job.time["gpu"] = gpu(rng);
    job.time["cpu"] = cpu(rng);
    instance.jobs.push_back(job);
  }
  instance.pending = pending_jobs(instance.jobs);
  return instance;
}

std::string differs_from_optimum(const Instance& instance, Backend backend, std::int64_t best) {
  SolveOptions options;
  options.backend = backend;
  const Expected<Schedule> plan = solve(instance.problem(), options);
  const std::string name(backend_name(backend));
  if (!plan.ok()) return name + ": " + plan.message();
  std::string wrong;
  if (plan->objective_ticks != best) {
    wrong += name + ": objective " + std::to_string(plan->objective_ticks) +
             " ticks, the optimum " + std::to_string(best) + "\n";
  }
  for (const std::string& problem : plan_problems(instance, *plan)) {
    wrong += name + ": " + problem + "\n";
  }
  return wrong;
}

}  // namespace allox::matcher::testing
