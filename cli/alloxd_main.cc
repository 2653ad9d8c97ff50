// alloxd: the kube-scheduler HTTP extender (extender/). Loads the config, restores its SQLite
// store, starts the scheduler thread and the HTTP server, and runs until SIGINT or SIGTERM.
//
//   alloxd --config alloxd.yaml [--listen 127.0.0.1:8888] [--database alloxd.db]
//          [--time-scale 1]
#include <pthread.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
// clang-format off
#include <utility>  // before pplx/threadpool.h, which uses std::exchange without including it
#include <pplx/threadpool.h>
// clang-format on

#include "extender/cluster_api.h"
#include "extender/config.h"
#include "extender/http_server.h"
#include "extender/service.h"
#include "fairness/policy.h"

namespace {

using namespace allox;
using namespace allox::extender;

struct Flags {
  std::string config_path, listen, database;
  double time_scale = 1;
};

// alloxd's clock: Unix seconds, or for demos a clock that runs time_scale times faster from
// the moment alloxd starts, so a sped-up replay's durations read as real ones in reports.
std::function<double()> scaled_clock(double time_scale) {
  using std::chrono::system_clock;
  auto seconds = [] {
    return std::chrono::duration<double>(system_clock::now().time_since_epoch()).count();
  };
  const double start = seconds();
  return [seconds, start, time_scale] { return start + (seconds() - start) * time_scale; };
}

int run(const Flags& flags) {
  const std::string& config_path = flags.config_path;
  const std::string& listen = flags.listen;
  const std::string& database = flags.database;
  // Block the stop signals before any thread starts so only sigwait() below sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto config = load_extender_config(config_path);
  if (!config) {
    std::fprintf(stderr, "alloxd: %s\n", config.message().c_str());
    return 2;
  }
  // cpprestsdk's default pool has 40 threads; on a few cores they mostly contend (4 threads
  // serve /filter about 3.5x faster on 2 cores, docs/results.md). Must precede any
  // cpprestsdk use.
  crossplat::threadpool::initialize_with_threads(config->http_threads);
  if (!listen.empty()) {
    if (auto s = set_listen_address(*config, listen); !s) {
      std::fprintf(stderr, "alloxd: --listen: %s\n", s.message().c_str());
      return 2;
    }
  }
  if (!database.empty()) config->database = database;

  PolicyOptions options;
  options.alpha = config->alpha;
  options.starvation_bound = config->starvation_bound;
  auto policy = make_policy(config->policy, options);
  if (!policy) {
    std::fprintf(stderr, "alloxd: policy: %s\n", policy.message().c_str());
    return 2;
  }
  // With config->apiserver the service makes its own API client (watch, binds, actions).
  std::unique_ptr<ClusterApi> api;
  ServiceOptions service_options;
  if (flags.time_scale != 1) service_options.clock = scaled_clock(flags.time_scale);
  auto service =
      ExtenderService::create(*config, std::move(*policy), std::move(api), service_options);
  if (!service) {
    std::fprintf(stderr, "alloxd: %s\n", service.message().c_str());
    return 1;
  }
  (*service)->start();
  HttpServerOptions server_options{config->listen_host, config->listen_port,
                                   config->max_body_bytes};
  auto server = HttpServer::start(**service, server_options);
  if (!server) {
    std::fprintf(stderr, "alloxd: %s\n", server.message().c_str());
    return 1;
  }
  std::unique_ptr<HttpServer> reports_server;
  if (config->reports_listen) {
    HttpServerOptions reports_options{config->reports_listen->host, config->reports_listen->port,
                                      config->max_body_bytes};
    reports_options.read_only = true;
    auto started = HttpServer::start(**service, reports_options);
    if (!started) {
      std::fprintf(stderr, "alloxd: reports_listen: %s\n", started.message().c_str());
      return 1;
    }
    reports_server = std::move(*started);
    std::fprintf(stderr, "alloxd: reports (GET only) on %s\n", reports_server->url().c_str());
  }
  QueueView queue = (*service)->queue();
  std::fprintf(stderr,
               "alloxd: listening on %s (policy %s, %d nodes, %d machines, %zu queued and %zu "
               "running jobs restored from %s)\n",
               (*server)->url().c_str(), config->policy.c_str(), queue.nodes, queue.machines,
               queue.queued.size(), queue.running.size(), config->database.c_str());
  std::fflush(stderr);

  int signal = 0;
  sigwait(&stop_signals, &signal);
  std::fprintf(stderr, "alloxd: stopping (%s)\n", signal == SIGINT ? "SIGINT" : "SIGTERM");
  if (reports_server) reports_server->stop();
  (*server)->stop();
  (*service)->stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"alloxd: the allox kube-scheduler extender (filter, prioritize, bind, preempt)"};
  Flags flags;
  app.add_option("-c,--config", flags.config_path, "alloxd YAML config (see extender/README.md)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--listen", flags.listen, "host:port to listen on, overriding the config");
  app.add_option("--database", flags.database, "SQLite database path, overriding the config");
  app.add_option("--time-scale", flags.time_scale,
                 "run alloxd's clock this many times faster than real time (demos, replays)")
      ->check(CLI::PositiveNumber);
  app.set_version_flag("--version", "alloxd 0.1.0");
  CLI11_PARSE(app, argc, argv);
  return run(flags);
}
