// allox replay: plays kube-scheduler against a running alloxd over an AlloX-format trace, on a
// sped-up clock, with live progress and the fairness report at the end (the `./dev run` demo).
#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/exit.h"
#include "extender/config.h"
#include "extender/extender_client.h"
#include "extender/kube_scheduler_emulator.h"
#include "sim/allox_trace.h"

namespace allox::cli {

namespace {

std::atomic<bool> g_interrupted{false};

void on_interrupt(int) {
  g_interrupted = true;
}

struct ReplayArgs {
  std::string config = "examples/alloxd.yaml";
  std::string trace = "data/allox-google/experiment_large_23p.txt";
  std::string server;
  double speedup = 100;
  bool quiet = false;
};

const char* verb(extender::ReplayEvent::Kind kind) {
  switch (kind) {
    case extender::ReplayEvent::Kind::kArrived:
      return "arrived";
    case extender::ReplayEvent::Kind::kBound:
      return "bound";
    case extender::ReplayEvent::Kind::kDone:
      return "done";
    case extender::ReplayEvent::Kind::kBindFailed:
      return "bind failed";
  }
  return "?";
}

void print_event(const extender::ReplayEvent& e, std::size_t total) {
  std::printf("[t=%7.0fs] %-11s %-8s %-7s", e.at, verb(e.kind), e.job.c_str(), e.user.c_str());
  if (!e.node.empty()) std::printf(" on %s (%s)", e.node.c_str(), e.device.c_str());
  std::printf("%*s queued %2d  running %2d  done %2d/%zu\n", e.node.empty() ? 20 : 2, "", e.queued,
              e.running, e.done, total);
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

void run(const ReplayArgs& args) {
  auto config = extender::load_extender_config(args.config);
  if (!config) {
    std::cerr << "allox replay: " << config.message() << "\n";
    fail();
  }
  auto trace = load_allox_trace(args.trace);
  if (!trace) {
    std::cerr << "allox replay: " << trace.message() << "\n";
    fail();
  }
  std::vector<extender::ReplayJob> jobs;
  for (const TraceJob& t : trace->jobs) {
    jobs.push_back({t.job.id, t.job.user, t.job.arrival, t.job.time, t.true_time});
  }
  extender::ReplayOptions options;
  options.server = !args.server.empty() ? args.server
                                        : "http://" + config->listen_host + ":" +
                                              std::to_string(config->listen_port);
  options.admin_token = config->admin_token;
  for (const auto& node : config->nodes) options.nodes.push_back(node.name);
  for (const auto& r : config->devices.resources) options.resource_of[r.device] = r.resource;
  options.cpu_cores = config->devices.cores_per_machine;
  options.speedup = args.speedup;
  options.stop = &g_interrupted;
  if (!args.quiet) {
    options.on_event = [total = jobs.size()](const extender::ReplayEvent& e) {
      print_event(e, total);
    };
  }
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  std::printf("Replaying %zu jobs of %s against %s, %gx faster than real time\n", jobs.size(),
              args.trace.c_str(), options.server.c_str(), args.speedup);
  auto summary = extender::replay_as_kube_scheduler(jobs, options);
  if (!summary) {
    std::cerr << "allox replay: " << summary.message() << "\n";
    fail();
  }
  double total_jct = 0;
  int finished = 0;
  for (const auto& job : summary->jobs) {
    if (job.finish > 0) {
      total_jct += job.finish - job.arrival;
      ++finished;
    }
  }
  std::printf("\n%s: %d of %zu jobs done in %.0f simulated s (%.1f s wall); avg JCT %.0f s\n",
              summary->interrupted ? "Interrupted" : "Replay complete", finished,
              summary->jobs.size(), summary->simulated_s, summary->wall_s,
              finished > 0 ? total_jct / finished : 0.0);
  std::printf("Requests: %d filter, %d prioritize, %d bind (%d bind failures)\n",
              summary->filter_calls, summary->prioritize_calls, summary->bind_calls,
              summary->bind_failures);
  extender::ExtenderClient client(options.server, options.admin_token);
  print_fairness(client);
  if (summary->interrupted) fail();
}

}  // namespace

void add_replay_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "replay",
      "Play kube-scheduler against a running alloxd: every pod of an AlloX-format trace goes "
      "through filter, prioritize and bind; completions are reported as simulated time passes.");
  auto args = std::make_shared<ReplayArgs>();
  cmd->add_option("--config", args->config, "the alloxd config (nodes, devices, admin token)")
      ->capture_default_str();
  cmd->add_option("--trace", args->trace, "AlloX-format trace")->capture_default_str();
  cmd->add_option("--server", args->server, "alloxd URL (default: the config's listen address)");
  cmd->add_option("--speedup", args->speedup, "simulated seconds per wall-clock second")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--quiet", args->quiet, "no per-event progress lines");
  cmd->callback([args] { run(*args); });
}

}  // namespace allox::cli
