// allox simulate: replays a trace against one policy, a list, or all of them, and writes
// summary.json / jobs.csv / plots. A thin shell over sim/ (experiment.h, report.h, plots.h).
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/exit.h"
#include "cli/number_checks.h"
#include "core/cluster_file.h"
#include "core/output_file.h"
#include "sim/allox_trace.h"
#include "sim/experiment.h"
#include "sim/plots.h"
#include "sim/progress_line.h"
#include "sim/report.h"
#include "sim/synthetic.h"
#include "sim/trace_file.h"

namespace allox::cli {
namespace {

namespace fs = std::filesystem;

struct SimulateArgs {
  std::string trace;
  std::string format;
  std::size_t synthetic_jobs = 0;
  SyntheticOptions synthetic;
  std::string gavel = "data/gavel/simulation_throughputs.json";
  std::string save_trace;
  bool exact_estimates = false;

  std::string cluster;
  int gpus = -1;
  int cpus = -1;
  std::vector<std::string> machines;  // device=N

  std::string policy = "allox";
  double alpha = 0.1;
  double starvation_bound = std::numeric_limits<double>::infinity();
  bool batch_rounds = false;
  std::string estimates = "profiler";
  std::string matcher_backend = "auto";
  bool profiling = false;
  std::string rules = "allox";
  std::string drf_vector;
  std::string srpt_rank;
  std::string es_pick = "shortest-there";
  std::string resume;
  std::string profiling_run;
  double startup = 1;
  double profiling_min_run = 1;
  double round_period = -1;
  unsigned threads = 1;

  std::vector<double> sweep_alpha;
  std::vector<int> sweep_gpus;
  std::vector<double> sweep_error;

  std::string out;
  bool plots = false;
  bool progress = false;
  bool no_progress = false;
};

// A one-line progress bar on stderr, shown when stderr is a terminal (after two seconds) or
// --progress asks for it (at once): which runs are going (run i of n, by
// label), the share of all runs' jobs finished, the time spent and an estimate of the time left
// (elapsed × (1 − done) / done: runs of one command progress at comparable rates).
class ProgressBar {
 public:
  ProgressBar(bool enabled, const std::vector<RunSpec>& specs, double delay_seconds)
      : enabled_(enabled), delay_(delay_seconds), fractions_(specs.size(), 0.0) {
    for (const RunSpec& spec : specs) labels_.push_back(spec.label);
  }
  ~ProgressBar() { finish(); }

  std::function<void(double)> callback(std::size_t run) {
    if (!enabled_) return {};
    return [this, run](double fraction) { update(run, fraction); };
  }
  void finish() {
    std::lock_guard<std::mutex> lock(mu_);
    if (shown_) std::cerr << "\r\033[K" << std::flush;
    shown_ = false;
  }

 private:
  void update(std::size_t run, double fraction) {
    std::lock_guard<std::mutex> lock(mu_);
    fractions_[run] = fraction;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    // The first line as soon as it is due, then at most four a second.
    if (elapsed < delay_ || (shown_ && elapsed - last_draw_ < 0.25)) return;
    last_draw_ = elapsed;
    const std::string line = progress_line(labels_, fractions_, elapsed);
    std::cerr << "\r\033[K" << line << std::flush;
    shown_ = true;
  }

  bool enabled_;
  double delay_;
  std::vector<std::string> labels_;
  std::vector<double> fractions_;
  bool shown_ = false;
  double last_draw_ = 0;
  std::mutex mu_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// 0 (no periodic rounds) or at least a second: a shorter period would add rounds without end
// (or, below the clock's resolution, never advance it at all).
CLI::Validator round_period() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = -1;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        const bool whole_text = ec == std::errc() && end == text.data() + text.size();
        if (whole_text && (v == 0 || (v >= 1 && v <= kMaxInputSeconds))) return "";
        return "must be 0 (none) or a number of seconds from 1 to " +
               csv_number(kMaxInputSeconds) + ", got '" + text + "'";
      },
      "0 or seconds >= 1");
}

std::string guess_format(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".csv") return "csv";
  if (ext == ".yaml" || ext == ".yml" || ext == ".json") return "yaml";
  return "allox";
}

Expected<Trace> load_trace(const SimulateArgs& a) {
  Expected<Trace> trace = Error{""};
  if (a.synthetic_jobs > 0) {
    auto table = ThroughputTable::load_gavel(a.gavel);
    if (!table) return table.error();
    SyntheticOptions o = a.synthetic;
    o.jobs = a.synthetic_jobs;
    trace = generate_synthetic_trace(*table, o);
  } else {
    const std::string format = a.format.empty() ? guess_format(a.trace) : a.format;
    if (format == "allox") {
      trace = load_allox_trace(a.trace, AlloxTraceOptions{a.exact_estimates});
    } else if (format == "yaml") {
      trace = load_yaml_trace(a.trace);
    } else {
      trace = load_csv_trace(a.trace);
    }
  }
  if (trace && a.exact_estimates) use_true_times_as_estimates(*trace);
  return trace;
}

Expected<Cluster> load_cluster(const SimulateArgs& a) {
  if (!a.cluster.empty()) return load_cluster_file(a.cluster);
  std::map<DeviceType, int> count;
  std::map<DeviceType, int> units;
  if (a.gpus > 0) count["gpu"] = a.gpus;
  if (a.cpus > 0) count["cpu"] = a.cpus;
  for (const std::string& m : a.machines) {
    // device=N (N one-device machines) or device=NxU (N nodes of U units).
    const auto eq = m.find('=');
    const std::string value = eq == std::string::npos ? "" : m.substr(eq + 1);
    const auto x = value.find('x');
    auto whole = [](const std::string& digits) -> long long {
      if (digits.empty() || digits.size() > 9 ||
          digits.find_first_not_of("0123456789") != std::string::npos) {
        return 0;
      }
      return std::stoll(digits);
    };
    const long long n = whole(value.substr(0, x));
    const long long u = x == std::string::npos ? 1 : whole(value.substr(x + 1));
    if (eq == 0 || n <= 0 || u < 1 || u > kMaxUnits || n * u > 100000) {
      return Error{
          "--machines expects device=N or device=NxU (N >= 1 machines, or N nodes of U "
          "units, U at most " +
          std::to_string(kMaxUnits) + ", at most 100000 devices), got '" + m + "'"};
    }
    const DeviceType device = m.substr(0, eq);
    if (auto [it, fresh] = units.try_emplace(device, static_cast<int>(u));
        !fresh && it->second != u) {
      return Error{"--machines: two node shapes for " + device + " ('" + m + "')"};
    }
    // n <= 100000 here, so the sum cannot overflow before it is refused.
    if (count[device] + n > static_cast<long long>(kMaxClusterDevices)) {
      return Error{"--machines " + m + ": over " + std::to_string(kMaxClusterDevices) +
                   " machines of " + device};
    }
    count[device] += static_cast<int>(n);
  }
  if (count.empty()) return Error{"give --cluster FILE, or --gpus/--cpus/--machines counts"};
  // --gpus and --cpus are one-unit machines; --machines entries count every unit.
  long long devices = 0;
  for (const auto& [device, n] : count) {
    const auto shape = units.find(device);
    devices += static_cast<long long>(n) * (shape == units.end() ? 1 : shape->second);
  }
  if (devices > static_cast<long long>(kMaxClusterDevices)) {
    return Error{"--gpus, --cpus and --machines describe " + std::to_string(devices) +
                 " devices; a cluster has at most " + std::to_string(kMaxClusterDevices)};
  }
  return make_uniform_cluster(count, units);
}

// The cluster with its gpu machines replaced by `gpus` fresh ones.
Cluster with_gpus(const Cluster& base, int gpus) {
  Cluster c;
  for (const Machine& m : base.machines) {
    if (m.device != "gpu") c.machines.push_back(m);
  }
  for (int i = 0; i < gpus; ++i) c.machines.push_back({"gpu-" + std::to_string(i), "gpu", 0});
  return c;
}

void check(const Status& s) {
  if (!s.ok()) {
    std::cerr << "allox simulate: " << s.message() << "\n";
    fail();
  }
}

template <class T>
T check(Expected<T> e) {
  if (!e.ok()) {
    std::cerr << "allox simulate: " << e.message() << "\n";
    fail();
  }
  return std::move(*e);
}

std::vector<SimSummary> summaries_of(const std::vector<Run>& runs) {
  std::vector<SimSummary> s;
  for (const Run& r : runs) s.push_back(r.summary);
  return s;
}

std::vector<Run> run_with_progress(const SimulateArgs& a, const Trace& trace,
                                   const Cluster& cluster, const std::vector<RunSpec>& specs,
                                   const PolicyOptions& base, const SimOptions& sim) {
  const bool show = !a.no_progress && (a.progress || isatty(STDERR_FILENO));
  // Asked for with --progress, it shows at once; on a terminal, only for runs that take a while.
  ProgressBar bar(show, specs, a.progress ? 0.0 : 2.0);
  std::vector<Run> runs = check(run_all(trace, cluster, specs, base, sim, a.threads,
                                        [&](std::size_t i) { return bar.callback(i); }));
  bar.finish();
  return runs;
}

// " (cpu: cores 32, memory_gb 16; gpu: ...)": the machines drf's resource vector assumes.
std::string drf_vector_text(const MachineCapacity& capacity) {
  if (capacity.empty()) return "";
  std::ostringstream text;
  const char* between = " (";
  for (const auto& [device, offer] : capacity) {
    text << std::exchange(between, "; ") << device << ":";
    const char* comma = " ";
    for (const auto& [resource, amount] : offer) {
      text << std::exchange(comma, ", ") << resource << " " << amount;
    }
  }
  text << " per machine)";
  return text.str();
}

// The run's setting in a plot title: "10000 jobs, 20 cpu + 20 gpu, profiling on, rules allox".
std::string setting(const Trace& trace, const Cluster& cluster, const SimulateArgs& a) {
  std::map<DeviceType, std::size_t> per_type;
  for (const Machine& m : cluster.machines) ++per_type[m.device];
  std::string text = std::to_string(trace.jobs.size()) + " jobs, ";
  const char* plus = "";
  for (const auto& [device, n] : per_type) {
    text += std::exchange(plus, " + ") + std::to_string(n) + " " + device;
  }
  return text + ", profiling " + (a.profiling ? "on" : "off") + ", " + a.estimates +
         " estimates, " + a.rules + " rules";
}

void simulate(const SimulateArgs& a) {
  const Trace trace = check(load_trace(a));
  const Cluster cluster = check(load_cluster(a));
  // Checked before any run, so a value too large costs nothing.
  const auto others = std::count_if(cluster.machines.begin(), cluster.machines.end(),
                                    [](const Machine& m) { return m.device != "gpu"; });
  for (int gpus : a.sweep_gpus) {
    if (static_cast<std::size_t>(others) + static_cast<std::size_t>(gpus) > kMaxClusterDevices) {
      check(Status(Error{"--sweep-gpus " + std::to_string(gpus) + ": the cluster would have over " +
                         std::to_string(kMaxClusterDevices) + " devices"}));
    }
  }
  if (!a.save_trace.empty()) {
    check(write_output_file(a.save_trace, [&](std::ostream& o) { write_csv_trace(trace, o); }));
  }
  PolicyOptions base;
  base.alpha = a.alpha;
  base.starvation_bound = a.starvation_bound;
  base.batch_rounds = a.batch_rounds;
  base.matcher_backend = a.matcher_backend;
  SimOptions sim;
  sim.profiling.enabled = a.profiling;
  sim.estimates = a.estimates == "trace" ? EstimateMode::kTrace : EstimateMode::kProfiler;
  sim.round_period = a.round_period;
  sim.profiling.startup = a.startup;
  sim.profiling.min_run = a.profiling_min_run;
  // --rules reference sets the reference simulator's rule wherever allox's default differs;
  // each rule's own option overrides it.
  const bool reference = a.rules == "reference";
  // Remaining-time ranking with exact resumes lands near the reference's srpt figure; ranking by
  // the original estimate, a reading of its code, lands far off (docs/results.md), so the preset
  // leaves the rank at remaining.
  const std::string srpt_rank = a.srpt_rank.empty() ? "remaining" : a.srpt_rank;
  const std::string resume = !a.resume.empty() ? a.resume : reference ? "exact" : "checkpoint";
  const std::string profiling_run = !a.profiling_run.empty() ? a.profiling_run
                                    : reference              ? "fraction"
                                                             : "startup-plus-iterations";
  base.srpt_rank = srpt_rank == "original" ? SrptRank::kOriginal : SrptRank::kRemaining;
  base.es_pick = a.es_pick == "head" ? EsPick::kHeadOnFastest : EsPick::kShortestThere;
  sim.resume = resume == "exact" ? ResumeRule::kExact : ResumeRule::kCheckpoint;
  sim.profiling.run_length = profiling_run == "fraction"
                                 ? ProfilingRunLength::kFractionOfTime
                                 : ProfilingRunLength::kStartupPlusIterations;
  // --rules reference implies the reference's vector where the trace states the resources
  // (the AlloX format); asked for explicitly, a trace without them is an error.
  std::vector<const Job*> jobs;
  for (const TraceJob& tj : trace.jobs) jobs.push_back(&tj.job);
  const MachineCapacity fitting = smallest_fitting_machines(jobs);
  const std::string drf_vector = !a.drf_vector.empty()        ? a.drf_vector
                                 : reference && !fitting.empty() ? "reference"
                                                                 : "devices";
  if (drf_vector == "reference") {
    if (fitting.empty()) {
      check(Status(Error{"--drf-vector reference: the trace states no resources per job (the "
                         "AlloX trace format does: cores, memory, GPUs, GPU memory)"}));
    }
    base.drf_capacity = fitting;
  }
  const std::vector<RunSpec> specs = check(expand_policies(a.policy, a.alpha));

  std::cout << trace.jobs.size() << " jobs, " << trace.users.size() << " users, "
            << cluster.machines.size() << " machines; profiling " << (a.profiling ? "on" : "off")
            << "; estimates from the " << a.estimates << "; rules: srpt-rank " << srpt_rank
            << ", resume " << resume << ", profiling-run " << profiling_run << ", startup "
            << a.startup << " s, drf-vector " << drf_vector << drf_vector_text(base.drf_capacity)
            << (a.es_pick == "head" ? ", es-pick head" : "") << "\n";
  const std::vector<Run> runs = run_with_progress(a, trace, cluster, specs, base, sim);
  write_comparison_table(summaries_of(runs), std::cout);

  const fs::path out(a.out);
  if (!a.out.empty()) {
    if (runs.size() == 1) {
      check(write_run_files(runs[0].summary, runs[0].result, a.out));
    } else {
      for (const Run& r : runs) {
        check(write_run_files(r.summary, r.result, (out / r.spec.label).string()));
      }
      check(write_output_file(out / "comparison.csv", [&](std::ostream& o) {
        write_comparison_csv(summaries_of(runs), o);
      }));
    }
    if (a.plots) {
      check(plot_jct_cdf(runs, a.out, "jct_cdf", "Job completion times: " + setting(trace, cluster, a)));
      for (const Run& r : runs) {
        check(plot_shares(r, a.out, runs.size() == 1 ? "shares" : "shares_" + r.spec.label));
      }
    }
  }

  if (!a.sweep_alpha.empty()) {
    const std::string policy = specs.size() == 1 ? specs[0].policy : "allox";
    std::vector<RunSpec> sweep;
    for (double alpha : a.sweep_alpha) {
      std::ostringstream label;
      label << policy << "-a" << alpha;
      sweep.push_back(RunSpec{policy, alpha, label.str()});
    }
    std::cout << "\nα sweep (" << policy << ")\n";
    const std::vector<Run> sr = run_with_progress(a, trace, cluster, sweep, base, sim);
    write_comparison_table(summaries_of(sr), std::cout);
    if (!a.out.empty()) {
      std::vector<SweepPoint> points;
      for (const Run& r : sr) points.push_back({r.spec.alpha, r.summary});
      check(write_output_file(out / "alpha_sweep.csv", [&](std::ostream& o) {
        write_comparison_csv(summaries_of(sr), o, a.sweep_alpha, "alpha");
      }));
      if (a.plots) check(plot_alpha_tradeoff(points, a.out));
    }
  }

  if (!a.sweep_error.empty()) {
    std::vector<SweepPoint> points;
    std::vector<SimSummary> rows;
    std::vector<double> xs;
    for (double sigma : a.sweep_error) {
      Trace noisy = trace;
      check(redraw_estimates(noisy, sigma, a.synthetic.seed));
      std::cout << "\nestimate error sigma = " << sigma << "\n";
      const std::vector<Run> sr = run_with_progress(a, noisy, cluster, specs, base, sim);
      write_comparison_table(summaries_of(sr), std::cout);
      for (const Run& r : sr) {
        points.push_back({sigma, r.summary});
        rows.push_back(r.summary);
        xs.push_back(sigma);
      }
    }
    if (!a.out.empty()) {
      check(write_output_file(out / "error_sweep.csv", [&](std::ostream& o) {
        write_comparison_csv(rows, o, xs, "sigma");
      }));
      if (a.plots) {
        check(plot_load_sweep(points, "estimate error sigma (e ~ N(0, sigma), clipped to 0.99)",
                              a.out, "error_sweep",
                              "avg JCT by estimation error: " + setting(trace, cluster, a)));
      }
    }
  }

  if (!a.sweep_gpus.empty()) {
    std::vector<SweepPoint> points;
    std::vector<SimSummary> rows;
    std::vector<double> xs;
    for (int gpus : a.sweep_gpus) {
      std::cout << "\n" << gpus << " GPUs\n";
      const std::vector<Run> sr =
          run_with_progress(a, trace, with_gpus(cluster, gpus), specs, base, sim);
      write_comparison_table(summaries_of(sr), std::cout);
      for (const Run& r : sr) {
        points.push_back({double(gpus), r.summary});
        rows.push_back(r.summary);
        xs.push_back(gpus);
      }
    }
    if (!a.out.empty()) {
      check(write_output_file(out / "load_sweep.csv",
                              [&](std::ostream& o) { write_comparison_csv(rows, o, xs, "gpus"); }));
      if (a.plots) {
        check(plot_load_sweep(points, "GPUs (other machines unchanged)", a.out, "load_sweep",
                              "avg JCT by number of GPUs: " + setting(trace, cluster, a)));
      }
    }
  }
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "simulate",
      "Replay a job trace on a cluster under one or more scheduling policies (event-driven; "
      "decisions use estimated times, completions true times) and report JCT and fairness.");
  auto a = std::make_shared<SimulateArgs>();
  auto* trace = cmd->add_option("--trace", a->trace, "trace file");
  cmd->add_option("--format", a->format,
                  "trace format: allox (paper workload), yaml or csv (examples/trace.*); "
                  "default from the file extension (.csv, .yaml/.yml/.json, else allox)")
      ->check(CLI::IsMember({"allox", "yaml", "csv"}));
  auto* synthetic =
      cmd->add_option("--synthetic", a->synthetic_jobs,
                      "instead of --trace, generate this many jobs (Poisson arrivals, Gavel "
                      "job types, Pareto durations)")
          ->check(whole_at_least(1));
  trace->excludes(synthetic);
  cmd->add_option("--users", a->synthetic.users, "synthetic: number of users")
      ->check(whole_at_least(1))
      ->capture_default_str();
  cmd->add_option("--rate", a->synthetic.arrival_rate, "synthetic: arrivals per second")
      ->check(number_above(0))
      ->capture_default_str();
  cmd->add_option("--median-duration", a->synthetic.median_duration,
                  "synthetic: median seconds on a job's fastest device")
      ->check(number_in(0, kMaxInputSeconds))
      ->capture_default_str();
  cmd->add_option("--estimate-error", a->synthetic.estimate_error,
                  "synthetic: estimates are true × (1 + e), e uniform in ±this")
      ->check(number_in(0, 1, true))
      ->capture_default_str();
  cmd->add_flag("--multi-device", a->synthetic.multi_device,
                "synthetic: jobs need 1, 2, 4 or 8 devices of one node (Gavel's scale factors, "
                "probabilities 0.7/0.1/0.15/0.05), with the table's speeds at that scale");
  cmd->add_option("--seed", a->synthetic.seed, "random seed (synthetic traces, --sweep-error)")
      ->check(whole_at_least(0))
      ->capture_default_str();
  cmd->add_option("--gavel", a->gavel, "synthetic: Gavel throughput table")->capture_default_str();
  cmd->add_option("--save-trace", a->save_trace,
                  "write the trace used as CSV (examples/trace.csv format)");
  cmd->add_flag("--exact-estimates", a->exact_estimates,
                "decide with true times (no estimate error)");

  auto* cluster = cmd->add_option("--cluster", a->cluster, "cluster.yaml");
  auto* gpus = cmd->add_option("--gpus", a->gpus, "number of GPUs (one job each)")
                   ->check(whole_at_least(0));
  auto* cpus = cmd->add_option("--cpus", a->cpus, "number of CPU nodes (one job each)")
                   ->check(whole_at_least(0));
  auto* machines = cmd->add_option(
      "--machines", a->machines,
      "device=N (repeatable), e.g. v100=4; device=NxU for N nodes of U units each, e.g. v100=2x4");
  cluster->excludes(gpus)->excludes(cpus)->excludes(machines);

  cmd->add_option("--policy", a->policy,
                  "policy name, comma-separated names, or 'all' (adds allox at α = 1 when "
                  "--alpha is not 1)")
      ->capture_default_str();
  cmd->add_option("--alpha", a->alpha, "allox fairness knob α in (0, 1]")
      ->check(number_in(0, 1))
      ->capture_default_str();
  cmd->add_option("--starvation-bound", a->starvation_bound,
                  "allox's extension beyond the paper: a job queued longer than this (s) enters "
                  "every round and starts first; off (inf) by default, as in the paper")
      ->check(number_above_or_inf(0))
      ->capture_default_str();
  cmd->add_flag("--batch-rounds", a->batch_rounds,
                "allox: start every job a round plans first on an idle machine (default: the "
                "paper's one start per round, then re-rank users and solve again)");
  cmd->add_option("--estimates", a->estimates,
                  "where p(j, d) comes from: profiler (profiling runs fitted a + b·n, refined "
                  "by progress reports) or trace (the trace's estimates, as the reference "
                  "simulator uses them)")
      ->check(CLI::IsMember({"profiler", "trace"}))
      ->capture_default_str();
  cmd->add_option("--matcher", a->matcher_backend, "allox: matcher backend")->capture_default_str();
  cmd->add_flag("--profiling", a->profiling,
                "profile each job first (1% and 2% runs per device, as the reference AlloX "
                "simulator does); JCT includes the delay");
  cmd->add_option("--rules", a->rules,
                  "allox: the rules a real cluster can run (a preempted job resumes from its "
                  "last whole iteration and pays its start-up again, a profiling run pays its "
                  "start-up); reference: the reference AlloX simulator's (--resume exact "
                  "--profiling-run fraction); the options below override single rules")
      ->check(CLI::IsMember({"allox", "reference"}))
      ->capture_default_str();
  cmd->add_option("--drf-vector", a->drf_vector,
                  "drf, drffifo: the dominant share over devices (a user's machines of each type "
                  "over the type's machines; the default with --rules allox) or reference (the "
                  "reference simulator's cores, memory, GPUs and GPU memory, each job holding "
                  "what the trace states, each machine the largest any job holds; the default "
                  "with --rules reference on a trace in the AlloX format, which it needs)")
      ->check(CLI::IsMember({"devices", "reference"}));
  cmd->add_option("--srpt-rank", a->srpt_rank,
                  "srpt's key: remaining (estimated remaining time; a newcomer displaces a "
                  "running job only where it finishes sooner) or original (the job's original "
                  "estimate; every lower-ranked running job may be displaced)")
      ->check(CLI::IsMember({"remaining", "original"}));
  cmd->add_option("--es-pick", a->es_pick,
                  "es: which of a user's jobs a free machine of its part takes: shortest-there "
                  "(the user's job shortest on that device type, the paper's ES) or head (the "
                  "user's jobs shortest on their fastest type first, each only on that type, the "
                  "others waiting behind it: a reading of the reference simulator's ES)")
      ->check(CLI::IsMember({"shortest-there", "head"}));
  cmd->add_option("--resume", a->resume,
                  "what a preempted job keeps: checkpoint (its last whole iteration; it pays "
                  "its start-up again) or exact (its exact fractional progress, at no cost)")
      ->check(CLI::IsMember({"checkpoint", "exact"}));
  cmd->add_option("--profiling-run", a->profiling_run,
                  "a profiling run of fraction f lasts: startup-plus-iterations (s + f·(T − s)) "
                  "or fraction (max(f·T, min run)), where T is the job's true time there")
      ->check(CLI::IsMember({"startup-plus-iterations", "fraction"}));
  cmd->add_option("--startup", a->startup,
                  "seconds every run (profiling or job) pays before its first iteration, "
                  "capped at half the run")
      ->check(number_in(0, kMaxInputSeconds, true))
      ->capture_default_str();
  cmd->add_option("--profiling-min-run", a->profiling_min_run,
                  "shortest profiling run, seconds")
      ->check(number_in(0, kMaxInputSeconds, true))
      ->capture_default_str();
  cmd->add_option("--round-period", a->round_period,
                  "seconds between periodic scheduling rounds (default: 60 for las, none for "
                  "the others; 0: none)")
      ->check(round_period());
  cmd->add_option("--threads", a->threads, "run policies in parallel on this many threads")
      ->check(whole_at_least(1))
      ->capture_default_str();
  cmd->add_option("--sweep-alpha", a->sweep_alpha,
                  "also run allox (or the one --policy) at each α, e.g. 0.1,0.2,0.5,1")
      ->delimiter(',')
      ->check(number_in(0, 1));
  cmd->add_option("--sweep-gpus", a->sweep_gpus,
                  "also run the policies with each number of GPUs (other machines unchanged)")
      ->delimiter(',')
      ->check(whole_at_least(0));
  cmd->add_option("--sweep-error", a->sweep_error,
                  "also run the policies with estimates redrawn as true x (1 + e), "
                  "e ~ N(0, sigma) clipped to 0.99 (seeded by --seed), for each sigma")
      ->delimiter(',')
      ->check(number_above(0, true));
  cmd->add_option("--out", a->out, "folder for summary.json, jobs.csv, shares.csv (and plots)");
  cmd->add_flag("--plots", a->plots, "draw PNG and SVG plots into --out (needs gnuplot)");
  cmd->add_flag("--progress", a->progress,
                "show the progress bar even when stderr is not a terminal");
  cmd->add_flag("--no-progress", a->no_progress, "never show the progress bar");
  cmd->callback([a] {
    if (a->trace.empty() && a->synthetic_jobs == 0) {
      std::cerr << "allox simulate: give --trace FILE or --synthetic N\n";
      fail();
    }
    if (a->plots && a->out.empty()) {
      std::cerr << "allox simulate: --plots needs --out DIR\n";
      fail();
    }
    simulate(*a);
  });
}

}  // namespace allox::cli
