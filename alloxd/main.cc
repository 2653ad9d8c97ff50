// alloxd: the kube-scheduler HTTP extender (alloxd/). Loads the config, restores its SQLite
// store, starts the scheduler thread and the HTTP server, and runs until SIGINT or SIGTERM.
//
// Shutdown is bounded (kExitDeadline in every state): stop accepting on both listeners, let the
// replies in flight finish for up to kDrainDeadline, then stop the scheduler thread and destroy
// the service. The service is destroyed only once no request can still be inside it; if one is
// (a bind waiting on an API server that does not answer), alloxd exits without destroying it:
// every acknowledged change is already durable in SQLite, so this is no worse than a SIGKILL,
// which the store is built for. A watchdog ends the process at kExitDeadline whatever happens.
//
//   alloxd --config alloxd.yaml [--listen 127.0.0.1:8888] [--database alloxd.db]
//          [--time-scale 1]
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "alloxd/config.h"
#include "alloxd/control/cluster_api.h"
#include "alloxd/heap.h"
#include "alloxd/http/http_server.h"
#include "alloxd/http/request_threads.h"
#include "alloxd/http/routes.h"
#include "alloxd/http/webhook_server.h"
#include "alloxd/service.h"
#include "alloxd/verbs/admission.h"
#include "cli/number_checks.h"
#include "core/log.h"
#include "core/thread_priority.h"
#include "fairness/policy.h"

namespace {

using namespace allox;
using namespace allox::extender;

constexpr std::chrono::milliseconds kDrainDeadline{3000};
constexpr std::chrono::milliseconds kExitDeadline{4500};

// Ends the process at kExitDeadline unless disarmed first: the last word on "exits within 5 s".
class ExitWatchdog {
 public:
  ExitWatchdog()
      : thread_([this] {
          std::unique_lock lock(mu_);
          if (!cv_.wait_for(lock, kExitDeadline, [this] { return done_; })) {
            log_error("shutdown not finished; exiting now",
                      {{"deadline_ms", static_cast<long long>(kExitDeadline.count())}});
            ::_exit(1);
          }
        }) {}
  ~ExitWatchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  ExitWatchdog(const ExitWatchdog&) = delete;
  ExitWatchdog& operator=(const ExitWatchdog&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;  // last: starts once the members it uses exist
};

// The HTTP server caps its connections below the soft descriptor limit; raise it to the hard
// limit so the cap is not the distribution's default of 1,024.
void raise_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// Every thread alloxd starts from here on inherits the background class (SCHED_BATCH,
// thread_priority.h): the watch, the controller, the store, the binds' API calls and the planner
// wait their turn when they wake. The HTTP servers' I/O threads make themselves interactive, so a
// /filter preempts them. kube-scheduler's listener's threads run in the class request_threads.h
// chooses: normal by default, real-time where the operator opted in and the kernel grants it.
// The choice and its reason are logged once; a refused background class is said once too.
void run_in_background_but_answer_at_once(RequestThreads request_threads,
                                          const std::string& listen_host) {
  if (Status background = run_this_thread_in_background(); !background) {
    log_warn("alloxd's threads keep the default scheduling class",
             {{"error", background.message()}});
  }
  const Status granted =
      request_threads == RequestThreads::kNormal ? OkStatus() : realtime_granted();
  const RequestClassChoice choice = choose_request_class(request_threads, listen_host, granted);
  set_request_class(choice.chosen);
  const bool realtime = choice.chosen == RequestClass::kRealtime;
  if (realtime || request_threads == RequestThreads::kNormal) {
    log_info("request threads",
             {{"class", realtime ? "realtime" : "normal"}, {"reason", choice.reason}});
  } else {
    log_warn("request threads", {{"class", "normal"}, {"reason", choice.reason}});
  }
}

// --time-scale's range: a clock a thousand times slower or a million times faster than real
// time; beyond, a replay's times leave what the store and the reports take (9e12 s).
constexpr double kMinTimeScale = 1e-3;
constexpr double kMaxTimeScale = 1e6;

struct Flags {
  std::string config_path, listen, request_threads;
  std::optional<std::string> database;  // given, even empty (refused), or the config's
  double time_scale = 1;
  std::string thread_cache;  // what run_with_thread_cache found in effect (heap.h)
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

// What malloc's thread cache runs with (heap.h): a debug line when alloxd set it, the usual case.
void log_thread_cache(const std::string& state) {
  const char* given = std::getenv("GLIBC_TUNABLES");
  const std::string tunables = given == nullptr ? "" : given;
  if (state == "set") {
    log_debug("malloc", {{"thread_cache", state}, {"GLIBC_TUNABLES", tunables}});
  } else {
    log_info("malloc", {{"thread_cache", state}, {"GLIBC_TUNABLES", tunables}});
  }
}

// The config file with the command line's overrides applied, the log and the request threads'
// class set from it; nullopt (each problem logged) when alloxd cannot run with it.
std::optional<ExtenderConfig> read_config(const Flags& flags) {
  auto config = load_extender_config(flags.config_path);
  if (!config) {
    // One event per problem: the config reader reports them all, one per line.
    std::istringstream problems(config.message());
    for (std::string problem; std::getline(problems, problem);) log_error(problem);
    return std::nullopt;
  }
  configure_log(config->log);
  log_thread_cache(flags.thread_cache);
  raise_descriptor_limit();
  if (!flags.listen.empty()) {
    if (auto s = set_listen_address(*config, flags.listen); !s) {
      log_error("--listen: " + s.message());
      return std::nullopt;
    }
  }
  if (!flags.request_threads.empty()) {
    auto threads = parse_request_threads(flags.request_threads);
    if (!threads) {
      log_error("--request-threads must be " + threads.message() + ", got \"" +
                flags.request_threads + "\"");
      return std::nullopt;
    }
    config->request_threads = *threads;
  }
  run_in_background_but_answer_at_once(config->request_threads, config->listen_host);
  if (flags.database) {
    if (flags.database->empty()) {
      log_error("--database: must name the SQLite file, got an empty path");
      return std::nullopt;
    }
    config->database = *flags.database;
  }

  return std::move(*config);
}

// alloxd's listeners: kube-scheduler's (always), the reports' and the gate webhook's (when
// configured).
struct Listeners {
  std::unique_ptr<HttpServer> extender, reports, webhook;
};

Expected<Listeners> start_listeners(ExtenderService& service, const ExtenderConfig& config) {
  Listeners listeners;
  // One pool for what may block (binds, reports, metrics, the admin API), shared by the
  // extender and reports listeners; the webhook's handler never blocks.
  std::shared_ptr<BlockingPool> blocking = start_blocking_pool();
  HttpServerOptions server_options;
  server_options.blocking = blocking;
  server_options.host = config.listen_host;
  server_options.port = config.listen_port;
  server_options.max_body_bytes = config.max_body_bytes;
  server_options.max_unread_reply_bytes = config.limits.unread_reply_bytes;
  server_options.threads = config.http_threads;
  server_options.request_class = true;  // kube-scheduler's listener (request_threads)
  auto server = HttpServer::start(service, server_options);
  if (!server) {
    return Error{"listen: " + server.message()};
  }
  if (config.reports_listen) {
    HttpServerOptions reports_options;
    reports_options.blocking = blocking;
    reports_options.host = config.reports_listen->host;
    reports_options.port = config.reports_listen->port;
    reports_options.read_only = true;
    reports_options.max_body_bytes = 0;  // GET only: any body is refused while it arrives
    reports_options.max_unread_reply_bytes = config.limits.unread_reply_bytes;
    reports_options.threads = 1;
    auto started = HttpServer::start(service, reports_options);
    if (!started) {
      return Error{"reports_listen: " + started.message()};
    }
    listeners.reports = std::move(*started);
    log_info("reports (GET only) on " + listeners.reports->url());
  }
  // The gate webhook on its own listener (HTTPS from the Secret-mounted cert and key): the API
  // server calls it, so it serves POST /admission/gate and /healthz, nothing else.
  if (config.webhook) {
    auto started = start_webhook_server(service, *config.webhook, config.max_body_bytes);
    if (!started) {
      return Error{"webhook: " + started.message()};
    }
    listeners.webhook = std::move(*started);
    log_info("gate webhook on " + listeners.webhook->url() + std::string(kGateWebhookPath));
  }
  listeners.extender = std::move(*server);
  return listeners;
}

// Stops accepting on every listener, then lets the requests in flight end, all within
// kDrainDeadline; whether they all did.
bool drain(Listeners& listeners) {
  const std::vector<HttpServer*> servers = {listeners.reports.get(), listeners.webhook.get(),
                                            listeners.extender.get()};
  for (HttpServer* server : servers) {
    if (server != nullptr) server->stop_accepting();
  }
  const auto drain_until = std::chrono::steady_clock::now() + kDrainDeadline;
  auto left = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
        std::max(drain_until - std::chrono::steady_clock::now(),
                 std::chrono::steady_clock::duration::zero()));
  };
  bool drained = listeners.extender->stop(left());
  if (listeners.reports) drained = listeners.reports->stop(left()) && drained;
  if (listeners.webhook) drained = listeners.webhook->stop(left()) && drained;
  return drained;
}

int run(const Flags& flags) {
  // Block the stop signals before any thread starts so only sigwait() below sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  configure_log(LogOptions{.program = "alloxd"});
  // Before any thread: the arena cap applies to the arenas threads create.
  if (Status heap = tune_heap(); !heap) {
    log_warn("the heap keeps glibc's defaults", {{"error", heap.message()}});
  }
  auto config = read_config(flags);
  if (!config) return 2;
  PolicyOptions options;
  options.alpha = config->alpha;
  options.starvation_bound = config->starvation_bound;
  options.batch_rounds = config->batch_rounds;
  auto policy = make_policy(config->policy, options);
  if (!policy) {
    log_error("policy: " + policy.message());
    return 2;
  }
  // With config->apiserver the service makes its own API client (watch, binds, actions).
  std::unique_ptr<ClusterApi> api;
  ServiceOptions service_options;
  if (flags.time_scale != 1) service_options.clock = scaled_clock(flags.time_scale);
  // One line when alloxd first turns ready (/readyz 200), for operators and scripts to wait on.
  // Readiness only changes inside the events on_change follows, so none is missed.
  std::atomic<ExtenderService*> watched{nullptr};
  std::atomic<bool> said_ready{false};
  service_options.on_change = [&watched, &said_ready] {
    ExtenderService* s = watched.load();
    if (s == nullptr || said_ready.load() || !s->ready() || said_ready.exchange(true)) return;
    const QueueView queue = s->queue();
    log_info("ready", {{"nodes", queue.nodes},
                       {"machines", queue.machines},
                       {"queued", queue.queued.size()},
                       {"running", queue.running.size()}});
  };
  auto service =
      ExtenderService::create(*config, std::move(*policy), std::move(api), service_options);
  if (!service) {
    // The store's error names the path and its cause (store.h); nothing has started yet.
    log_error(service.message());
    return 1;
  }
  watched.store(service->get());
  (*service)->start();
  auto listeners = start_listeners(**service, *config);
  if (!listeners) {
    log_error(listeners.message());
    return 1;
  }
  QueueView queue = (*service)->queue();
  // The message carries the URL first: scripts and tests read "listening on <url> ".
  log_info("listening on " + listeners->extender->url(), {{"policy", config->policy},
                                                          {"nodes", queue.nodes},
                                                          {"machines", queue.machines},
                                                          {"queued", queue.queued.size()},
                                                          {"running", queue.running.size()},
                                                          {"database", config->database}});

  int signal = 0;
  sigwait(&stop_signals, &signal);
  log_info("stopping", {{"signal", signal == SIGINT ? "SIGINT" : "SIGTERM"}});
  ExitWatchdog watchdog;
  const bool drained = drain(*listeners);
  if (!drained) {
    // A handler is still inside the service; destroying it now would pull the state from under
    // that thread. Everything acknowledged is already in SQLite.
    log_error("requests still in flight; exiting without them",
              {{"drain_ms", static_cast<long long>(kDrainDeadline.count())}});
    ::_exit(1);
  }
  listeners->reports.reset();
  listeners->webhook.reset();
  listeners->extender.reset();
  (*service)->stop();
  service->reset();
  log_info("stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // First: it may start this process again with the thread cache set (heap.h).
  const std::string thread_cache = run_with_thread_cache(argv);
  CLI::App app{"alloxd: the allox kube-scheduler extender (filter, prioritize, bind, preempt)"};
  Flags flags;
  app.add_option("-c,--config", flags.config_path, "alloxd YAML config (see alloxd/README.md)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--listen", flags.listen, "host:port to listen on, overriding the config");
  app.add_option("--database", flags.database, "SQLite database path, overriding the config");
  app.add_option("--request-threads", flags.request_threads,
                 "normal, auto or realtime: the class of the threads that answer kube-scheduler, "
                 "overriding the config's request_threads (manifests/realtime/ sets auto)");
  app.add_option("--time-scale", flags.time_scale,
                 "run alloxd's clock this many times faster than real time (demos, replays)")
      ->check(cli::number_in(kMinTimeScale, kMaxTimeScale));
  app.set_version_flag("--version", "alloxd 0.1.0");
  CLI11_PARSE(app, argc, argv);
  flags.thread_cache = thread_cache;
  return run(flags);
}
