#include "cli/simulate/sweeps.h"

#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>

#include "cli/simulate/check.h"
#include "cli/simulate/outputs.h"
#include "cli/simulate/runs.h"
#include "core/output_file.h"
#include "sim/plots.h"
#include "sim/report.h"

namespace allox::cli {
namespace {

// The runs of a sweep over some x, one row per run and x, for its CSV and plot.
struct SweepRows {
  std::vector<SweepPoint> points;
  std::vector<SimSummary> rows;
  std::vector<double> xs;

  void add(double x, const std::vector<Run>& runs) {
    for (const Run& r : runs) {
      points.push_back({x, r.summary});
      rows.push_back(r.summary);
      xs.push_back(x);
    }
  }
};

// <stem>.csv with the x column named `x_name` and, with --plots, avg JCT against x.
void write_sweep(const SimulateArgs& a, const SweepRows& sweep, const std::string& stem,
                 const std::string& x_name, const std::string& x_label, const std::string& title) {
  if (a.out.empty()) return;
  check(write_output_file(std::filesystem::path(a.out) / (stem + ".csv"), [&](std::ostream& o) {
    write_comparison_csv(sweep.rows, o, sweep.xs, x_name);
  }));
  if (a.plots) check(plot_load_sweep(sweep.points, x_label, a.out, stem, title));
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

}  // namespace

void sweep_alpha(const SimulateArgs& a, const Trace& trace, const Cluster& cluster,
                 const std::vector<RunSpec>& specs, const RunSettings& settings) {
  if (a.sweep_alpha.empty()) return;
  const std::string policy = specs.size() == 1 ? specs[0].policy : "allox";
  std::vector<RunSpec> sweep;
  for (double alpha : a.sweep_alpha) {
    std::ostringstream label;
    label << policy << "-a" << alpha;
    sweep.push_back(RunSpec{policy, alpha, label.str()});
  }
  std::cout << "\nα sweep (" << policy << ")\n";
  const std::vector<Run> runs = run_with_progress(a, trace, cluster, sweep, settings);
  write_comparison_table(summaries_of(runs), std::cout);
  if (a.out.empty()) return;
  std::vector<SweepPoint> points;
  for (const Run& r : runs) points.push_back({r.spec.alpha, r.summary});
  check(write_output_file(std::filesystem::path(a.out) / "alpha_sweep.csv", [&](std::ostream& o) {
    write_comparison_csv(summaries_of(runs), o, a.sweep_alpha, "alpha");
  }));
  if (a.plots) check(plot_alpha_tradeoff(points, a.out));
}

void sweep_estimate_error(const SimulateArgs& a, const Trace& trace, const Cluster& cluster,
                          const std::vector<RunSpec>& specs, const RunSettings& settings) {
  if (a.sweep_error.empty()) return;
  SweepRows sweep;
  for (double sigma : a.sweep_error) {
    Trace noisy = trace;
    check(redraw_estimates(noisy, sigma, a.synthetic.seed));
    std::cout << "\nestimate error sigma = " << sigma << "\n";
    const std::vector<Run> runs = run_with_progress(a, noisy, cluster, specs, settings);
    write_comparison_table(summaries_of(runs), std::cout);
    sweep.add(sigma, runs);
  }
  write_sweep(a, sweep, "error_sweep", "sigma",
              "estimate error sigma (e ~ N(0, sigma), clipped to 0.99)",
              "avg JCT by estimation error: " + plot_setting(a, trace, cluster));
}

void sweep_gpus(const SimulateArgs& a, const Trace& trace, const Cluster& cluster,
                const std::vector<RunSpec>& specs, const RunSettings& settings) {
  if (a.sweep_gpus.empty()) return;
  SweepRows sweep;
  for (int gpus : a.sweep_gpus) {
    std::cout << "\n" << gpus << " GPUs\n";
    const std::vector<Run> runs =
        run_with_progress(a, trace, with_gpus(cluster, gpus), specs, settings);
    write_comparison_table(summaries_of(runs), std::cout);
    sweep.add(gpus, runs);
  }
  write_sweep(a, sweep, "load_sweep", "gpus", "GPUs (other machines unchanged)",
              "avg JCT by number of GPUs: " + plot_setting(a, trace, cluster));
}

}  // namespace allox::cli
