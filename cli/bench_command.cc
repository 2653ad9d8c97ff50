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
            << " solves, peak memory of the measuring process\n\n";
  std::cout << std::left << std::setw(40) << "case" << std::right << std::setw(7) << "jobs"
            << std::setw(9) << "machines" << std::setw(10) << "arcs" << std::setw(7) << "rounds"
            << std::setw(11) << "solve ms" << std::setw(9) << "peak MB" << std::setw(12)
            << "naive arcs" << std::setw(11) << "naive ms" << std::setw(9) << "naive MB"
            << std::setw(10) << "speed-up"
            << "\n";
}

void print_row(const BenchRow& row) {
  const auto& c = row.bench_case;
  std::cout << std::left << std::setw(40) << c.name << std::right << std::setw(7) << c.jobs
            << std::setw(9) << c.machines << std::setw(10) << row.grouped.arcs << std::setw(7)
            << row.grouped.rounds << std::setw(11) << fixed(row.grouped.solve_ms, 1) << std::setw(9)
            << fixed(row.grouped.peak_rss_mb, 0) << std::setw(12) << row.naive_arcs;
  if (row.naive) {
    if (row.naive->objective != row.grouped.objective) {
      std::cerr << "naive and grouped objectives differ for " << c.name << "\n";
      fail();
    }
    std::cout << std::setw(11) << fixed(row.naive->solve_ms, 1) << std::setw(9)
              << fixed(row.naive->peak_rss_mb, 0) << std::setw(9)
              << fixed(row.naive->solve_ms / row.grouped.solve_ms, 0) << "x";
  } else {
    std::cout << std::setw(11) << "-" << std::setw(9) << "-" << std::setw(10) << "-";
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
  auto backend = std::make_shared<std::string>("lemon");
  cmd->add_option("--repeat", options->repetitions, "solves per case (median reported)")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--max-naive-arcs", options->max_naive_arcs,
                  "skip the naive graph above this many arcs");
  cmd->add_option("--backend", *backend, "lemon, boost or glpk")
      ->check(CLI::IsMember({"lemon", "boost", "glpk"}));
  cmd->add_option("--seed", options->seed, "instance seed");
  cmd->callback([options, backend] {
    options->backend = *matcher::parse_backend(*backend);
    print_header(*options);
    for (const auto& bench_case : matcher::bench::standard_cases()) {
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
