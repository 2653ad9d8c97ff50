#include "sim/plots.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "core/output_file.h"
#include "sim/plot_style.h"

extern char** environ;

namespace allox {
namespace {

namespace fs = std::filesystem;

// Output terminals; the PNG one falls back to libgd's png when cairo is absent.
const char* kTerminals =
    "png_term = (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) ? 'pngcairo' : 'png'\n";

// gnuplot single-quoted text. (Not named quoted(): std::quoted would win overload resolution for
// a non-const std::string by argument-dependent lookup, and write double quotes.)
std::string gp_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += (c == '\'') ? std::string("''") : std::string(1, c);
  return out + "'";
}

// The plot commands are written twice, once per terminal; the images go to <output>.png and
// .svg (default: <stem>, beside the script).
std::string script(const std::string& stem, const std::string& setup, const std::string& plot,
                   const std::string& size = "800,500", const std::string& output = "") {
  const std::string images = output.empty() ? stem : output;
  std::ostringstream gp;
  gp << kTerminals << setup << "\n";
  gp << "eval('set terminal ' . png_term . ' size " << size << " noenhanced')\n";
  gp << "set output " << gp_quoted(images + ".png") << "\n" << plot << "\n";
  gp << "set terminal svg size " << size << " noenhanced\n";
  gp << "set output " << gp_quoted(images + ".svg") << "\n" << plot << "\nset output\n";
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

// A folder of its own under the system's temporary folder, removed with the object.
class TemporaryFolder {
 public:
  TemporaryFolder() {
    std::error_code ec;
    std::string pattern = (fs::temp_directory_path(ec) / "allox-plot-XXXXXX").string();
    if (!ec && ::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TemporaryFolder() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;
  const fs::path& path() const { return path_; }  // empty when it could not be made

 private:
  fs::path path_;
};

// draw() with the sources as `sources` says: kDiscard writes the data and script (whose images
// go to make_script(output prefix)) into a temporary folder and draws the images into `dir`.
Status draw_with(PlotSources sources, const std::string& dir, const std::string& stem,
                 const std::string& data,
                 const std::function<std::string(const std::string&)>& make_script) {
  if (sources == PlotSources::kKeep) return draw(dir, stem, data, make_script(""));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{"cannot create " + dir + ": " + ec.message()};
  const fs::path images = fs::absolute(dir, ec) / stem;
  if (ec) return Error{"cannot resolve " + dir + ": " + ec.message()};
  TemporaryFolder work;
  if (work.path().empty()) return Error{"cannot create a temporary folder for gnuplot's files"};
  return draw(work.path().string(), stem, data, make_script(images.string()));
}


// What every figure shares: a title, the legend outside the plot area (it covers no data) in a
// box, a light grid, and margins wide enough that no tick label is clipped at the edges.
std::string common_setup(const std::string& title) {
  return "set title " + gp_quoted(title) +
         " font ',13'\nset key outside right top vertical box opaque spacing 1.2\n"
         "set grid lc rgb '#dddddd'\nset border lc rgb '#444444'\n"
         "set lmargin 12\nset bmargin 5\nset tmargin 3\nset offsets graph 0, graph 0.02, 0, 0\n";
}

// Log-scale tick labels as plain numbers (1, 10, 100, 1000, 10000, 100000), never clipped.
const char* kLogTicks = "set format x '%.0f'\nset mxtics 10\n";

}  // namespace

Status plot_jct_cdf(const std::vector<Run>& runs, const std::string& dir, const std::string& stem,
                    const std::string& title) {
  // One gnuplot data block per run, separated by two blank lines (index i selects run i).
  std::ostringstream data;
  std::ostringstream plot;
  std::vector<std::string> labels;
  for (const Run& r : runs) labels.push_back(r.spec.label);
  const std::vector<SeriesStyle> styles = line_styles(labels);
  plot << "plot ";
  constexpr std::size_t kPoints = 400;
  double longest = 1;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    std::vector<double> jct;
    for (const SimJobRecord& r : runs[i].result.jobs) {
      if (r.finish) jct.push_back(std::max(*r.finish - r.arrival, 1e-3));
    }
    std::sort(jct.begin(), jct.end());
    if (!jct.empty()) longest = std::max(longest, jct.back());
    data << "# " << runs[i].spec.label << "\n";
    const std::size_t step = std::max<std::size_t>(1, jct.size() / kPoints);
    for (std::size_t k = 0; k < jct.size(); k += step) {
      data << jct[k] << ' ' << double(k + 1) / jct.size() << "\n";
    }
    if (!jct.empty()) data << jct.back() << " 1\n";
    data << "\n\n";
    plot << (i ? ", " : "") << gp_quoted(stem + ".dat") << " index " << i << " with lines "
         << gnuplot_line(styles[i]) << " title " << gp_quoted(runs[i].spec.label);
  }
  // The axis ends a little past the longest JCT; the legend's margin keeps its last tick label
  // inside the canvas.
  std::ostringstream setup;
  setup << common_setup(title) << kLogTicks << "set logscale x\nset xrange [*:" << longest * 1.2
        << "]\nset xlabel 'job completion time (s, log scale)'\n"
           "set ylabel 'fraction of jobs completed'\nset yrange [0:1]\nset ytics 0.1";
  return draw(dir, stem, data.str(), script(stem, setup.str(), plot.str(), "1100,600"));
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
  // Time in hours when the run is long, so the tick labels stay short.
  const bool hours = t1 - t0 > 3 * 3600;
  const double unit = hours ? 3600 : 1;
  std::ostringstream data;
  data << "# time (" << (hours ? "h" : "s") << "), then cumulative share of users 1..U (stacked)\n";
  for (int b = 0; b < kBins; ++b) {
    data << (t0 + (b + 0.5) * width) / unit;
    double cumulative = 0;
    for (std::size_t u = 0; u < users; ++u) {
      cumulative += bins[b][u] / width / machines;
      data << ' ' << cumulative;
    }
    data << "\n";
  }
  std::ostringstream plot;
  plot << "plot ";
  // Drawn top layer first so each lower band paints over the one above; the legend then lists
  // users last to first, as the bands stack from the top.
  for (std::size_t u = users; u-- > 0;) {
    plot << (u + 1 < users ? ", " : "") << gp_quoted(stem + ".dat") << " using 1:" << (u + 2)
         << " with filledcurves x1 fs solid 0.85 border lc rgb '#ffffff' lc rgb '"
         << fill_colour(u) << "' title " << gp_quoted(run.result.users[u]);
  }
  const std::string setup = common_setup(run.spec.label + ": each user's share of the " +
                                         std::to_string(run.result.machines) +
                                         " machines over time") +
                            "set xlabel 'simulated time (" + (hours ? "hours" : "s") +
                            ")'\nset ylabel 'share of machines busy (stacked)'\n"
                            "set yrange [0:1.05]\nset ytics 0.1\nset autoscale xfix";
  return draw(dir, stem, data.str(), script(stem, setup, plot.str(), "1100,500"));
}

Status plot_alpha_tradeoff(const std::vector<SweepPoint>& points, const std::string& dir,
                           const std::string& stem) {
  std::ostringstream data;
  data << "# alpha avg_jct jain max_rho\n";
  for (const SweepPoint& p : points) {
    data << p.x << ' ' << p.summary.avg_jct << ' ' << p.summary.jain << ' ' << p.summary.max_rho
         << "\n";
  }
  const SeriesStyle style = line_styles({"allox"}).front();
  const std::string f = gp_quoted(stem + ".dat");
  const std::string line = gnuplot_line(style);
  const std::string plot =
      "set multiplot layout 1,2 title 'allox: avg JCT against fairness, one point per alpha' "
      "font ',13'\n"
      "set xlabel \"Jain's index of 1/rho (higher is fairer)\"\n"
      "plot " +
      f + " using 3:2 with linespoints " + line + " title 'allox', " + f +
      " using 3:2:(sprintf('a=%g', $1)) with labels offset 2,0.8 notitle\n"
      "set xlabel 'max rho, worst user (lower is fairer)'\n"
      "plot " +
      f + " using 4:2 with linespoints " + line + " title 'allox', " + f +
      " using 4:2:(sprintf('a=%g', $1)) with labels offset 2,0.8 notitle\n"
      "unset multiplot";
  const std::string setup =
      "set ylabel 'avg JCT (s)'\nset grid lc rgb '#dddddd'\nset key outside bottom center box\n"
      "set lmargin 12\nset bmargin 6\nset offsets graph 0.1, graph 0.15, graph 0.1, graph 0.1";
  return draw(dir, stem, data.str(), script(stem, setup, plot, "1200,520"));
}

Status plot_load_sweep(const std::vector<SweepPoint>& points, const std::string& x_label,
                       const std::string& dir, const std::string& stem,
                       const std::string& title) {
  std::map<std::string, std::vector<const SweepPoint*>> curves;
  std::vector<std::string> order;
  for (const SweepPoint& p : points) {
    if (!curves.count(p.summary.policy)) order.push_back(p.summary.policy);
    curves[p.summary.policy].push_back(&p);
  }
  const std::vector<SeriesStyle> styles = line_styles(order);
  std::ostringstream data, plot;
  plot << "plot ";
  for (std::size_t i = 0; i < order.size(); ++i) {
    data << "# " << order[i] << "\n";
    for (const SweepPoint* p : curves[order[i]]) data << p->x << ' ' << p->summary.avg_jct << "\n";
    data << "\n\n";
    plot << (i ? ", " : "") << gp_quoted(stem + ".dat") << " index " << i << " with linespoints "
         << gnuplot_line(styles[i]) << " title " << gp_quoted(order[i]);
  }
  const std::string setup = common_setup(title) +
                            "set logscale y\nset format y '%.0f'\nset mytics 10\nset grid mytics\nset xlabel " +
                            gp_quoted(x_label) + "\nset ylabel 'avg JCT (s, log scale)'";
  return draw(dir, stem, data.str(), script(stem, setup, plot.str(), "1100,600"));
}

Status plot_gantt(const SimResult& result, const Cluster& cluster, const std::string& title,
                  const std::string& caption, const std::string& dir, const std::string& stem,
                  PlotSources sources) {
  const std::size_t rows = cluster.machines.size();
  if (rows == 0) return Error{"plot_gantt: the cluster has no machines"};
  std::map<std::string, std::size_t> row_of;
  for (std::size_t i = 0; i < rows; ++i) row_of[cluster.machines[i].name] = i;
  double end = 0;
  for (const Machine& m : cluster.machines) end = std::max(end, m.busy_until);
  for (const SimJobRecord& r : result.jobs) {
    if (r.finish) end = std::max(end, *r.finish);
  }
  if (end <= 0) end = 1;
  // Blocks: 0 = machines busy before the plan, then one per user (legend entries).
  std::ostringstream data;
  data << "# row start end label\n";
  for (std::size_t i = 0; i < rows; ++i) {
    if (cluster.machines[i].busy_until > 0) {
      data << i << ' ' << 0 << ' ' << cluster.machines[i].busy_until << " \"\"\n";
    }
  }
  data << "-10 0 0 \"\"\n\n\n";  // keeps block 0 present (off-chart) when nothing was busy
  // Job ids fit inside a bar when the bar is wider than the id in characters (chart ~900 px).
  const double px_per_s = 900 / end;
  for (std::size_t u = 0; u < result.users.size(); ++u) {
    data << "# " << result.users[u] << "\n";
    bool any = false;
    for (const SimJobRecord& r : result.jobs) {
      if (r.user != result.users[u] || !r.finish || !row_of.count(r.machine)) continue;
      const double from = r.last_start.value_or(*r.start);
      const bool fits = (*r.finish - from) * px_per_s > 7.0 * r.job.size() + 6;
      data << row_of[r.machine] << ' ' << from << ' ' << *r.finish << " \""
           << (fits ? r.job : std::string()) << "\"\n";
      any = true;
    }
    if (!any) data << "-10 0 0 \"\"\n";
    data << "\n\n";
  }
  std::ostringstream setup;
  setup << common_setup(title) << "set xlabel 'time (s)'\nset ylabel 'machine'\n"
        << "set yrange [" << rows - 0.4 << ":-0.6]\nset xrange [0:" << end
        << "]\nset grid noytics\nset ytics (";
  for (std::size_t i = 0; i < rows; ++i) {
    setup << (i ? ", " : "") << gp_quoted(cluster.machines[i].name) << ' ' << i;
  }
  setup << ") scale 0\nset bmargin 7\nset label 1 " << gp_quoted(caption)
        << " at graph 0.5, graph 0 offset 0,-4.5 center font ',11'\nset style fill solid 0.9 "
           "border lc rgb '#ffffff'";
  const std::string f = gp_quoted(stem + ".dat");
  const std::string bar = " using (($2+$3)/2):1:(($3-$2)/2):(0.4) with boxxyerror";
  std::ostringstream plot;
  plot << "plot " << f << " index 0" << bar << " lc rgb '#bbbbbb' title 'busy before the plan'";
  for (std::size_t u = 0; u < result.users.size(); ++u) {
    plot << ", " << f << " index " << u + 1 << bar << " lc rgb '" << fill_colour(u) << "' title "
         << gp_quoted(result.users[u]);
  }
  plot << ", for [i=1:" << result.users.size() << "] " << f
       << " index i using ($2+($3-$2)*0.02):1:4 with labels left tc rgb '#ffffff' notitle";
  const std::string size = "1100," + std::to_string(std::max<std::size_t>(360, 120 + 26 * rows));
  return draw_with(sources, dir, stem, data.str(), [&](const std::string& output) {
    return script(stem, setup.str(), plot.str(), size, output);
  });
}

}  // namespace allox
