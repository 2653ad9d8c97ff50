// allox replay: a whole fake cluster on one machine, sped up. It starts a fake Kubernetes API
// server (kubesim/fake_api_server.h) holding the config's nodes, launches alloxd
// against it (or uses --server), and replays an AlloX-format trace: each job arrives as one pod
// per device variant, a kube-scheduler emulator schedules them through alloxd's extender verbs
// as the real v1.28 scheduler does (own resource filter first, unschedulable parking, 5-minute
// timeout), fake kubelets run bound pods for their true time. Progress is printed live; the
// fairness report at the end. This is the `./dev run` demo.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "kubesim/replay_command.h"
#include "cli/exit.h"
#include "core/log.h"
#include "alloxd/config.h"
#include "kubesim/alloxd_process.h"
#include "kubesim/fake_api_server.h"
#include "kubesim/replay.h"
#include "extender_api/extender_client.h"
#include "alloxd/model/pod.h"
#include "sim/allox_trace.h"

namespace allox::cli {

namespace {

using emulator::ReplayEvent;

std::atomic<bool> g_interrupted{false};

void on_interrupt(int) {
  g_interrupted = true;
}

struct ReplayArgs {
  std::string config = "examples/alloxd.yaml";
  std::string trace = "data/allox-google/experiment_large_23p.txt";
  std::string scheduler_config = "manifests/scheduler-config.yaml";
  std::string server;
  std::string alloxd;
  std::string listen = "127.0.0.1:0";
  std::string state = "run";
  double speedup = 100;
  bool gates = false;
  bool report_done = true;
  bool linger = false;
  bool quiet = false;
  bool verbose = false;
};

// alloxd beside this allox binary (build/cli/), else on PATH.
std::string default_alloxd() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto sibling = self.parent_path() / "alloxd";
    if (std::filesystem::exists(sibling)) return sibling.string();
  }
  return "alloxd";
}

void print_event(const ReplayEvent& e, std::size_t total, bool verbose) {
  using Kind = ReplayEvent::Kind;
  if (!verbose &&
      (e.kind == Kind::kRetried || e.kind == Kind::kUnschedulable || e.kind == Kind::kDeleted)) {
    return;
  }
  std::printf("[t=%7.0fs] %-11s %-8s %-7s", e.at, emulator::replay_event_name(e.kind),
              e.job.c_str(), e.user.c_str());
  if (!e.node.empty()) std::printf(" on %s (%s)", e.node.c_str(), e.device.c_str());
  if (e.kind == Kind::kDeleted || e.kind == Kind::kGateRemoved) std::printf(" %s", e.pod.c_str());
  std::printf("%*s queued %2d  running %2d  done %2d/%zu", e.node.empty() ? 20 : 2, "", e.queued,
              e.running, e.done, total);
  if (!e.detail.empty()) std::printf("  (%s)", e.detail.c_str());
  std::printf("\n");
  std::fflush(stdout);
}

void print_fairness(extender::ExtenderClient& client) {
  auto report = client.get("/v1/fairness");
  if (!report) {
    std::cerr << "allox replay: fairness report: " << report.message() << "\n";
    return;
  }
  std::printf("\nFairness report (GET /v1/fairness)\n");
  std::printf("%-10s %8s %10s %7s %8s %5s %10s\n", "user", "share", "win.share", "queued",
              "running", "done", "mean JCT");
  for (const auto& user : report->value("users", nlohmann::json::array())) {
    const auto jct = user.find("mean_jct");
    std::printf("%-10s %8.3f %10.3f %7d %8d %5d %9s\n", user.value("user", "").c_str(),
                user.value("current_share", 0.0), user.value("windowed_share", 0.0),
                user.value("queued", 0), user.value("running", 0), user.value("done", 0),
                jct == user.end() || jct->is_null()
                    ? "-"
                    : (std::to_string(static_cast<long>(jct->get<double>())) + "s").c_str());
  }
  if (report->contains("jain_windowed_share")) {
    std::printf("Jain's index of shares: %.3f\n", (*report)["jain_windowed_share"].get<double>());
  }
}

[[noreturn]] void die(const std::string& message) {
  std::cerr << "allox replay: " << message << "\n";
  fail();
}

void run(const ReplayArgs& args) {
  auto config = extender::load_extender_config(args.config);
  if (!config) die(config.message());
  auto trace = load_allox_trace(args.trace);
  if (!trace) die(trace.message());
  auto scheduler = emulator::load_scheduler_configuration(args.scheduler_config);
  if (!scheduler) die(scheduler.message());
  if (scheduler->extenders.empty()) die(args.scheduler_config + ": no extender configured");
  if (config->nodes.empty()) die(args.config + ": no nodes to put in the fake cluster");

  std::vector<emulator::ReplayJob> jobs;
  for (const TraceJob& t : trace->jobs) {
    jobs.push_back({t.job.id, t.job.user, t.job.arrival, t.job.time, t.true_time});
  }
  emulator::ReplayOptions options;
  options.scheduler = *scheduler;
  options.scheduler_name = scheduler->scheduler_names.front();
  for (const auto& r : config->devices.resources) {
    options.resource_of[r.device] = r.resource;
    for (const auto& rule : r.node_labels) {
      options.resource_of[rule.device] = r.resource;
      options.label_of.emplace(rule.device, std::pair(rule.label, rule.value));
    }
  }
  options.cpu_cores = config->devices.cores_per_machine;
  options.gated = args.gates;
  options.stop = &g_interrupted;

  emulator::SimClock clock(args.speedup);
  emulator::FakeApiServerOptions api_options;
  api_options.token = "replay-" + std::to_string(::getpid());
  api_options.clock = [&clock] { return clock.now(); };
  auto api = emulator::FakeApiServer::start(api_options);
  if (!api) die("fake API server: " + api.message());
  for (const auto& node : config->nodes) {
    (*api)->add_node(node.name, emulator::node_allocatable(node.machines, options),
                     emulator::node_labels(node.machines, options));
  }

  std::error_code ec;
  std::filesystem::create_directories(args.state, ec);
  std::unique_ptr<emulator::AlloxdProcess> alloxd;
  std::string server = args.server;
  if (server.empty()) {
    emulator::AlloxdLaunch launch;
    launch.binary = args.alloxd.empty() ? default_alloxd() : args.alloxd;
    launch.config = args.config;
    launch.apiserver_url = (*api)->url();
    launch.apiserver_token = api_options.token;
    launch.listen = args.listen;
    launch.database = args.state + "/replay.db";
    for (const char* suffix : {"", "-wal", "-shm"})
      std::filesystem::remove(launch.database + suffix, ec);  // a fresh queue each time
    launch.log = args.state + "/alloxd.log";
    launch.time_scale = args.speedup;
    auto started = emulator::AlloxdProcess::start(launch);
    if (!started) die(started.message());
    alloxd = std::move(*started);
    server = alloxd->url();
    std::printf("alloxd is up on %s against the fake API server %s (store %s, log %s)\n",
                server.c_str(), (*api)->url().c_str(), launch.database.c_str(), launch.log.c_str());
  }
  for (auto& extender : options.scheduler.extenders) extender.url_prefix = server;

  extender::ExtenderClient done_client(server, config->admin_token);
  std::size_t total = jobs.size();
  std::size_t gates_removed = 0, variants_deleted = 0;
  options.on_event = [&](const ReplayEvent& e) {
    if (e.kind == ReplayEvent::Kind::kGateRemoved) ++gates_removed;
    if (e.kind == ReplayEvent::Kind::kDeleted) ++variants_deleted;
    if (!args.quiet) print_event(e, total, args.verbose);
    // The job's own completion report (README: POST /v1/jobs/{id}/done), besides the pod's
    // Succeeded phase that alloxd reads from the API server.
    if (e.kind == ReplayEvent::Kind::kDone && args.report_done) {
      // alloxd names the job within its pods' namespace (alloxd/model/pod.h).
      const std::string id = extender::job_id_in_namespace(options.pod_namespace, e.job);
      auto answer = done_client.post("/v1/jobs/" + extender::path_segment(id) + "/done",
                                     nlohmann::json::object(), true);
      if (!answer && !args.quiet) {
        log_warn("completion report refused", {{"job", id}, {"error", answer.message()}});
      }
    }
  };
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  std::printf(
      "Replaying %zu jobs of %s through kube-scheduler (%s) and alloxd, %gx faster than "
      "real time%s\n",
      jobs.size(), args.trace.c_str(), args.scheduler_config.c_str(), args.speedup,
      args.gates ? ", pods gated by allox.io/queue" : "");
  std::fflush(stdout);
  auto summary = emulator::replay_jobs((*api)->objects(), clock, jobs, options);
  if (!summary) die(summary.message());
  double total_jct = 0;
  int finished = 0;
  for (const auto& job : summary->jobs) {
    if (job.finish > 0) {
      total_jct += job.finish - job.arrival;
      ++finished;
    }
  }
  const auto& s = summary->scheduler;
  std::printf("\n%s: %d of %zu jobs done in %.0f simulated s (%.1f s wall); avg JCT %.0f s\n",
              summary->interrupted ? "Interrupted" : "Replay complete", finished,
              summary->jobs.size(), summary->simulated_s, summary->wall_s,
              finished > 0 ? total_jct / finished : 0.0);
  std::printf(
      "Requests: %llu filter, %llu prioritize, %llu bind (%llu bind failures); %llu "
      "attempts, %llu parked, %llu released by the 5-minute timeout\n",
      static_cast<unsigned long long>(s.filter_calls),
      static_cast<unsigned long long>(s.prioritize_calls),
      static_cast<unsigned long long>(s.bind_calls),
      static_cast<unsigned long long>(s.bind_failures), static_cast<unsigned long long>(s.attempts),
      static_cast<unsigned long long>(s.unschedulable),
      static_cast<unsigned long long>(s.timeouts));
  std::printf("Released by alloxd: %zu gates removed, %zu unused variants deleted\n", gates_removed,
              variants_deleted);
  // A free-running clock magnifies every real millisecond of reaction by the speed-up; the
  // real reaction time is the simulated figure divided by it (tests/alloxd/end_to_end_test.cc
  // measures it 1:1 on a stepped clock).
  const double p50 = emulator::quantile(summary->completion_to_bind, 0.5);
  const double p99 = emulator::quantile(summary->completion_to_bind, 0.99);
  std::printf(
      "Completion to bind: p50 %.1f s, p99 %.1f s simulated over %zu reused machines (at %gx: "
      "p50 %.0f ms, p99 %.0f ms of wall time)\n",
      p50, p99, summary->completion_to_bind.size(), args.speedup, p50 / args.speedup * 1000,
      p99 / args.speedup * 1000);
  std::printf("Jobs that ran more than once: %zu; pods left pending: %zu\n",
              summary->ran_twice.size(), summary->left_pending.size());
  extender::ExtenderClient client(server, config->admin_token);
  print_fairness(client);
  std::printf("\nStatus page:     %s/\n", server.c_str());
  std::printf("Fairness report: %s/v1/fairness   Metrics: %s/metrics\n", server.c_str(),
              server.c_str());
  std::fflush(stdout);
  if (args.linger && !summary->interrupted) {
    std::printf(
        "alloxd and the fake API server keep serving the finished run; Ctrl-C stops them.\n");
    std::fflush(stdout);
    while (!g_interrupted.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (alloxd) alloxd->stop();
  (*api)->stop();
  if (summary->interrupted && !args.linger) fail();
}

}  // namespace

void add_replay_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "replay",
      "A fake cluster on this machine: a fake API server with the config's nodes, alloxd against "
      "it, a kube-scheduler emulator and kubelets, replaying an AlloX-format trace sped up.");
  auto args = std::make_shared<ReplayArgs>();
  cmd->add_option("--config", args->config, "the alloxd config (nodes, devices, admin token)")
      ->capture_default_str();
  cmd->add_option("--trace", args->trace, "AlloX-format trace")->capture_default_str();
  cmd->add_option("--scheduler-config", args->scheduler_config,
                  "KubeSchedulerConfiguration: profiles and extenders (managedResources ...)")
      ->capture_default_str();
  cmd->add_option("--alloxd", args->alloxd, "alloxd binary (default: beside allox)");
  cmd->add_option("--server", args->server,
                  "use this running alloxd instead of launching one (it must list nodes from "
                  "somewhere else: binds then fail)");
  cmd->add_option("--listen", args->listen, "alloxd's address (port 0: a free one)")
      ->capture_default_str();
  cmd->add_option("--state", args->state, "folder for alloxd's store and log")
      ->capture_default_str();
  cmd->add_option("--speedup", args->speedup, "simulated seconds per wall-clock second")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--gates", args->gates,
                "create pods with the allox.io/queue scheduling gate (alloxd must remove it)");
  cmd->add_flag("!--no-report-done", args->report_done,
                "do not POST /v1/jobs/{id}/done: alloxd learns completions from pod status only");
  cmd->add_flag("--linger", args->linger, "keep serving after the replay until Ctrl-C");
  cmd->add_flag("--quiet", args->quiet, "no per-event progress lines");
  cmd->add_flag("--verbose", args->verbose, "also print parking, retries and variant deletions");
  cmd->callback([args] { run(*args); });
}

}  // namespace allox::cli
