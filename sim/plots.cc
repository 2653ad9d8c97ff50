#include "sim/plots.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/output_file.h"

extern char** environ;

namespace allox {
namespace {

namespace fs = std::filesystem;

// Output terminals; the PNG one falls back to libgd's png when cairo is absent.
const char* kTerminals =
    "png_term = (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) ? 'pngcairo' : 'png'\n";

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += (c == '\'') ? std::string("''") : std::string(1, c);
  return out + "'";
}

// The plot commands are written twice, once per terminal.
std::string script(const std::string& stem, const std::string& setup, const std::string& plot,
                   const std::string& size = "800,500") {
  std::ostringstream gp;
  gp << kTerminals << setup << "\n";
  gp << "eval('set terminal ' . png_term . ' size " << size << " noenhanced')\n";
  gp << "set output " << quoted(stem + ".png") << "\n" << plot << "\n";
  gp << "set terminal svg size " << size << " noenhanced\n";
  gp << "set output " << quoted(stem + ".svg") << "\n" << plot << "\nset output\n";
  return gp.str();
}

Status write_text(const fs::path& path, const std::string& text) {
  return write_output_file(path, [&](std::ostream& out) { out << text; });
}

// Runs gnuplot on `script_name` inside `dir`; its stderr goes to <stem>.log.
Status run_gnuplot(const fs::path& dir, const std::string& stem) {
  const std::string gp = stem + ".gp", log = (dir / (stem + ".log")).string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  const std::string cwd = dir.string();
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  std::vector<char*> argv = {const_cast<char*>("gnuplot"), const_cast<char*>(gp.c_str()), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Error{"cannot run gnuplot (is gnuplot-nox installed?)"};
  int status = 0;
  waitpid(pid, &status, 0);
  std::ifstream err(log);
  std::stringstream text;
  text << err.rdbuf();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Error{"gnuplot failed on " + (dir / gp).string() + ": " + text.str()};
  }
  if (text.str().empty()) fs::remove(log);
  return OkStatus();
}

Status draw(const std::string& dir, const std::string& stem, const std::string& data,
            const std::string& gp) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{"cannot create " + dir + ": " + ec.message()};
  if (Status s = write_text(fs::path(dir) / (stem + ".dat"), data); !s.ok()) return s;
  if (Status s = write_text(fs::path(dir) / (stem + ".gp"), gp); !s.ok()) return s;
  return run_gnuplot(dir, stem);
}

}  // namespace

Status plot_jct_cdf(const std::vector<Run>& runs, const std::string& dir, const std::string& stem) {
  // One gnuplot data block per run, separated by two blank lines (index i selects run i).
  std::ostringstream data;
  std::ostringstream plot;
  plot << "plot ";
  constexpr std::size_t kPoints = 400;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    std::vector<double> jct;
    for (const SimJobRecord& r : runs[i].result.jobs) {
      if (r.finish) jct.push_back(std::max(*r.finish - r.arrival, 1e-3));
    }
    std::sort(jct.begin(), jct.end());
    data << "# " << runs[i].spec.label << "\n";
    const std::size_t step = std::max<std::size_t>(1, jct.size() / kPoints);
    for (std::size_t k = 0; k < jct.size(); k += step) {
      data << jct[k] << ' ' << double(k + 1) / jct.size() << "\n";
    }
    if (!jct.empty()) data << jct.back() << " 1\n";
    data << "\n\n";
    plot << (i ? ", " : "") << quoted(stem + ".dat") << " index " << i << " with lines lw 2 title "
         << quoted(runs[i].spec.label);
  }
  const std::string setup =
      "set logscale x\nset xlabel 'job completion time (s)'\nset ylabel 'fraction of jobs'\n"
      "set yrange [0:1]\nset key right bottom\nset grid";
  return draw(dir, stem, data.str(), script(stem, setup, plot.str()));
}

Status plot_shares(const Run& run, const std::string& dir, const std::string& stem) {
  const auto& samples = run.result.shares;
  const std::size_t users = run.result.users.size();
  if (samples.empty() || users == 0)
    return Error{"plot_shares: " + run.spec.label + " has no samples"};
  const double t0 = samples.front().time, t1 = samples.back().time;
  constexpr int kBins = 300;
  const double width = std::max((t1 - t0) / kBins, 1e-9);
  const double machines = std::max<double>(run.result.machines, 1);
  // Time-weighted average busy machines per user in each bin.
  std::vector<std::vector<double>> bins(kBins, std::vector<double>(users, 0));
  for (std::size_t s = 0; s + 1 < samples.size(); ++s) {
    double a = samples[s].time;
    const double b = samples[s + 1].time;
    while (a < b) {
      const int bin = std::min(kBins - 1, static_cast<int>((a - t0) / width));
      const double end = std::min(b, t0 + (bin + 1) * width);
      const double span = (bin == kBins - 1) ? b - a : end - a;
      for (std::size_t u = 0; u < users; ++u) bins[bin][u] += samples[s].machines[u] * span;
      a += span;
      if (span <= 0) break;
    }
  }
  std::ostringstream data;
  data << "# time, then cumulative share of users 1..U (stacked)\n";
  for (int b = 0; b < kBins; ++b) {
    data << t0 + (b + 0.5) * width;
    double cumulative = 0;
    for (std::size_t u = 0; u < users; ++u) {
      cumulative += bins[b][u] / width / machines;
      data << ' ' << cumulative;
    }
    data << "\n";
  }
  std::ostringstream plot;
  plot << "plot ";
  for (std::size_t u = users; u-- > 0;) {
    plot << (u + 1 < users ? ", " : "") << quoted(stem + ".dat") << " using 1:" << (u + 2)
         << " with filledcurves x1 title " << quoted(run.result.users[u]);
  }
  const std::string setup =
      "set xlabel 'time (s)'\nset ylabel 'share of machines (stacked)'\n"
      "set yrange [0:1.05]\nset autoscale xfix\nset key outside right\nset title " +
      quoted(run.spec.label + ": per-user share over time");
  return draw(dir, stem, data.str(), script(stem, setup, plot.str(), "900,450"));
}

Status plot_alpha_tradeoff(const std::vector<SweepPoint>& points, const std::string& dir,
                           const std::string& stem) {
  std::ostringstream data;
  data << "# alpha avg_jct jain max_rho\n";
  for (const SweepPoint& p : points) {
    data << p.x << ' ' << p.summary.avg_jct << ' ' << p.summary.jain << ' ' << p.summary.max_rho
         << "\n";
  }
  const std::string f = quoted(stem + ".dat");
  const std::string plot =
      "set multiplot layout 1,2\n"
      "set xlabel \"Jain's index (higher is fairer)\"\n"
      "plot " +
      f + " using 3:2 with linespoints lw 2 pt 7 notitle, " + f +
      " using 3:2:(sprintf('%g', $1)) with labels offset 1,0.7 notitle\n"
      "set xlabel 'max rho (lower is fairer)'\n"
      "plot " +
      f + " using 4:2 with linespoints lw 2 pt 7 notitle, " + f +
      " using 4:2:(sprintf('%g', $1)) with labels offset 1,0.7 notitle\n"
      "unset multiplot";
  const std::string setup = "set ylabel 'avg JCT (s)'\nset grid";
  return draw(dir, stem, data.str(), script(stem, setup, plot, "1000,450"));
}

Status plot_load_sweep(const std::vector<SweepPoint>& points, const std::string& x_label,
                       const std::string& dir, const std::string& stem) {
  std::map<std::string, std::vector<const SweepPoint*>> curves;
  std::vector<std::string> order;
  for (const SweepPoint& p : points) {
    if (!curves.count(p.summary.policy)) order.push_back(p.summary.policy);
    curves[p.summary.policy].push_back(&p);
  }
  std::ostringstream data, plot;
  plot << "plot ";
  for (std::size_t i = 0; i < order.size(); ++i) {
    data << "# " << order[i] << "\n";
    for (const SweepPoint* p : curves[order[i]]) data << p->x << ' ' << p->summary.avg_jct << "\n";
    data << "\n\n";
    plot << (i ? ", " : "") << quoted(stem + ".dat") << " index " << i
         << " with linespoints lw 2 title " << quoted(order[i]);
  }
  const std::string setup = "set logscale y\nset xlabel " + quoted(x_label) +
                            "\nset ylabel 'avg JCT (s)'\nset key outside right\nset grid";
  return draw(dir, stem, data.str(), script(stem, setup, plot.str()));
}

}  // namespace allox
