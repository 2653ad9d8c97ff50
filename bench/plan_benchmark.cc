// make_plan's CPU at cluster scale when nodes refuse pods (alloxd/plan/plan.h): 5,000 nodes of 8
// GPUs, 50,000 queued one-GPU jobs, the policy placing the first 40,000 one per machine. Arg:
// the percentage of nodes tainted for a team (the first ones), the second arg the percentage of
// jobs that tolerate it (spread evenly through the queue). With taints, the starts the policy put
// on a tainted node move to an open node with room, or wait; the machines they leave go to the
// next waiting jobs that tolerate the taint, or, where none does, stay idle.
// Not a test: build/bench/plan_benchmark
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "alloxd/model/pod_placement.h"
#include "alloxd/plan/plan.h"

namespace allox::extender {
namespace {

using nlohmann::json;

constexpr int kNodes = 5000;
constexpr int kGpusPerNode = 8;
constexpr int kQueued = 50000;

struct Scale {
  PlanInput input;
  std::vector<MachineSlot> slots;
  Decision decision;
};

std::unique_ptr<Scale> make_scale(int tainted_percent, int tolerating_percent) {
  auto scale = std::make_unique<Scale>();
  PlanInput& input = scale->input;
  auto nodes = std::make_shared<NodeFactsIndex>();
  const int tainted = kNodes * tainted_percent / 100;
  const json taint =
      json::array({{{"key", "dedicated"}, {"value", "team-a"}, {"effect", "NoSchedule"}}});
  for (int n = 0; n < kNodes; ++n) {
    const std::string name = "node-" + std::to_string(n);
    nodes->emplace(name,
                   kube::node_facts({{"metadata", {{"name", name}}},
                                     {"spec", {{"taints", n < tainted ? taint : json::array()}}}}));
    for (int g = 0; g < kGpusPerNode; ++g) {
      scale->slots.push_back({name, "gpu", g, ""});
      input.state.machines.push_back({name + "/gpu-" + std::to_string(g), "gpu", 0, name});
      input.state.idle.push_back(true);
    }
  }
  input.nodes = nodes;
  input.state.now = 1000;
  JobVariant tolerant;
  tolerant.device = "gpu";
  const PodConstraints constraints = read_pod_constraints(
      {{"spec", {{"tolerations", json::array({{{"key", "dedicated"}, {"operator", "Exists"}}})}}}});
  tolerant.placement = constraints.placement;
  tolerant.placement_key = constraints.key;
  const auto tolerating = std::make_shared<const std::vector<JobVariant>>(1, tolerant);
  const int every = tolerating_percent > 0 ? 100 / tolerating_percent : 0;
  const std::size_t machines = scale->slots.size();
  for (int j = 0; j < kQueued; ++j) {
    Job job;
    job.id = "team/j" + std::to_string(j);
    job.time["gpu"] = 100 + j % 50;
    input.jobs.push_back(std::make_shared<const Job>(job));
    input.state.queue.push_back({input.jobs.back().get(), 0, 0, {}});
    input.queue_placements.push_back(every > 0 && j % every == 0 ? tolerating : nullptr);
    const auto index = static_cast<std::size_t>(j);
    if (index < machines) {
      scale->decision.start.push_back({job.id, index});
    } else {
      scale->decision.estimated_start[job.id] = 2000 + j;
    }
  }
  return scale;
}

void BM_MakePlan(benchmark::State& state) {
  const auto scale = make_scale(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  std::size_t starts = 0;
  for (auto _ : state) {
    Plan plan = make_plan(scale->input, scale->decision, scale->slots, 0);
    starts = plan.starts.size();
    benchmark::DoNotOptimize(plan);
  }
  state.counters["starts"] = static_cast<double>(starts);
}

// Untainted; half the nodes tainted and no job tolerating it; half tainted and one job in ten
// tolerating it.
BENCHMARK(BM_MakePlan)->Args({0, 0})->Args({50, 0})->Args({50, 10})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace allox::extender

BENCHMARK_MAIN();
