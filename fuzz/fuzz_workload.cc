// The planner's job list (core/workload_file.h) on arbitrary YAML or JSON text, and the matcher
// on what it accepts. Nothing may throw or crash. An accepted workload holds what its header
// promises (at least one job, unique non-empty ids, UTF-8 names, times positive, finite and at
// most kMaxInputSeconds, units in 1..kMaxUnits, every owner a user with a positive weight). A
// small accepted workload that runs on a fixed cluster is solved by every exact backend: they
// must agree on the objective, or all refuse it (times too large for integer costs).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "core/cluster_file.h"
#include "core/model.h"
#include "core/utf8.h"
#include "core/workload_file.h"
#include "matcher/matcher.h"

namespace {

using namespace allox;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_workload: accepted workload breaks: %s\n", what);
  std::abort();
}

bool is_input_seconds(double value) {
  return std::isfinite(value) && value >= 0 && value <= kMaxInputSeconds;
}

void check_workload(const Workload& workload) {
  if (workload.jobs.empty()) fail("no jobs");
  std::set<std::string> ids;
  std::set<std::string> users;
  for (const User& user : workload.users) {
    if (!is_utf8_text(user.name)) fail("user name is not UTF-8 text");
    if (!(user.weight > 0) || !std::isfinite(user.weight)) fail("user weight not positive");
    users.insert(user.name);
  }
  for (const Job& job : workload.jobs) {
    if (job.id.empty() || !ids.insert(job.id).second) fail("job id empty or repeated");
    if (!is_utf8_text(job.id) || !is_utf8_text(job.user) || !is_utf8_text(job.family)) {
      fail("a job's name is not UTF-8 text");
    }
    if (!users.contains(job.user)) fail("job owner missing from users");
    if (!is_input_seconds(job.arrival)) fail("arrival outside [0, kMaxInputSeconds]");
    if (job.time.empty()) fail("job with no device time");
    for (const auto& [device, seconds] : job.time) {
      if (device.empty()) fail("empty device type");
      if (!(seconds > 0) || !is_input_seconds(seconds)) fail("time outside (0, kMaxInputSeconds]");
    }
    if (job.units < 1 || job.units > kMaxUnits) fail("units outside 1..kMaxUnits");
    if (job.iterations && *job.iterations < 1) fail("iterations below 1");
  }
}

// Two CPU machines, one busy for a while, two GPUs, and a V100 node of 4 units.
const Cluster& fixed_cluster() {
  static const Cluster cluster = [] {
    auto parsed = parse_cluster(
        "machines:\n"
        "  - {name: cpu-0, device: cpu}\n"
        "  - {name: cpu-1, device: cpu, busy_until: 30}\n"
        "  - {name: gpu-0, device: gpu}\n"
        "  - {name: gpu-1, device: gpu}\n"
        "  - {name: dgx, device: v100, units: 4}\n",
        "fuzz-cluster.yaml");
    if (!parsed) std::abort();
    return *parsed;
  }();
  return cluster;
}

void solve_with_every_backend(const Workload& workload) {
  const Cluster& cluster = fixed_cluster();
  const std::vector<matcher::PendingJob> jobs = matcher::pending_jobs(workload.jobs);
  const matcher::MatchingProblem problem{
      .now = 0, .machines = cluster.machines, .jobs = jobs, .idle = {}};
  std::vector<Expected<matcher::Schedule>> plans;
  for (matcher::Backend backend : matcher::all_backends()) {
    matcher::SolveOptions options;
    options.backend = backend;
    plans.push_back(matcher::solve(problem, options));
  }
  const bool solved = plans.front().ok();
  for (const auto& plan : plans) {
    if (plan.ok() != solved) fail("one backend solved what another refused");
    if (!plan) {
      if (plan.message().empty()) fail("a refusal without a message");
      continue;
    }
    if (plan->objective_ticks != plans.front()->objective_ticks) fail("backends disagree");
    if (plan->assignments.size() != jobs.size()) fail("a job without an assignment");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto workload = parse_workload(text, "fuzz.yaml");
  if (!workload) {
    if (workload.message().empty()) fail("an error without a message");
    return 0;
  }
  check_workload(*workload);
  if (!check_runnable(fixed_cluster(), *workload, "fuzz.yaml").ok()) return 0;
  if (workload->jobs.size() > 12) return 0;
  for (const Job& job : workload->jobs) {
    if (job.units != 1) return 0;  // multi-unit jobs are placed by matcher/multi_unit.h
  }
  solve_with_every_backend(*workload);
  return 0;
}
