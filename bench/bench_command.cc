// allox bench matcher: times the matcher at its target sizes and prints a table.
#include "bench/bench_command.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/cluster_bench.h"
#include "bench/harness_allocator.h"
#include "bench/matcher_bench.h"
#include "bench/unseen_bench.h"
#include "cli/exit.h"

namespace allox::cli {
namespace {

using matcher::bench::BenchOptions;
using matcher::bench::BenchRow;

std::string fixed(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

void print_header(const BenchOptions& options) {
  std::cout << "matcher benchmark: backend " << matcher::backend_name(options.backend)
            << ", median of " << options.repetitions
            << " solves (wall and CPU time), peak memory of the measuring process;\n"
            << "naive = every machine gets all J positions (J*M*J arcs), solved once, where it "
               "has at most "
            << options.max_naive_arcs << " arcs; speed-up = naive cpu / cpu\n\n";
  std::cout << std::left << std::setw(38) << "case" << std::right << std::setw(6) << "jobs"
            << std::setw(9) << "machines" << std::setw(9) << "arcs" << std::setw(8) << "priced"
            << std::setw(7) << "rounds" << std::setw(9) << "wall ms" << std::setw(9) << "cpu ms"
            << std::setw(8) << "peak MB" << std::setw(11) << "naive arcs" << std::setw(11)
            << "naive cpu" << std::setw(9) << "naive MB" << std::setw(9) << "speed-up\n";
}

void print_row(const BenchRow& row) {
  const auto& c = row.bench_case;
  const auto& g = row.grouped;
  std::cout << std::left << std::setw(38) << c.name << std::right << std::setw(6) << c.jobs
            << std::setw(9) << c.machines << std::setw(9) << g.arcs << std::setw(8) << g.model_arcs
            << std::setw(7) << g.rounds << std::setw(9) << fixed(g.solve_ms, 1) << std::setw(9)
            << fixed(g.cpu_ms, 1) << std::setw(8) << fixed(g.peak_rss_mb, 0) << std::setw(11)
            << row.naive_arcs;
  if (row.naive) {
    if (row.naive->objective != g.objective) {
      std::cerr << "naive and grouped objectives differ for " << c.name << "\n";
      fail();
    }
    std::cout << std::setw(11) << fixed(row.naive->cpu_ms, 1) << std::setw(9)
              << fixed(row.naive->peak_rss_mb, 0) << std::setw(8)
              << fixed(row.naive->cpu_ms / g.cpu_ms, 0) << "x";
  } else {
    std::cout << std::setw(11) << "-" << std::setw(9) << "-" << std::setw(9) << "-";
  }
  std::cout << "\n" << std::flush;
}

// One line of the target table: what, the median CPU time, the target, the ratio.
struct TargetLine {
  std::string row;
  double cpu_ms = 0;
  double target_ms = 0;
};

void print_targets(const std::vector<TargetLine>& lines, const BenchOptions& options) {
  if (lines.empty()) return;
  std::cout << "\ntargets: median CPU time of " << options.repetitions << " runs (backend "
            << matcher::backend_name(options.backend)
            << "); ratio = measured / target, below 1 meets it\n\n";
  std::cout << std::left << std::setw(52) << "row" << std::right << std::setw(12) << "cpu ms"
            << std::setw(12) << "target ms" << std::setw(8) << "ratio"
            << "\n";
  for (const TargetLine& line : lines) {
    std::cout << std::left << std::setw(52) << line.row << std::right << std::setw(12)
              << fixed(line.cpu_ms, 1) << std::setw(12) << fixed(line.target_ms, 0) << std::setw(8)
              << fixed(line.cpu_ms / line.target_ms, 2) << "  "
              << (line.cpu_ms < line.target_ms ? "met" : "NOT met") << "\n";
  }
}

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// The executable `name` beside this one (build/cli/, or the image's bin/), else on PATH.
std::string beside_this_binary(const std::string& name) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && std::filesystem::exists(self.parent_path() / name))
    return (self.parent_path() / name).string();
  return name;
}

std::string alloxd_beside_allox() { return beside_this_binary("alloxd"); }

void print_cluster_header(const bench::ClusterBenchOptions& o, int repeat) {
  std::printf(
      "bench cluster: %zu nodes x (%d GPUs + %d CPU bundles), %zu jobs queued at once as gated "
      "GPU + CPU pods (Gavel speeds), the real alloxd (%s) behind a fake API server and the "
      "kube-scheduler v1.28 emulator, %gx simulated time, allox rounds: %s, starvation bound "
      "%g s, cluster threads: %s, request threads: %s; %d run(s). "
      "Wall-clock figures on a "
      "shared machine: under load.\n\n",
      o.nodes, o.gpus_per_node, o.cpu_bundles_per_node, o.pending, o.alloxd_binary.c_str(),
      o.speedup, o.batch_rounds ? "batch" : "one start per solve (paper)",
      bench::effective_starvation_bound(o), o.cluster_threads.c_str(),
      o.request_threads.c_str(), repeat);
  std::printf("%4s %13s %6s %8s %8s %9s %9s %8s %9s %9s %8s %10s %8s %8s %7s\n", "run",
              "bound once", "twice", "unbound", "pods/s", "c2b p50", "c2b p99", "filters",
              "nodes/f", "filt p50", "filt p99", "plan ms", "queued", "RSS MB", "wall s");
}

void print_cluster_row(int run, const bench::ClusterBenchResult& r) {
  std::printf(
      "%4d %6zu/%-6zu %6zu %8zu %8.0f %7.0fms %7.0fms %8zu %9.0f %7.2fms %7.2fms %10.0f %8zu "
      "%8.0f %7.1f%s\n",
      run, r.bound_once, r.jobs, r.bound_twice, r.unbound, r.all_pods_per_second,
      r.completion_to_bind_p50_ms, r.completion_to_bind_p99_ms, r.filter_calls, r.filter_nodes_mean,
      r.filter_p50_ms, r.filter_p99_ms, r.plan_ms, r.plan_queued, r.alloxd_peak_rss_mb, r.wall_s,
      r.timed_out ? "  (stopped at --max-wall)" : "");
  std::fflush(stdout);
}

// "title: name 12.3 s (41%), name x4 5.0 s (17%), ...": the groups by CPU, largest first, each
// with its share of the process's total.
void print_cpu_by_thread(const char* title,
                         const std::map<std::string, bench::ThreadGroupCpu>& groups,
                         double total_s) {
  std::vector<std::pair<std::string, bench::ThreadGroupCpu>> sorted(groups.begin(), groups.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second.seconds > b.second.seconds;
  });
  std::string line;
  for (const auto& [name, group] : sorted) {
    if (!line.empty()) line += ", ";
    line += name;
    if (group.threads > 1) line += " x" + std::to_string(group.threads);
    line += " " + fixed(group.seconds, 1) + " s (" +
            fixed(100 * group.seconds / std::max(1e-9, total_s), 0) + "%)";
  }
  std::printf("%s: %s\n", title, line.c_str());
}

void add_cluster_command(CLI::App& parent) {
  auto* cmd = parent.add_subcommand(
      "cluster",
      "alloxd end to end at cluster scale: a fake API server with N nodes, the real alloxd, the "
      "kube-scheduler emulator and fake kubelets; a backlog of gated jobs; bind rate, "
      "completion-to-bind, /filter latency, plan time and alloxd's RSS against their "
      "targets.");
  auto o = std::make_shared<bench::ClusterBenchOptions>();
  auto repeat = std::make_shared<int>(1);
  cmd->add_option("--nodes", o->nodes, "nodes in the fake cluster")->capture_default_str();
  cmd->add_option("--pending", o->pending, "jobs queued at once (a GPU pod and a CPU pod each)")
      ->capture_default_str();
  cmd->add_option("--gpus-per-node", o->gpus_per_node)->capture_default_str();
  cmd->add_option("--cpu-bundles-per-node", o->cpu_bundles_per_node)->capture_default_str();
  cmd->add_option("--speedup", o->speedup, "simulated seconds per wall-clock second")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--median-duration", o->median_duration,
                  "median job time on its fastest GPU (simulated s)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--cpu-slowdown", o->cpu_slowdown, "a CPU bundle's time over a K80's")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--users", o->users)->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--max-wall", o->max_wall_s, "stop a run after this many wall seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--seed", o->seed)->capture_default_str();
  cmd->add_flag("--batch-rounds", o->batch_rounds,
                "alloxd starts every job a round's plan puts first on an idle machine (not one "
                "per matcher solve, the paper's rounds)");
  cmd->add_option("--starvation-bound", o->starvation_bound,
                  "alloxd's starvation_bound in simulated seconds (default: the run's horizon, "
                  "--max-wall x --speedup, so the backlog runs AlloX rounds, not the guard)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--cluster-threads", o->cluster_threads,
                  "the emulated cluster's threads (API server, kubelets, binders): normal "
                  "(equals of alloxd's on these cores) or idle (on what alloxd and the "
                  "kube-scheduler thread leave, as on machines of their own)")
      ->check(CLI::IsMember({"normal", "idle"}))
      ->capture_default_str();
  cmd->add_option("--request-threads", o->request_threads,
                  "alloxd's request_threads: normal (alloxd's default), auto (real-time where "
                  "the kernel grants it and the listener is on loopback) or realtime "
                  "(SCHED_FIFO, needs CAP_SYS_NICE); the emulated kube-scheduler stays normal, "
                  "as the shipped one does")
      ->check(CLI::IsMember({"auto", "normal", "realtime"}))
      ->capture_default_str();
  cmd->add_option("--saturation", o->saturation,
                  "ungated, unbound pods waiting that make a moment saturated (the saturated "
                  "bind rate counts only those moments)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--repeat", *repeat, "runs (medians reported when more than one)")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  cmd->add_option("--alloxd", o->alloxd_binary, "alloxd binary (default: beside allox)");
  cmd->add_option("--scheduler-config", o->scheduler_config)->capture_default_str();
  cmd->add_option("--throughputs", o->throughputs, "Gavel's simulation_throughputs.json")
      ->capture_default_str();
  cmd->add_option("--state", o->state_dir, "folder for alloxd's config, store and log")
      ->capture_default_str();
  cmd->callback([o, repeat] {
    // May start this command again, with the harness's allocator settings.
    const std::string allocator = bench::run_with_harness_tunables();
    if (o->alloxd_binary.empty()) o->alloxd_binary = alloxd_beside_allox();
    print_cluster_header(*o, *repeat);
    std::vector<bench::ClusterBenchResult> runs;
    for (int r = 1; r <= *repeat; ++r) {
      auto result = bench::run_cluster_bench(*o);
      if (!result.ok()) {
        std::cerr << "allox bench cluster: " << result.message() << "\n";
        fail();
      }
      print_cluster_row(r, *result);
      runs.push_back(*result);
    }
    auto median = [&](auto field) {
      std::vector<double> values;
      for (const auto& run : runs) values.push_back(static_cast<double>(field(run)));
      return median_of(values);
    };
    using R = bench::ClusterBenchResult;
    struct Line {
      const char* row;
      double value, target;
      bool at_least;
      const char* unit;
    };
    const Line lines[] = {
        {"pods bound per second (saturated)",
         median([](const R& r) { return r.saturated_pods_per_second; }), 500, true, "pods/s"},
        {"pods bound per second (every bind)",
         median([](const R& r) { return r.all_pods_per_second; }), 500, true, "pods/s"},
        {"/filter p99 (every call)", median([](const R& r) { return r.filter_p99_ms; }), 2, false,
         "ms"},
        {"plan time at the largest queue", median([](const R& r) { return r.plan_ms; }), 1000,
         false, "ms"},
        {"alloxd peak RSS", median([](const R& r) { return r.alloxd_peak_rss_mb; }), 1024, false,
         "MB"},
    };
    std::printf("\ntargets, median of %zu run(s); ratio = measured / target\n\n",
                runs.size());
    std::printf("%-34s %12s %12s %7s\n", "row", "measured", "target", "ratio");
    for (const Line& line : lines) {
      const bool met = line.at_least ? line.value >= line.target : line.value < line.target;
      std::printf("%-34s %9.2f %-6s %2s %7.0f %-6s %5.2f  %s\n", line.row, line.value, line.unit,
                  line.at_least ? ">=" : " <", line.target, line.unit, line.value / line.target,
                  met ? "met" : "NOT met");
    }
    std::printf(
        "saturated: %.3f s of the last run with >= %zu pods ungated and unbound, %zu binds in it\n",
        runs.back().saturated_s, o->saturation, runs.back().saturated_binds);
    std::printf("completion-to-bind p50 / p99: %.0f / %.0f ms wall (%zu machines reused)\n",
                median([](const R& r) { return r.completion_to_bind_p50_ms; }),
                median([](const R& r) { return r.completion_to_bind_p99_ms; }),
                runs.back().completion_to_bind_samples);
    std::printf(
        "/filter with >= 90%% of the nodes: p50 %.2f ms, p99 %.2f ms (%zu calls, last run)\n",
        runs.back().full_filter_p50_ms, runs.back().full_filter_p99_ms,
        runs.back().full_filter_calls);
    std::printf("/bind: p50 %.2f ms, p99 %.2f ms (last run)\n", runs.back().bind_p50_ms,
                runs.back().bind_p99_ms);
    if (const R& last = runs.back(); last.alloxd_filter_calls > 0) {
      // The round trip's tail against alloxd's share of it (bench/cluster_bench.h).
      std::printf(
          "/filter over 2 ms: %.2f%% of the round trips; inside alloxd (its histogram, from the "
          "request read to the answer rendered) %.2f%% of %llu calls, p99 in (%g, %g] ms (last "
          "run)\n",
          100.0 * static_cast<double>(last.filter_over_2ms) /
              static_cast<double>(std::max<std::size_t>(1, last.filter_calls)),
          100.0 * static_cast<double>(last.alloxd_filter_over_2ms) /
              static_cast<double>(last.alloxd_filter_calls),
          static_cast<unsigned long long>(last.alloxd_filter_calls),
          last.alloxd_filter_p99_above_ms, last.alloxd_filter_p99_upto_ms);
      std::printf(
          "/filter waits for alloxd's watch (behind the cluster; kube-scheduler's cycle waits "
          "too): %llu settled by a plan, %llu vain, %.2f s in all (last run)\n",
          static_cast<unsigned long long>(last.watch_waits_settled),
          static_cast<unsigned long long>(last.watch_waits_vain), last.watch_wait_seconds);
    }
    {
      const R& last = runs.back();
      const char* alloxd_class = !last.alloxd_request_threads_realtime.has_value() ? "unknown"
                                 : *last.alloxd_request_threads_realtime           ? "real-time"
                                                                                   : "normal";
      std::printf(
          "request threads as run: alloxd's %s, the emulated kube-scheduler's scheduling "
          "thread normal (last run)\n",
          alloxd_class);
    }
    std::printf("/filter over 2 ms by tenth of the calls, in order (last run):");
    for (double share : runs.back().filter_over_2ms_share_by_tenth)
      std::printf(" %.1f%%", 100 * share);
    std::printf("\n");
    std::printf(
        "plan measured at %zu queued jobs: %.0f ms wall, of which %.0f ms the planner thread's "
        "CPU (it runs at nice 10, behind the request threads); alloxd CPU %.1f s (last run)\n",
        runs.back().plan_queued, runs.back().plan_ms, runs.back().plan_cpu_ms,
        runs.back().alloxd_cpu_s);
    {
      const R& last = runs.back();
      const double bound = static_cast<double>(std::max<std::size_t>(1, last.bound_once));
      std::printf(
          "harness CPU (this process: API server, scheduler, kubelets) %.1f s over the replay, "
          "%.2f ms per bound job; alloxd %.2f ms per bound job (last run)\n",
          last.harness_cpu_s, last.harness_cpu_s * 1000 / bound, last.alloxd_cpu_s * 1000 / bound);
      std::printf(
          "alloxd's CPU and API requests include deleting the unused variants: every pod bound "
          "or deleted %.1f s after the last bind%s (last run)\n",
          last.settle_s,
          last.left_unbound == 0
              ? ""
              : (", " + std::to_string(last.left_unbound) + " still unbound when the wait ended")
                    .c_str());
      std::printf(
          "unused variants deleted before the last bind: %zu of %zu, p50 %.1f s and p99 %.1f s "
          "after their job's release (last run)\n",
          last.deleted_in_run, last.pods - last.bound_once - last.bound_twice,
          last.deletion_lag_p50_s, last.deletion_lag_p99_s);
      print_cpu_by_thread("alloxd CPU by thread (its life, live threads; last run)",
                          last.alloxd_threads, last.alloxd_cpu_s);
      print_cpu_by_thread("harness CPU by thread (over the replay; last run)", last.harness_threads,
                          last.harness_cpu_s);
      std::printf(
          "harness allocator: %s (bench/harness_allocator.h; alloxd runs with the "
          "environment allox was given)\n",
          allocator.c_str());
    }
    {
      const R& last = runs.back();
      const double bound = static_cast<double>(std::max<std::size_t>(1, last.bound_once));
      std::uint64_t total = 0;
      std::string kinds;
      for (const auto& [kind, count] : last.api_requests) {
        total += count;
        char part[96];
        std::snprintf(part, sizeof part, "%s%s %.2f", kinds.empty() ? "" : ", ", kind.c_str(),
                      static_cast<double>(count) / bound);
        kinds += part;
      }
      std::printf("alloxd's API requests per bound job: %.2f (%s) (last run)\n",
                  static_cast<double>(total) / bound, kinds.c_str());
    }
    bool exact = true;
    for (const auto& run : runs) {
      exact = exact && run.bound_twice == 0 && (run.timed_out || run.unbound == 0) &&
              run.bound_once + run.unbound == run.jobs;
    }
    std::printf("every job bound exactly once: %s\n", exact ? "yes" : "NO");
    if (!exact) fail();
  });
}

void print_unseen_row(const char* kind, const bench::FilterFigures& f, double known_rate) {
  std::printf("%-8s %6zu %9.0f %8.2f %8.2f %8.2f %6zu %8zu %10zu %6zu %7.2f\n", kind, f.calls,
              f.per_second, f.p50_ms, f.p99_ms, f.max_ms, f.kept, f.planned, f.unplanned, f.errors,
              known_rate > 0 ? f.per_second / known_rate : 0.0);
}

void add_unseen_command(CLI::App& parent) {
  auto* cmd = parent.add_subcommand(
      "unseen",
      "/filter for a pod alloxd has not seen (created on a fake API server and asked at once, or "
      "asked before the watch can deliver it) against /filter for a known queued pod, in one "
      "run of the real alloxd.");
  auto o = std::make_shared<bench::UnseenBenchOptions>();
  auto repeat = std::make_shared<int>(1);
  cmd->add_option("--nodes", o->nodes, "nodes (one GPU and one CPU bundle each, all busy)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--queued", o->queued, "pods waiting before the measurement")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--rounds", o->rounds, "rounds of one burst per kind")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--burst", o->burst, "/filter calls per kind per round")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--connections", o->connections,
                  "concurrent callers (kube-scheduler's scheduling loop asks one at a time)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--rate", o->rate, "calls per second within a burst; 0: as fast as answered")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--repeat", *repeat, "runs (medians reported when more than one)")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  cmd->add_option("--alloxd", o->alloxd_binary, "alloxd binary (default: beside allox)");
  cmd->add_option("--state", o->state_dir, "folder for alloxd's config, store and log")
      ->capture_default_str();
  cmd->callback([o, repeat] {
    if (o->alloxd_binary.empty()) o->alloxd_binary = alloxd_beside_allox();
    std::printf(
        "bench unseen: %zu nodes (1 GPU + 1 CPU bundle each, all busy), %zu pods queued, the "
        "real alloxd (%s) watching a fake API server (ungated pods: the nudge path); %zu "
        "round(s) of %zu /filter calls per kind naming every node, %zu connection(s), %s; %d "
        "run(s). Wall-clock figures on a shared machine: under load.\n"
        "known: a queued pod in the plan; arrival: created on the API server, then asked at "
        "once; unseen: asked before it is created (before any watch event).\n"
        "answers: kept = a node kept, planned = \"queued: position\" from a plan that has the "
        "job, unplanned = from a plan without it (parked until the controller's nudge).\n\n",
        o->nodes, o->queued, o->alloxd_binary.c_str(), o->rounds, o->burst, o->connections,
        o->rate > 0 ? (std::to_string(o->rate) + " calls/s").c_str() : "as fast as answered",
        *repeat);
    std::vector<bench::UnseenBenchResult> runs;
    for (int r = 1; r <= *repeat; ++r) {
      auto result = bench::run_unseen_bench(*o);
      if (!result.ok()) {
        std::cerr << "allox bench unseen: " << result.message() << "\n";
        fail();
      }
      std::printf("run %d (%.0f s, %zu queued at the end)\n", r, result->wall_s,
                  result->queued_at_end);
      std::printf("%-8s %6s %9s %8s %8s %8s %6s %8s %10s %6s %7s\n", "kind", "calls", "req/s",
                  "p50 ms", "p99 ms", "max ms", "kept", "planned", "unplanned", "errors", "/known");
      print_unseen_row("known", result->known, result->known.per_second);
      print_unseen_row("arrival", result->arrival, result->known.per_second);
      print_unseen_row("unseen", result->unseen, result->known.per_second);
      std::fflush(stdout);
      runs.push_back(*result);
    }
    if (runs.size() < 2) return;
    using F = bench::FilterFigures;
    auto median = [&](auto kind, auto field) {
      std::vector<double> values;
      for (const auto& run : runs) values.push_back(field(kind(run)));
      return median_of(values);
    };
    std::printf("\nmedians of %zu runs\n%-8s %9s %8s %8s %7s\n", runs.size(), "kind", "req/s",
                "p50 ms", "p99 ms", "/known");
    const double known_rate = median([](const auto& r) -> const F& { return r.known; },
                                     [](const F& f) { return f.per_second; });
    auto line = [&](const char* name, auto kind) {
      const double rate = median(kind, [](const F& f) { return f.per_second; });
      std::printf("%-8s %9.0f %8.2f %8.2f %7.2f\n", name, rate,
                  median(kind, [](const F& f) { return f.p50_ms; }),
                  median(kind, [](const F& f) { return f.p99_ms; }), rate / known_rate);
    };
    line("known", [](const auto& r) -> const F& { return r.known; });
    line("arrival", [](const auto& r) -> const F& { return r.arrival; });
    line("unseen", [](const auto& r) -> const F& { return r.unseen; });
  });
}

}  // namespace

void add_bench_commands(CLI::App& bench) {
  add_cluster_command(bench);
  add_unseen_command(bench);
  auto* cmd = bench.add_subcommand(
      "matcher",
      "Matcher solve time and peak memory at the target sizes, against the naive graph (all J "
      "positions on every machine) where it fits.");
  auto options = std::make_shared<BenchOptions>();
  auto backend = std::make_shared<std::string>("auto");
  cmd->add_option("--repeat", options->repetitions, "solves per case (median reported)")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--max-naive-arcs", options->max_naive_arcs,
                  "skip the naive graph above this many arcs");
  cmd->add_option("--backend", *backend, "auto, lemon, boost, glpk, transport or assignment")
      ->check(CLI::IsMember({"auto", "lemon", "boost", "glpk", "transport", "assignment"}));
  cmd->add_option("--seed", options->seed, "instance seed");
  auto only = std::make_shared<std::string>();
  cmd->add_option("--only", *only, "run only the cases whose name contains this text");
  auto max_jobs = std::make_shared<std::size_t>(1'000'000);
  cmd->add_option("--max-jobs", *max_jobs,
                  "skip cases with more queued jobs (boost and glpk are slow on the large ones)");
  auto targets = std::make_shared<bool>(false);
  cmd->add_flag("--targets", *targets,
                "only the target rows (at least 3 runs each), the allox alpha = 1 simulation on "
                "the paper workload at 10 GPUs among them, then their targets and ratios");
  auto trace = std::make_shared<matcher::bench::SimulatorRow>();
  cmd->add_option("--trace", trace->trace, "--targets: the paper workload's trace")
      ->capture_default_str();
  cmd->callback([options, backend, max_jobs, only, targets, trace] {
    options->backend = *matcher::parse_backend(*backend);
    if (*targets) options->repetitions = std::max(options->repetitions, 3);
    print_header(*options);
    std::vector<TargetLine> lines;
    for (const auto& bench_case : matcher::bench::standard_cases()) {
      if (bench_case.jobs > *max_jobs) continue;
      if (bench_case.name.find(*only) == std::string::npos) continue;
      if (*targets && bench_case.target_ms == 0) continue;
      Expected<BenchRow> row = matcher::bench::run_case(bench_case, *options);
      if (!row.ok()) {
        std::cerr << row.message() << "\n";
        fail();
      }
      print_row(*row);
      if (bench_case.target_ms > 0) {
        lines.push_back({bench_case.target_row, row->grouped.cpu_ms, bench_case.target_ms});
      }
    }
    if (*targets) {
      std::vector<double> runs;
      for (int r = 0; r < options->repetitions; ++r) {
        Expected<double> cpu_ms = matcher::bench::time_simulator_row(beside_this_binary("allox"), *trace);
        if (!cpu_ms.ok()) {
          std::cerr << cpu_ms.message() << "\n";
          fail();
        }
        runs.push_back(*cpu_ms);
      }
      lines.push_back({"allox alpha = 1, paper workload, 10 GPUs (simulate)", median_of(runs),
                       trace->target_ms});
    }
    print_targets(lines, *options);
  });
}

}  // namespace allox::cli
