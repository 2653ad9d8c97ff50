// Decision latency of every policy on the AlloX paper's cluster (20 GPUs + 20 CPU nodes, half of
// them busy) with Q queued jobs from 10 users. Run: build/fairness/fairness_benchmark.
#include <benchmark/benchmark.h>

#include <deque>
#include <random>

#include "fairness/policy.h"

namespace allox {
namespace {

struct Instance {
  std::deque<Job> jobs;
  ClusterState state;
};

// Deterministic: GPU times 20..300 s, CPU 1.5x..12x slower, as in the paper's workload.
Instance make_instance(std::size_t queued) {
  Instance in;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> gpu(20, 300), slowdown(1.5, 12);
  in.state.now = 1000;
  for (int i = 0; i < 40; ++i) {
    bool is_gpu = i < 20;
    in.state.machines.push_back(
        {(is_gpu ? "gpu-" : "cpu-") + std::to_string(i % 20), is_gpu ? "gpu" : "cpu", 0});
    in.state.idle.push_back(i % 2 == 0);
  }
  auto add_job = [&](std::size_t n) -> const Job& {
    Job j;
    j.id = "j" + std::to_string(n);
    j.user = "user" + std::to_string(n % 10);
    j.arrival = static_cast<double>(n % 1000);
    double g = gpu(rng);
    j.time = {{"gpu", g}, {"cpu", g * slowdown(rng)}};
    return in.jobs.emplace_back(std::move(j));
  };
  std::size_t n = 0;
  for (std::size_t m = 0; m < in.state.machines.size(); ++m) {
    if (in.state.idle[m]) continue;
    const Job& j = add_job(n++);
    double run = j.time.at(in.state.machines[m].device);
    in.state.machines[m].busy_until = in.state.now + run / 2;
    in.state.running.push_back({&j, m, in.state.now - run / 2, in.state.now + run / 2, run / 2});
  }
  for (std::size_t q = 0; q < queued; ++q) {
    const Job& j = add_job(n++);
    in.state.queue.push_back({&j, j.arrival, 0, {}});
  }
  return in;
}

void BM_Decide(benchmark::State& bench, const std::string& name) {
  Instance in = make_instance(static_cast<std::size_t>(bench.range(0)));
  auto policy = make_policy(name, PolicyOptions{});
  if (!policy.ok()) {
    bench.SkipWithError(policy.message().c_str());
    return;
  }
  std::size_t started = 0;
  for (auto _ : bench) {
    auto decision = (*policy)->decide(in.state);
    if (!decision.ok()) {
      bench.SkipWithError(decision.message().c_str());
      return;
    }
    started = decision->start.size();
    benchmark::DoNotOptimize(started);
  }
  bench.counters["started"] = static_cast<double>(started);
}

int register_all() {
  for (const std::string& name : policy_names()) {
    benchmark::RegisterBenchmark(("decide/" + name).c_str(), BM_Decide, name)
        ->Arg(100)
        ->Arg(1000)
        ->Unit(benchmark::kMicrosecond);
  }
  return 0;
}
const int registered = register_all();

}  // namespace
}  // namespace allox

BENCHMARK_MAIN();
