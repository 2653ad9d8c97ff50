#include "cli/simulate/outputs.h"

#include <filesystem>
#include <map>
#include <utility>

#include "cli/simulate/check.h"
#include "cli/simulate/runs.h"
#include "core/output_file.h"
#include "sim/plots.h"
#include "sim/report.h"

namespace allox::cli {

void write_runs(const SimulateArgs& a, const Trace& trace, const Cluster& cluster,
                const std::vector<Run>& runs) {
  if (a.out.empty()) return;
  const std::filesystem::path out(a.out);
  if (runs.size() == 1) {
    check(write_run_files(runs[0].summary, runs[0].result, a.out));
  } else {
    for (const Run& r : runs) {
      check(write_run_files(r.summary, r.result, (out / r.spec.label).string()));
    }
    check(write_output_file(out / "comparison.csv",
                            [&](std::ostream& o) { write_comparison_csv(summaries_of(runs), o); }));
  }
  if (!a.plots) return;
  check(plot_jct_cdf(runs, a.out, "jct_cdf",
                     "Job completion times: " + plot_setting(a, trace, cluster)));
  for (const Run& r : runs) {
    check(plot_shares(r, a.out, runs.size() == 1 ? "shares" : "shares_" + r.spec.label));
  }
}

std::string plot_setting(const SimulateArgs& a, const Trace& trace, const Cluster& cluster) {
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

}  // namespace allox::cli
