// CPU time of one /filter and one /prioritize through alloxd's request handler (routes.h: parse,
// decide from the published plan, render), the way the HTTP server calls it, at 100 and 5,000
// candidate nodes (the target: filter p99 < 2 ms at 5,000 NodeNames). No sockets: the HTTP side
// is measured by bench/filter_vs_nginx.sh.
//
//   build/bench/filter_benchmark [--benchmark_repetitions=3]
//
// Set-up: N nodes of one GPU, a store in a scratch directory, policy fifo, one GPU job whose
// plan starts it now: the answer is its planned node alone (kube-scheduler reads reasons only
// when no node is left; a queued pod's answer names all N with a reason, BM_ParseFilterResult).
// The body is a pod as a real kube-scheduler v1.28 sends it (managedFields included) with N
// NodeNames.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "alloxd/http/http_server.h"
#include "alloxd/http/routes.h"
#include "alloxd/service.h"
#include "extender_api/extender_client.h"
#include "kubesim/extender_client.h"

namespace {

using namespace allox;
using namespace allox::extender;
using nlohmann::json;

// The recorded pod of data/kube-extender/real-v1.28/nodecache-true/001-filter.json, as a
// template: metadata with managedFields, a GPU container, status.
json recorded_pod() {
  return json::parse(R"({"metadata":{"name":"","namespace":"default","uid":"",
    "resourceVersion":"273","creationTimestamp":"2026-11-22T19:15:17Z",
    "labels":{"app":"allox-test"},
    "annotations":{"allox.io/time.gpu":"600","allox.io/user":"alice"},
    "managedFields":[{"manager":"kubectl-create","operation":"Update","apiVersion":"v1",
      "time":"2026-11-22T19:15:17Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{
      "f:annotations":{".":{},"f:allox.io/time.gpu":{},"f:allox.io/user":{}},
      "f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{
      ".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{".":{},
      "f:limits":{".":{},"f:nvidia.com/gpu":{}},"f:requests":{".":{},"f:cpu":{},
      "f:memory":{},"f:nvidia.com/gpu":{}}},"f:terminationMessagePath":{},
      "f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},
      "f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},
      "f:terminationGracePeriodSeconds":{}}}}]},
    "spec":{"containers":[{"name":"main","image":"registry.invalid/never-pulled:latest",
      "resources":{"limits":{"nvidia.com/gpu":"1"},
      "requests":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":"1"}},
      "terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File",
      "imagePullPolicy":"Always"}],"restartPolicy":"Always","terminationGracePeriodSeconds":0,
      "dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default",
      "securityContext":{},"schedulerName":"allox-scheduler",
      "tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists",
        "effect":"NoExecute","tolerationSeconds":300},
        {"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute",
        "tolerationSeconds":300}],"priority":0,"enableServiceLinks":true,
      "preemptionPolicy":"PreemptLowerPriority"},
    "status":{"phase":"Pending","qosClass":"Burstable"}})");
}

struct Cluster {
  std::filesystem::path dir;
  std::unique_ptr<ExtenderService> service;
  std::string body;

  explicit Cluster(int nodes) {
    char pattern[] = "/tmp/allox-filter-bench-XXXXXX";
    dir = ::mkdtemp(pattern);
    ExtenderConfig config;
    config.database = (dir / "state.db").string();
    config.policy = "fifo";
    config.scheduler_name = "allox-scheduler";
    config.devices.resources = {{"nvidia.com/gpu", "gpu"}};
    json names = json::array();
    for (int i = 0; i < nodes; ++i) {
      std::string name = "node-" + std::to_string(i);
      config.nodes.push_back({name, {{"gpu", 1}}});
      names.push_back(name);
    }
    auto policy = make_policy(config.policy, PolicyOptions{});
    ServiceOptions options;
    options.first_plan_wait = std::chrono::seconds(30);
    auto created = ExtenderService::create(config, std::move(*policy), nullptr, options);
    if (!created) {
      std::fprintf(stderr, "filter_benchmark: %s\n", created.message().c_str());
      std::exit(1);
    }
    service = std::move(*created);
    service->start();
    service->solve_now();  // the first plan: ready
    json pod = recorded_pod();
    pod["metadata"]["name"] = "bench";
    pod["metadata"]["uid"] = "uid-bench";
    body = json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}}.dump();
    HttpReply first = handle("/filter");  // registers the job and waits for its plan
    auto answer = parse_filter_result(first.body);
    if (first.status != 200 || !answer || !answer->node_names || answer->node_names->size() != 1 ||
        !answer->failed_nodes.empty()) {
      std::fprintf(stderr, "filter_benchmark: unexpected answer %d %.200s\n", first.status,
                   first.body.c_str());
      std::exit(1);
    }
  }
  ~Cluster() {
    service->stop();
    service.reset();
    std::filesystem::remove_all(dir);
  }

  HttpReply handle(const std::string& path) const {
    HttpRequest request;
    request.method = "POST";
    request.path = path;
    request.body = body;
    return route(*service, request);
  }
};

void run(benchmark::State& state, const char* path) {
  Cluster cluster(static_cast<int>(state.range(0)));
  HttpRequest request;
  request.method = "POST";
  request.path = path;
  request.body = cluster.body;
  std::size_t bytes = 0;
  for (auto _ : state) {
    HttpReply reply = route(*cluster.service, request);
    bytes = reply.body.size();
    benchmark::DoNotOptimize(reply);
  }
  state.counters["request_bytes"] = static_cast<double>(cluster.body.size());
  state.counters["reply_bytes"] = static_cast<double>(bytes);
}

void BM_Filter(benchmark::State& state) {
  run(state, "/filter");
}
void BM_Prioritize(benchmark::State& state) {
  run(state, "/prioritize");
}
void BM_ParseExtenderArgs(benchmark::State& state) {
  json names = json::array();
  for (int i = 0; i < state.range(0); ++i) names.push_back("node-" + std::to_string(i));
  json pod = recorded_pod();
  pod["metadata"]["name"] = "bench";
  const std::string body = json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}}.dump();
  for (auto _ : state) {
    auto args = parse_extender_args(body, PodFields::kRead);
    benchmark::DoNotOptimize(args);
  }
}

// A started HTTP server (loopback, free port) in front of a Cluster's service.
std::unique_ptr<HttpServer> serve(Cluster& cluster, benchmark::State& state) {
  HttpServerOptions options;
  options.port = 0;
  options.threads = 2;
  options.max_body_bytes = 16 << 20;
  auto server = HttpServer::start(*cluster.service, options);
  if (!server) {
    state.SkipWithError(server.message().c_str());
    return nullptr;
  }
  return std::move(*server);
}

// Wall-time quantiles of the iterations, as counters (ms).
void report_quantiles(benchmark::State& state, std::vector<double> ms) {
  if (ms.empty()) return;
  std::sort(ms.begin(), ms.end());
  state.counters["p50_ms"] = ms[ms.size() / 2];
  state.counters["p99_ms"] = ms[std::min(ms.size() - 1, ms.size() * 99 / 100)];
}

// Wall time of one /filter round trip over HTTP (loopback, a kept-alive connection) through the
// real server and the emulated kube-scheduler's extender client (kubesim/
// extender_client.h): the body rendered from the pod and the node names, posted, the answer read
// in one pass and its kept nodes checked against those sent as kube-scheduler does. This is what
// `allox bench cluster` times as /filter, minus the load of everything else. p50 and p99 of the
// iterations are counters (ms).
void BM_FilterHttp(benchmark::State& state) {
  Cluster cluster(static_cast<int>(state.range(0)));
  auto server = serve(cluster, state);
  if (!server) return;
  ExtenderClient client(server->url(), "");
  const json sent = json::parse(cluster.body);
  const json& pod = sent["Pod"];
  const std::vector<std::string> names = sent["NodeNames"];
  std::vector<double> ms;
  std::size_t failed = 0;
  for (auto _ : state) {
    auto begin = std::chrono::steady_clock::now();
    auto answer =
        emulator::post_filter(client, "filter", emulator::extender_args_body(pod, names, nullptr));
    if (!answer) {
      state.SkipWithError(answer.message().c_str());
      return;
    }
    auto kept = emulator::filter_kept(*answer, true, names, server->url());
    if (!kept || kept->size() != 1) {
      state.SkipWithError(kept ? "not one node kept" : kept.message().c_str());
      return;
    }
    failed = answer->failed_nodes.size();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin)
                     .count());
    benchmark::DoNotOptimize(kept);
  }
  report_quantiles(state, std::move(ms));
  state.counters["failed_nodes"] = static_cast<double>(failed);
}

// The same round trip with a client that builds and reads JSON trees, for comparison: the
// body built as a JSON DOM and dumped, the answer parsed into a DOM and walked.
void BM_FilterHttpDomClient(benchmark::State& state) {
  Cluster cluster(static_cast<int>(state.range(0)));
  auto server = serve(cluster, state);
  if (!server) return;
  ExtenderClient client(server->url(), "");
  const json sent = json::parse(cluster.body);
  const json& pod = sent["Pod"];
  const std::vector<std::string> names = sent["NodeNames"];
  std::vector<double> ms;
  std::size_t failed = 0;
  for (auto _ : state) {
    auto begin = std::chrono::steady_clock::now();
    json body = {{"Pod", emulator::wire_object(pod)}, {"Nodes", nullptr}, {"NodeNames", names}};
    auto answer = client.post("/filter", body);
    if (!answer) {
      state.SkipWithError(answer.message().c_str());
      return;
    }
    std::vector<std::string> kept;
    for (const json& n : (*answer)["NodeNames"]) kept.push_back(n.get<std::string>());
    failed = 0;
    for (const auto& [node, why] : (*answer)["FailedNodes"].items()) {
      benchmark::DoNotOptimize(why.get_ref<const std::string&>());
      ++failed;
    }
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin)
                     .count());
  }
  report_quantiles(state, std::move(ms));
  state.counters["failed_nodes"] = static_cast<double>(failed);
}

// Reading a 5,000-node answer alone, CPU time: a queued pod's, every node in FailedNodes with one
// shared reason, as alloxd renders it (a pod that passes gets its node alone).
void BM_ParseFilterResult(benchmark::State& state) {
  FilterResult queued;
  queued.node_names.emplace();
  const auto why =
      queued.failed_nodes.reason("queued: position 1234 of 45000, est. start in 5600s");
  for (int i = 0; i < state.range(0); ++i) {
    queued.failed_nodes.add("node-" + std::to_string(i), why);
  }
  const std::string reply = render(queued);
  for (auto _ : state) {
    auto read = parse_filter_result(reply);
    benchmark::DoNotOptimize(read);
  }
  state.counters["reply_bytes"] = static_cast<double>(reply.size());
}

BENCHMARK(BM_FilterHttp)->Arg(100)->Arg(5000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_FilterHttpDomClient)
    ->Arg(100)
    ->Arg(5000)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_ParseFilterResult)->Arg(5000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Filter)->Arg(100)->Arg(5000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Prioritize)->Arg(100)->Arg(5000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ParseExtenderArgs)->Arg(100)->Arg(5000)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
