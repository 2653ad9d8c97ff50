#include "cli/simulate/options.h"

#include <charconv>
#include <string>

#include "cli/number_checks.h"
#include "core/model.h"
#include "sim/synthetic.h"

namespace allox::cli {
namespace {

// 0 (no periodic rounds) or at least a second: a shorter period would add rounds without end
// (or, below the clock's resolution, never advance it at all).
CLI::Validator round_period() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = -1;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        const bool whole_text = ec == std::errc() && end == text.data() + text.size();
        if (whole_text && (v == 0 || (v >= 1 && v <= kMaxInputSeconds))) return "";
        return "must be 0 (none) or a number of seconds from 1 to " + csv_number(kMaxInputSeconds) +
               ", got '" + text + "'";
      },
      "0 or seconds >= 1");
}

void add_trace_options(CLI::App& cmd, SimulateArgs& a) {
  auto* trace = cmd.add_option("--trace", a.trace, "trace file");
  cmd.add_option("--format", a.format,
                 "trace format: allox (paper workload), yaml or csv (examples/trace.*); "
                 "default from the file extension (.csv, .yaml/.yml/.json, .txt), else from "
                 "the file's first lines (a pipe)")
      ->check(CLI::IsMember({"allox", "yaml", "csv"}));
  auto* synthetic =
      cmd.add_option("--synthetic", a.synthetic_jobs,
                     "instead of --trace, generate this many jobs (Poisson arrivals, Gavel "
                     "job types, Pareto durations), at most " +
                         std::to_string(kMaxSyntheticJobs))
          ->check(whole_in(1, kMaxSyntheticJobs));
  trace->excludes(synthetic);
  cmd.add_option("--users", a.synthetic.users,
                 "synthetic: number of users, at most " + std::to_string(kMaxSyntheticUsers))
      ->check(whole_in(1, kMaxSyntheticUsers))
      ->capture_default_str();
  cmd.add_option("--rate", a.synthetic.arrival_rate, "synthetic: arrivals per second")
      ->check(number_above(0))
      ->capture_default_str();
  cmd.add_option("--median-duration", a.synthetic.median_duration,
                 "synthetic: median seconds on a job's fastest device")
      ->check(number_in(0, kMaxInputSeconds))
      ->capture_default_str();
  cmd.add_option("--estimate-error", a.synthetic.estimate_error,
                 "synthetic: estimates are true × (1 + e), e uniform in ±this")
      ->check(number_in(0, 1, true))
      ->capture_default_str();
  cmd.add_flag("--multi-device", a.synthetic.multi_device,
               "synthetic: jobs need 1, 2, 4 or 8 devices of one node (Gavel's scale factors, "
               "probabilities 0.7/0.1/0.15/0.05), with the table's speeds at that scale");
  cmd.add_option("--seed", a.synthetic.seed, "random seed (synthetic traces, --sweep-error)")
      ->check(whole_at_least(0))
      ->capture_default_str();
  cmd.add_option("--gavel", a.gavel, "synthetic: Gavel throughput table")->capture_default_str();
  cmd.add_option("--save-trace", a.save_trace,
                 "write the trace used as CSV (examples/trace.csv format)");
  cmd.add_flag("--exact-estimates", a.exact_estimates,
               "decide with true times (no estimate error)");
}

void add_cluster_options(CLI::App& cmd, SimulateArgs& a) {
  auto* cluster = cmd.add_option("--cluster", a.cluster, "cluster.yaml");
  auto* gpus =
      cmd.add_option("--gpus", a.gpus, "number of GPUs (one job each)")->check(whole_at_least(0));
  auto* cpus = cmd.add_option("--cpus", a.cpus, "number of CPU nodes (one job each)")
                   ->check(whole_at_least(0));
  auto* machines = cmd.add_option(
      "--machines", a.machines,
      "device=N (repeatable), e.g. v100=4; device=NxU for N nodes of U units each, e.g. v100=2x4");
  cluster->excludes(gpus)->excludes(cpus)->excludes(machines);
}

void add_policy_options(CLI::App& cmd, SimulateArgs& a) {
  cmd.add_option("--policy", a.policy,
                 "policy name, comma-separated names, or 'all' (adds allox at α = 1 when "
                 "--alpha is not 1)")
      ->capture_default_str();
  cmd.add_option("--alpha", a.alpha, "allox fairness knob α in (0, 1]")
      ->check(number_in(0, 1))
      ->capture_default_str();
  cmd.add_option("--starvation-bound", a.starvation_bound,
                 "allox's extension beyond the paper: a job queued longer than this (s) enters "
                 "every round and starts first; off (inf) by default, as in the paper")
      ->check(number_above_or_inf(0))
      ->capture_default_str();
  cmd.add_flag("--batch-rounds", a.batch_rounds,
               "allox: start every job a round plans first on an idle machine (default: the "
               "paper's one start per round, then re-rank users and solve again)");
  cmd.add_option("--estimates", a.estimates,
                 "where p(j, d) comes from: profiler (profiling runs fitted a + b·n, refined "
                 "by progress reports) or trace (the trace's estimates, as the reference "
                 "simulator uses them)")
      ->check(CLI::IsMember({"profiler", "trace"}))
      ->capture_default_str();
  cmd.add_option("--matcher", a.matcher_backend, "allox: matcher backend")->capture_default_str();
  cmd.add_flag("--profiling", a.profiling,
               "profile each job first (1% and 2% runs per device, as the reference AlloX "
               "simulator does); JCT includes the delay");
}

// --rules and the options that override one of its rules each.
void add_rule_options(CLI::App& cmd, SimulateArgs& a) {
  cmd.add_option("--rules", a.rules,
                 "allox: the rules a real cluster can run (a preempted job resumes from its "
                 "last whole iteration and pays its start-up again, a profiling run pays its "
                 "start-up); reference: the reference AlloX simulator's (--resume exact "
                 "--profiling-run fraction); the options below override single rules")
      ->check(CLI::IsMember({"allox", "reference"}))
      ->capture_default_str();
  cmd.add_option("--drf-vector", a.drf_vector,
                 "drf, drffifo: the dominant share over devices (a user's machines of each type "
                 "over the type's machines; the default with --rules allox) or reference (the "
                 "reference simulator's cores, memory, GPUs and GPU memory, each job holding "
                 "what the trace states, each machine the largest any job holds; the default "
                 "with --rules reference on a trace in the AlloX format, which it needs)")
      ->check(CLI::IsMember({"devices", "reference"}));
  cmd.add_option("--srpt-rank", a.srpt_rank,
                 "srpt's key: remaining (estimated remaining time; a newcomer displaces a "
                 "running job only where it finishes sooner) or original (the job's original "
                 "estimate; every lower-ranked running job may be displaced)")
      ->check(CLI::IsMember({"remaining", "original"}));
  cmd.add_option("--es-pick", a.es_pick,
                 "es: which of a user's jobs a free machine of its part takes: shortest-there "
                 "(the user's job shortest on that device type, the paper's ES) or head (the "
                 "user's jobs shortest on their fastest type first, each only on that type, the "
                 "others waiting behind it: a reading of the reference simulator's ES)")
      ->check(CLI::IsMember({"shortest-there", "head"}));
  cmd.add_option("--resume", a.resume,
                 "what a preempted job keeps: checkpoint (its last whole iteration; it pays "
                 "its start-up again) or exact (its exact fractional progress, at no cost)")
      ->check(CLI::IsMember({"checkpoint", "exact"}));
  cmd.add_option("--profiling-run", a.profiling_run,
                 "a profiling run of fraction f lasts: startup-plus-iterations (s + f·(T − s)) "
                 "or fraction (max(f·T, min run)), where T is the job's true time there")
      ->check(CLI::IsMember({"startup-plus-iterations", "fraction"}));
  cmd.add_option("--startup", a.startup,
                 "seconds every run (profiling or job) pays before its first iteration, "
                 "capped at half the run")
      ->check(number_in(0, kMaxInputSeconds, true))
      ->capture_default_str();
  // A job's estimate extrapolates its 1% and 2% runs to all its iterations (up to 99 times
  // their difference, each up to twice its length with estimate error): past this the
  // estimates leave the times the matcher takes.
  cmd.add_option("--profiling-min-run", a.profiling_min_run,
                 "shortest profiling run, seconds (below " +
                     csv_number(kMaxInputSeconds / 200) + ")")
      ->check(number_in(0, kMaxInputSeconds / 200, true))
      ->capture_default_str();
  cmd.add_option("--round-period", a.round_period,
                 "seconds between periodic scheduling rounds (default: 60 for las, none for "
                 "the others; 0: none)")
      ->check(round_period());
}

void add_run_and_output_options(CLI::App& cmd, SimulateArgs& a) {
  cmd.add_option("--threads", a.threads, "run policies in parallel on this many threads")
      ->check(whole_at_least(1))
      ->capture_default_str();
  cmd.add_option("--sweep-alpha", a.sweep_alpha,
                 "also run allox (or the one --policy) at each α, e.g. 0.1,0.2,0.5,1")
      ->delimiter(',')
      ->check(number_in(0, 1));
  cmd.add_option("--sweep-gpus", a.sweep_gpus,
                 "also run the policies with each number of GPUs (other machines unchanged)")
      ->delimiter(',')
      ->check(whole_at_least(0));
  cmd.add_option("--sweep-error", a.sweep_error,
                 "also run the policies with estimates redrawn as true x (1 + e), "
                 "e ~ N(0, sigma) clipped to 0.99 (seeded by --seed), for each sigma")
      ->delimiter(',')
      ->check(number_above(0, true));
  cmd.add_option("--out", a.out, "folder for summary.json, jobs.csv, shares.csv (and plots)");
  cmd.add_flag("--plots", a.plots, "draw PNG and SVG plots into --out (needs gnuplot)");
  cmd.add_flag("--progress", a.progress,
               "show the progress bar even when stderr is not a terminal");
  cmd.add_flag("--no-progress", a.no_progress, "never show the progress bar");
}

}  // namespace

void add_simulate_options(CLI::App& command, SimulateArgs& args) {
  add_trace_options(command, args);
  add_cluster_options(command, args);
  add_policy_options(command, args);
  add_rule_options(command, args);
  add_run_and_output_options(command, args);
}

}  // namespace allox::cli
