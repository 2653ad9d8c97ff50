// Plots for people, drawn by gnuplot (Debian's gnuplot-nox) as PNG and SVG, ready for a slide:
// a title, axis labels with units, the legend outside the plot area, every series distinct in
// colour and line style with allox always in the same red (sim/plot_style.h), tick labels inside
// the canvas.
//
// Each function writes its data (<stem>.dat) and script (<stem>.gp), then runs `gnuplot
// <stem>.gp`, which writes <stem>.png (pngcairo when gnuplot has it, else png) and <stem>.svg into
// `dir`. Data is thinned to a few hundred points per curve so the images stay small. The
// simulator's figures keep their data and scripts beside the images, so a person can restyle a
// figure without re-running the simulation; a Gantt chart writes them into a temporary folder
// removed afterwards, unless asked to keep them (PlotSources).
// Errors: the folder cannot be written, or gnuplot is missing or fails (its stderr is quoted).
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "sim/experiment.h"
#include "sim/metrics.h"

namespace allox {

// Empirical CDF of job completion times, one curve per run, log-scaled time axis.
Status plot_jct_cdf(const std::vector<Run>& runs, const std::string& dir,
                    const std::string& stem = "jct_cdf",
                    const std::string& title = "Job completion times");

// Each user's share of the machines over time (time-weighted averages over ~300 bins), stacked.
Status plot_shares(const Run& run, const std::string& dir, const std::string& stem);

// One point of a sweep: the swept value (α, or a machine count) and the run's summary.
struct SweepPoint {
  double x = 0;
  SimSummary summary;  // summary.policy names the curve
};

// α trade-off: avg JCT against Jain's index and against max ρ, one point per α (labelled).
Status plot_alpha_tradeoff(const std::vector<SweepPoint>& points, const std::string& dir,
                           const std::string& stem = "alpha_tradeoff");

// Load sweep: avg JCT against the swept machine count, one curve per policy, log-scaled JCT.
Status plot_load_sweep(const std::vector<SweepPoint>& points, const std::string& x_label,
                       const std::string& dir, const std::string& stem = "load_sweep",
                       const std::string& title = "avg JCT by load");

// A Gantt chart of a simulated schedule: one row per machine, one bar per job run (its final
// run when preempted), coloured by user and labelled with the job id where it fits, a grey bar
// for a machine's busy period before the plan; `caption` (the scenario's figures) under the time
// axis. Precondition: `result` came from simulate() on `cluster`.
// Where a figure's data, script and gnuplot's messages go: beside its images (kKeep), or into a
// temporary folder removed once gnuplot has drawn (kDiscard), so that only <stem>.svg and
// <stem>.png are written into `dir`.
enum class PlotSources { kKeep, kDiscard };

Status plot_gantt(const SimResult& result, const Cluster& cluster, const std::string& title,
                  const std::string& caption, const std::string& dir, const std::string& stem,
                  PlotSources sources = PlotSources::kDiscard);

}  // namespace allox
