#include "bench/unseen_bench.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "bench/bench_alloxd.h"
#include "extender_api/extender_client.h"
#include "kubesim/alloxd_process.h"
#include "kubesim/extender_client.h"
#include "kubesim/fake_api_server.h"
#include "kubesim/replay.h"

namespace allox::bench {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr const char* kNamespace = "bench";
constexpr const char* kScheduler = "allox-scheduler";
constexpr std::string_view kUnplanned = "waiting for allox's next scheduling round";

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Status write_alloxd_config(const std::string& path) {
  std::ofstream out(path);
  out << "# written by allox bench unseen\n"
         "listen: 127.0.0.1:0\n"
         "database: alloxd.db\n"
         "policy: allox\n"
         "tick: 2\n"
         "default_job_seconds: 3600\n"
         "admin_token: bench-unseen\n"
      << "scheduler_name: " << kScheduler << "\n"
      << "devices:\n"
         "  - {resource: nvidia.com/gpu, device: gpu}\n"
         "cpu: {device: cpu, cores_per_machine: 32}\n"
      << "tenancy: {user_annotation_namespaces: [" << kNamespace << "]}\n"
      << "log: {level: info, format: text}\n";  // AlloxdProcess reads the address from it
  if (!out) return Error{"cannot write " + path};
  return OkStatus();
}

// A single-variant job's pod; `index` spreads the time hints (as filter_setup.sh does).
json pod(const std::string& name, std::size_t index, bool gpu, const std::string& node = "") {
  json requests = gpu ? json{{"cpu", "1"}, {"nvidia.com/gpu", "1"}} : json{{"cpu", "32"}};
  json spec = {{"schedulerName", kScheduler},
               {"containers", json::array({{{"name", "main"},
                                            {"image", "registry.invalid/train:latest"},
                                            {"resources", {{"requests", requests}}}}})}};
  if (!node.empty()) spec["nodeName"] = node;
  json annotations = {{"allox.io/user", "team-" + std::to_string(index % 8)},
                      {"allox.io/time.gpu", std::to_string(100 + index * 37 % 900)},
                      {"allox.io/time.cpu", std::to_string(400 + index * 53 % 3600)}};
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", kNamespace}, {"annotations", annotations}}},
          {"spec", spec}};
}

Expected<json> create(emulator::ApiObjects& objects, json object) {
  auto stored = objects.create(emulator::pods_resource(), kNamespace, std::move(object));
  if (emulator::failed(stored)) {
    return Error{"create pod: " + std::get<emulator::ApiError>(stored).message};
  }
  return *std::get<emulator::ObjectPtr>(stored);
}

// Records one answer into `into` (under the caller's lock).
void tally(FilterFigures& into, const Expected<extender::FilterResult>& answer) {
  if (!answer || !answer->error.empty()) {
    ++into.errors;
  } else if (answer->node_names && !answer->node_names->empty()) {
    ++into.kept;
  } else if (!answer->failed_nodes.empty() &&
             answer->failed_nodes[0].reason.find(kUnplanned) != std::string_view::npos) {
    ++into.unplanned;
  } else {
    ++into.planned;
  }
}

enum class Kind { kKnown, kArrival, kUnseen };

}  // namespace

Expected<UnseenBenchResult> run_unseen_bench(const UnseenBenchOptions& options) {
  if (options.nodes == 0 || options.queued < 2 || options.rounds == 0 || options.burst == 0 ||
      options.connections == 0) {
    return Error{
        "bench unseen: --nodes, --rounds, --burst and --connections must be positive, "
        "--queued at least 2"};
  }
  if (options.alloxd_binary.empty()) return Error{"bench unseen: no alloxd binary"};
  const auto started = Clock::now();

  emulator::FakeApiServerOptions api_options;
  api_options.token = "bench-" + std::to_string(::getpid());
  auto api = emulator::FakeApiServer::start(api_options);
  if (!api) return Error{"fake API server: " + api.message()};
  emulator::ApiObjects& objects = (*api)->objects();
  std::vector<std::string> names;
  for (std::size_t n = 0; n < options.nodes; ++n) {
    names.push_back("node-" + std::to_string(n));
    (*api)->add_node(
        names.back(),
        {{"nvidia.com/gpu", "1"}, {"cpu", "33"}, {"memory", "1024Gi"}, {"pods", "110"}});
  }
  // Every machine busy: a GPU pod and a CPU pod bound to each node.
  for (std::size_t n = 0; n < options.nodes; ++n) {
    for (bool gpu : {true, false}) {
      std::string name = "run-" + std::to_string(n) + (gpu ? "-gpu" : "-cpu");
      if (auto made = create(objects, pod(name, n, gpu, names[n])); !made) return made.error();
    }
  }
  std::vector<json> known;
  for (std::size_t i = 0; i < options.queued; ++i) {
    auto made = create(objects, pod("queued-" + std::to_string(i), i, i % 3 != 0));
    if (!made) return made.error();
    known.push_back(std::move(*made));
  }

  std::error_code ec;
  std::filesystem::create_directories(options.state_dir, ec);
  const std::string base_config = options.state_dir + "/base.yaml";
  if (Status written = write_alloxd_config(base_config); !written) return written.error();
  auto alloxd = start_bench_alloxd({.binary = options.alloxd_binary,
                                    .state_dir = options.state_dir,
                                    .config = base_config,
                                    .apiserver_url = (*api)->url(),
                                    .apiserver_token = api_options.token});
  if (!alloxd) return alloxd.error();
  const std::string url = (*alloxd)->url();

  // Ready once a queued GPU pod's and a queued CPU pod's /filter answer from a plan that has
  // them. These first calls also take the one watch_wait each device's busy nodes cost per
  // vain_wait_cooldown (alloxd/verbs/verbs.h: every offered node here is full), out of the figures.
  {
    extender::ExtenderClient client(url, "", std::chrono::seconds(30));
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    for (const json* probe : {&known[0], &known[1]}) {  // a CPU pod, a GPU pod
      const std::string body = emulator::extender_args_body(*probe, names, nullptr);
      while (true) {
        auto answer = emulator::post_filter(client, "filter", body);
        FilterFigures seen;
        tally(seen, answer);
        if (seen.planned == 1) break;
        if (Clock::now() > deadline) {
          return Error{"bench unseen: alloxd did not plan the queued pods within 120 s" +
                       (answer ? std::string() : ": " + answer.message())};
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  }

  UnseenBenchResult result;
  std::vector<double> latencies[3];
  FilterFigures* figures[3] = {&result.known, &result.arrival, &result.unseen};
  std::mutex mu;
  std::atomic<std::size_t> made{0};  // new pods so far (their names)
  std::vector<std::unique_ptr<extender::ExtenderClient>> clients;
  for (std::size_t c = 0; c < options.connections; ++c) {
    clients.push_back(
        std::make_unique<extender::ExtenderClient>(url, "", std::chrono::seconds(30)));
  }
  std::string failure;
  for (std::size_t round = 0; round < options.rounds && failure.empty(); ++round) {
    for (Kind kind : {Kind::kKnown, Kind::kArrival, Kind::kUnseen}) {
      const int k = static_cast<int>(kind);
      std::atomic<std::size_t> next{0};
      const auto burst_start = Clock::now();
      auto caller = [&](extender::ExtenderClient& client) {
        while (true) {
          const std::size_t i = next.fetch_add(1);
          if (i >= options.burst) return;
          if (options.rate > 0) {
            std::this_thread::sleep_until(
                burst_start +
                std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(static_cast<double>(i) / options.rate)));
          }
          json object;
          if (kind == Kind::kKnown) {
            object = known[(round * options.burst + i) % known.size()];
          } else {
            const std::size_t n = made.fetch_add(1);
            object = pod("new-" + std::to_string(n), n, n % 3 != 0);
            if (kind == Kind::kArrival) {
              auto stored = create(objects, std::move(object));
              if (!stored) {
                std::lock_guard lock(mu);
                failure = stored.message();
                return;
              }
              object = std::move(*stored);
            } else {
              object["metadata"]["uid"] = "bench-unseen-" + std::to_string(n);
            }
          }
          std::string body = emulator::extender_args_body(object, names, nullptr);
          const auto asked = Clock::now();
          auto answer = emulator::post_filter(client, "filter", std::move(body));
          const double ms = seconds_since(asked) * 1000;
          if (kind == Kind::kUnseen) {
            object["metadata"].erase("uid");
            if (auto stored = create(objects, std::move(object)); !stored) {
              std::lock_guard lock(mu);
              failure = stored.message();
              return;
            }
          }
          std::lock_guard lock(mu);
          latencies[k].push_back(ms);
          tally(*figures[k], answer);
        }
      };
      std::vector<std::thread> threads;
      for (std::size_t c = 1; c < options.connections; ++c) {
        threads.emplace_back(caller, std::ref(*clients[c]));
      }
      caller(*clients[0]);
      for (auto& t : threads) t.join();
      figures[k]->wall_s += seconds_since(burst_start);
    }
  }
  if (!failure.empty()) return Error{"bench unseen: " + failure};

  for (int k = 0; k < 3; ++k) {
    FilterFigures& f = *figures[k];
    f.calls = latencies[k].size();
    f.per_second = f.wall_s > 0 ? static_cast<double>(f.calls) / f.wall_s : 0;
    f.p50_ms = emulator::quantile(latencies[k], 0.5);
    f.p99_ms = emulator::quantile(latencies[k], 0.99);
    f.max_ms =
        latencies[k].empty() ? 0 : *std::max_element(latencies[k].begin(), latencies[k].end());
  }
  {
    extender::ExtenderClient client(url, "", std::chrono::seconds(30));
    if (auto queue = client.get("/v1/queue"); queue && queue->contains("queued")) {
      result.queued_at_end = (*queue)["queued"].size();
    }
  }
  (*alloxd)->stop();
  result.wall_s = seconds_since(started);
  return result;
}

}  // namespace allox::bench
