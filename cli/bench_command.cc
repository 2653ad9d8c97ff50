// allox bench matcher: times the matcher at the sizes of issue 3 and prints a table.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/matcher_bench.h"
#include "cli/commands.h"
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

// One line of the issue-13 target table: what, the median CPU time, the target, the ratio.
struct TargetLine {
  std::string row;
  double cpu_ms = 0;
  double target_ms = 0;
};

void print_targets(const std::vector<TargetLine>& lines, const BenchOptions& options) {
  if (lines.empty()) return;
  std::cout << "\nissue 13 targets: median CPU time of " << options.repetitions << " runs (backend "
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

}  // namespace

void add_bench_command(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Benchmarks that print a table of measured figures");
  bench->require_subcommand(1);
  auto* cmd = bench->add_subcommand(
      "matcher",
      "Matcher solve time and peak memory at the issue-3 sizes, against the naive graph (all J "
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
                "only issue 13's rows (at least 3 runs each), the allox alpha = 1 simulation on "
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
        Expected<double> cpu_ms = matcher::bench::time_simulator_row("/proc/self/exe", *trace);
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
