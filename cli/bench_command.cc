// allox bench matcher: times the matcher at the sizes of issue 3 and prints a table.
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

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
  cmd->callback([options, backend, max_jobs, only] {
    options->backend = *matcher::parse_backend(*backend);
    print_header(*options);
    for (const auto& bench_case : matcher::bench::standard_cases()) {
      if (bench_case.jobs > *max_jobs) continue;
      if (bench_case.name.find(*only) == std::string::npos) continue;
      Expected<BenchRow> row = matcher::bench::run_case(bench_case, *options);
      if (!row.ok()) {
        std::cerr << row.message() << "\n";
        fail();
      }
      print_row(*row);
    }
  });
}

}  // namespace allox::cli
