// Random matcher instances, an exhaustive reference solver and a plan checker for the tests.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"
#include "matcher/matcher.h"

namespace allox::matcher::testing {

// Owns the machines and jobs a MatchingProblem views. Movable, not copyable (the views point
// into `jobs`).
struct Instance {
  double now = 0;
  std::vector<Machine> machines;
  std::vector<Job> jobs;
  std::vector<PendingJob> pending;

  Instance() = default;
  Instance(Instance&&) = default;
  Instance& operator=(Instance&&) = default;
  Instance(const Instance&) = delete;

  MatchingProblem problem() const { return {now, machines, pending, {}}; }
  std::string describe() const;  // readable dump for failure messages
};

struct InstanceShape {
  int max_jobs = 8;
  int max_machines = 3;
  std::vector<std::string> devices = {"cpu", "gpu", "tpu"};
  int max_time = 6;         // whole seconds, 0..max_time: small, so ties are common
  int max_residual = 5;     // whole seconds
  bool fractional = false;  // add random milliseconds to times and residuals
};

// Every job can run on at least one device type of the cluster.
Instance random_instance(std::mt19937& rng, const InstanceShape& shape, int jobs, int machines);

// Minimum Σ (C_j − now) in ticks over every schedule (every ordered split of the jobs into
// machine queues). Exponential: at most ~8 jobs on 3 machines.
std::int64_t brute_force_objective(const Instance& instance);

// `jobs` jobs with random whole-second times, 10 s to an hour on a GPU and to two on a CPU node,
// on the named machines (device type, busy until): long queues on few machines.
Instance long_queue(std::mt19937& rng, int jobs,
                    const std::vector<std::pair<std::string, double>>& machines);

// Problems found in `plan` for `instance` (empty when consistent): every job exactly once,
// positions 1..n on every machine, start = when the machine frees or the previous job ends,
// finish = start + time on the machine's device, objective = Σ (finish − now).
std::vector<std::string> plan_problems(const Instance& instance, const Schedule& plan);

// Solves `instance` with `backend`: empty when it succeeds with a valid plan of objective `best`
// ticks, else what went wrong (the backend named; the instance is the caller's to describe).
std::string differs_from_optimum(const Instance& instance, Backend backend, std::int64_t best);

}  // namespace allox::matcher::testing
