// The kube-scheduler emulator's own cost per scheduling cycle at 1,000 and 5,000 nodes, with the
// extender's HTTP round trip replaced by an in-process answer of the size alloxd sends
// (KubeSchedulerOptions::filter_answer), so what is left is the emulator: the pod's ADDED
// change read from the store, the in-tree filters over every node, the ExtenderArgs body with
// every NodeName, the answer read and merged into the diagnosis, then either
//   - Rejected: FitError text, the preemption dry run over every node, the status patch and
//     the FailedScheduling event in the store, the patch's change read back; or
//   - Bound: the pod assumed on the one node kept and bound by a binder thread through the
//     binding subresource, its change read back.
//
//   build/bench/scheduling_cycle_benchmark [--benchmark_repetitions=3]
//
// "Time" is the process's CPU time per cycle (every thread: scheduling, binders, store), less
// the time spent building the in-process answer; `wall_us` is the wall-clock time from the
// pod's creation until the emulator reported the attempt. Set-up: N nodes as `allox bench
// cluster` makes them (8 GPUs, 64 cores, 1024Gi, 110 pods), two bound 1-GPU pods on each, the
// shipped scheduler configuration (percentageOfNodesToScore 100, one extender, no
// managedResources). The answers are alloxd's: a rejected pod's names every node in FailedNodes
// with one shared reason, in byte order; a bound pod's is its one node, both failed maps null.
#include <benchmark/benchmark.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

#include "kubesim/api_objects.h"
#include "kubesim/kube_scheduler.h"
#include "kubesim/replay.h"
#include "kubesim/scheduler_config.h"
#include "kubesim/sim_clock.h"

namespace {

using namespace allox;
using namespace allox::emulator;
using nlohmann::json;

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

json gpu_pod(const std::string& name, const std::string& node) {
  json spec = {
      {"schedulerName", "allox-scheduler"},
      {"restartPolicy", "Never"},
      {"containers",
       json::array({{{"name", "main"},
                     {"image", "registry.invalid/train:latest"},
                     {"resources",
                      {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", "1"}}},
                       {"limits", {{"nvidia.com/gpu", "1"}}}}}}})}};
  if (!node.empty()) spec["nodeName"] = node;
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", "bench"},
            {"annotations", {{"allox.io/user", "u1"}, {"allox.io/time.gpu", "600"}}}}},
          {"spec", spec}};
}

std::string node_name(std::size_t i) {
  return "node-" + std::to_string(i);
}

// FailedNodes for every node, keys in byte order, as alloxd renders a queued pod's answer.
std::string failed_nodes(std::size_t nodes) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < nodes; ++i) names.push_back(node_name(i));
  std::sort(names.begin(), names.end());
  std::string out = "\"FailedNodes\":{";
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "\"" : ",\"") + names[i] +
           "\":\"queued: position 1234 of 45000, est. start in 5600s\"";
  }
  return out + "},\"FailedAndUnresolvableNodes\":null,\"Error\":\"\"}";
}

void run_cycles(benchmark::State& state, bool bind) {
  const auto nodes = static_cast<std::size_t>(state.range(0));
  SimClock clock(1);
  ApiObjects objects([&clock] { return clock.now(); });
  ReplayOptions shape;
  shape.resource_of["gpu"] = "nvidia.com/gpu";
  shape.cpu_cores = 32;
  json allocatable = node_allocatable({{"gpu", 8}, {"cpu", 2}}, shape);
  for (std::size_t i = 0; i < nodes; ++i) {
    json node = {{"apiVersion", "v1"},
                 {"kind", "Node"},
                 {"metadata", {{"name", node_name(i)}}},
                 {"status", {{"allocatable", allocatable}, {"capacity", allocatable}}}};
    (void)objects.create(nodes_resource(), "", node);
    for (int p = 0; p < 2; ++p) {
      (void)objects.create(
          pods_resource(), "bench",
          gpu_pod("running-" + std::to_string(i) + "-" + std::to_string(p), node_name(i)));
    }
  }
  auto config = load_scheduler_configuration("manifests/scheduler-config.yaml");
  if (!config) {
    state.SkipWithError(config.message().c_str());
    return;
  }
  if (bind) config->extenders[0].bind_verb.clear();  // the binding subresource, in process
  const std::string failed = bind ? std::string() : failed_nodes(nodes);
  std::size_t kept_index = 0;
  double answer_cpu = 0;

  std::mutex mu;
  std::condition_variable cv;
  std::size_t reported = 0;
  KubeSchedulerOptions options;
  options.config = *config;
  options.filter_answer = [&](std::size_t, const std::string&) -> Expected<std::string> {
    const double begin = thread_cpu_seconds();
    std::string answer =
        bind ? "{\"Nodes\":null,\"NodeNames\":[\"" + node_name(kept_index++ % nodes) +
                   "\"],\"FailedNodes\":null,\"FailedAndUnresolvableNodes\":null,\"Error\":\"\"}"
             : "{\"Nodes\":null,\"NodeNames\":[]," + failed;
    answer_cpu += thread_cpu_seconds() - begin;
    return answer;
  };
  options.observer = [&](const SchedulerEvent& e) {
    if (e.kind != SchedulerEvent::Kind::kBound && e.kind != SchedulerEvent::Kind::kUnschedulable &&
        e.kind != SchedulerEvent::Kind::kError)
      return;  // an extender error ends a cycle too (the `bound` counter then says so)
    std::lock_guard lock(mu);
    ++reported;
    cv.notify_all();
  };
  KubeScheduler scheduler(objects, clock, options);
  scheduler.start();

  std::size_t created = 0;
  double wall = 0;
  for (auto _ : state) {
    const double cpu = process_cpu_seconds();
    const double answer_before = answer_cpu;
    const auto begin = std::chrono::steady_clock::now();
    (void)objects.create(pods_resource(), "bench", gpu_pod("p-" + std::to_string(created), ""));
    ++created;
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return reported == created; });
    }
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    state.SetIterationTime(process_cpu_seconds() - cpu - (answer_cpu - answer_before));
  }
  scheduler.stop();
  const auto stats = scheduler.stats();
  state.counters["wall_us"] = benchmark::Counter(wall * 1e6 / static_cast<double>(created));
  state.counters["nodes_sent"] = benchmark::Counter(
      stats.filter_nodes.empty() ? 0 : static_cast<double>(stats.filter_nodes.back()));
  state.counters["bound"] = benchmark::Counter(static_cast<double>(stats.bound));
}

void BM_CycleRejected(benchmark::State& state) {
  run_cycles(state, false);
}
void BM_CycleBound(benchmark::State& state) {
  run_cycles(state, true);
}

BENCHMARK(BM_CycleRejected)
    ->Arg(1000)
    ->Arg(5000)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(300);
BENCHMARK(BM_CycleBound)
    ->Arg(1000)
    ->Arg(5000)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(300);

}  // namespace

BENCHMARK_MAIN();
