// allox plan: what-if answers for a jobs file on a cluster, as is and with added machines, with
// a Gantt chart of each plan (SVG and PNG). A thin shell over sim/planner.h and sim/plots.h.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/exit.h"
#include "cli/number_checks.h"
#include "core/cluster_file.h"
#include "core/csv.h"
#include "core/output_file.h"
#include "core/workload_file.h"
#include "sim/planner.h"
#include "sim/plots.h"

namespace allox::cli {
namespace {

namespace fs = std::filesystem;

struct PlanArgs {
  std::string cluster;
  std::string jobs;
  std::vector<std::string> add;
  std::string policy = "allox";
  double alpha = 1;
  std::string gantt;
  std::string out;
};

template <class T>
T check(Expected<T> e) {
  return value_or_fail(std::move(e), "allox plan");
}

// A file-name-safe form of a scenario name: "+gpu=4,cpu=8" -> "gpu4_cpu8".
std::string slug(const std::string& name) {
  if (name == "as is") return "as_is";
  std::string s;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) s += c;
    if (c == ',') s += '_';
  }
  return s;
}

// "1 of 3 jobs never started": the note beside a scenario's figures.
std::string unfinished_count(const PlanScenario& s) {
  return std::to_string(s.unfinished.size()) + " of " + std::to_string(s.result.jobs.size()) +
         " jobs " + unfinished_state(s);
}

// Column widths follow the longest scenario and user names, so every row lines up.
void print(const std::vector<PlanScenario>& scenarios) {
  std::size_t name_width = std::string("scenario").size();
  for (const PlanScenario& s : scenarios) name_width = std::max(name_width, s.name.size());
  const int first = static_cast<int>(name_width) + 2;
  std::cout << std::left << std::setw(first) << "scenario" << std::right << std::setw(10)
            << "machines" << std::setw(12) << "avg_jct_s" << std::setw(12) << "makespan_s"
            << std::setw(10) << "vs as is"
            << "\n"
            << std::fixed << std::setprecision(1);
  const double base = scenarios.front().summary.avg_jct;
  for (const PlanScenario& s : scenarios) {
    std::cout << std::left << std::setw(first) << s.name << std::right << std::setw(10)
              << s.cluster.machines.size() << std::setw(12) << s.summary.avg_jct << std::setw(12)
              << s.summary.makespan << std::setw(9)
              << (base > 0 ? 100 * (s.summary.avg_jct - base) / base : 0) << "%";
    if (!s.unfinished.empty()) std::cout << "  (" << unfinished_count(s) << ")";
    std::cout << "\n";
  }
  const auto& users = scenarios.front().summary.per_user;
  std::size_t user_width = std::string("user").size();
  for (const UserSummary& u : users) user_width = std::max(user_width, u.user.size());
  const int column = std::max(12, static_cast<int>(name_width)) + 2;
  std::cout << "\nlast finish per user (s)\n"
            << std::left << std::setw(static_cast<int>(user_width) + 2) << "user";
  for (const PlanScenario& s : scenarios) std::cout << std::right << std::setw(column) << s.name;
  std::cout << "\n";
  for (std::size_t u = 0; u < users.size(); ++u) {
    std::cout << std::left << std::setw(static_cast<int>(user_width) + 2) << users[u].user;
    for (const PlanScenario& s : scenarios) {
      std::cout << std::right << std::setw(column);
      if (const std::string state = unfinished_state(s, users[u].user); !state.empty()) {
        std::cout << state;
      } else {
        std::cout << s.summary.per_user[u].last_finish;
      }
    }
    std::cout << "\n";
  }
}

// The scenario's figures under its chart: what a slide needs to say beside the picture.
std::string caption(const PlanScenario& s, const PlanArgs& a) {
  std::map<DeviceType, std::size_t> per_type;
  for (const Machine& m : s.cluster.machines) ++per_type[m.device];
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << "avg JCT " << s.summary.avg_jct << " s,  makespan "
      << s.summary.makespan << " s,  " << s.cluster.machines.size() << " machines (";
  const char* sep = "";
  for (const auto& [device, n] : per_type) out << std::exchange(sep, ", ") << n << " " << device;
  out << "),  " << s.result.jobs.size() << " jobs";
  if (!s.unfinished.empty()) out << " (" << s.unfinished.size() << " " << unfinished_state(s) << ")";
  out << " of " << s.result.users.size() << " users,  " << a.policy;
  if (a.policy == "allox") out << " alpha = " << csv_number(a.alpha);
  return out.str();
}

// Each scenario's Gantt file stem in --out: gantt_<slug>, and where two scenarios' slugs are
// the same ("+v-100=1" and "+v100=1", or one --add given twice) the later one's gets
// _<its index> (the as-is scenario is 0, then each --add in order).
std::vector<std::string> gantt_stems(const std::vector<PlanScenario>& scenarios) {
  std::vector<std::string> stems;
  std::set<std::string> taken;
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    std::string stem = "gantt_" + slug(scenarios[i].name);
    for (std::string suffix = "_" + std::to_string(i); taken.contains(stem); suffix += "_") {
      stem = "gantt_" + slug(scenarios[i].name) + suffix;
    }
    taken.insert(stem);
    stems.push_back(stem);
  }
  return stems;
}

// <dir>/<stem>.svg and .png.
void draw_gantt(const PlanScenario& s, const PlanArgs& a, const fs::path& dir,
                const std::string& stem) {
  const Status st =
      plot_gantt(s.result, s.cluster, "allox plan: " + s.name, caption(s, a), dir.string(), stem);
  if (!st.ok()) {
    std::cerr << "allox plan: " << st.message() << "\n";
    fail();
  }
}

void write_json(const std::vector<PlanScenario>& scenarios, const std::vector<std::string>& stems,
                const fs::path& path) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    const PlanScenario& s = scenarios[i];
    nlohmann::ordered_json js;
    js["scenario"] = s.name;
    js["gantt"] = stems[i] + ".svg";
    js["machines"] = s.cluster.machines.size();
    js["jobs_finished"] = s.result.jobs.size() - s.unfinished.size();
    nlohmann::ordered_json never_started = nlohmann::ordered_json::array();
    nlohmann::ordered_json never_finished = nlohmann::ordered_json::array();
    for (std::size_t i : s.unfinished) {
      const SimJobRecord& r = s.result.jobs[i];
      (r.start ? never_finished : never_started).push_back(r.job);
    }
    js["never_started"] = never_started;
    js["never_finished"] = never_finished;
    // Over the jobs that finished; a user with a job that never finished has no last finish.
    js["avg_jct"] = s.summary.avg_jct;
    js["makespan"] = s.summary.makespan;
    nlohmann::ordered_json users = nlohmann::ordered_json::object();
    for (const UserSummary& u : s.summary.per_user) {
      if (!unfinished_state(s, u.user).empty()) {
        users[u.user] = nullptr;
      } else {
        users[u.user] = u.last_finish;
      }
    }
    js["user_last_finish"] = users;
    nlohmann::ordered_json jobs = nlohmann::ordered_json::array();
    for (const SimJobRecord& r : s.result.jobs) {
      nlohmann::ordered_json job = {{"job", r.job}, {"user", r.user}};
      if (r.finish) {
        job["machine"] = r.machine;
        job["start"] = *r.start;
        job["finish"] = *r.finish;
      } else {
        job["state"] = unfinished_state(r);
        job["machine"] = nullptr;
        job["start"] = r.start ? nlohmann::ordered_json(*r.start) : nlohmann::ordered_json();
        job["finish"] = nullptr;
      }
      jobs.push_back(job);
    }
    js["jobs"] = jobs;
    j.push_back(js);
  }
  check(write_output_file(path, [&](std::ostream& out) { out << j.dump(2) << "\n"; }));
}

// --gantt's target, checked before any work: the chart goes to <stem>.svg and .png in PATH's
// folder. A folder, or a path with no file name ("out/", "/"), would name a hidden ".svg"; a
// folder that does not exist is refused rather than made; a device or other special file
// (/dev/null, a FIFO), as PATH or as either image, is not a file a chart can be written to.
void check_gantt_target(const std::string& gantt) {
  auto refuse = [&](const std::string& why) {
    std::cerr << "allox plan: --gantt " << gantt << ": " << why << "\n";
    fail();
  };
  const fs::path path(gantt);
  std::error_code ec;
  if (fs::is_directory(path, ec) || path.stem().empty()) {
    refuse("is a folder or has no file name; give a file such as plan.svg (or use --out for a "
           "folder)");
  }
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) refuse("the folder " + dir.string() + " does not exist");
  const fs::path stem = dir / path.stem();
  for (const fs::path& file : {path, fs::path(stem.string() + ".svg"),
                               fs::path(stem.string() + ".png")}) {
    const fs::file_status st = fs::status(file, ec);
    if (fs::exists(st) && !fs::is_regular_file(st)) {
      refuse(file.string() + " is a device or special file, not a file to write a chart to");
    }
  }
}

void run_plan(const PlanArgs& a) {
  if (!a.gantt.empty()) check_gantt_target(a.gantt);
  const Cluster cluster = check(load_cluster_file(a.cluster));
  const Workload workload = check(load_workload_file(a.jobs));
  std::vector<PlanAlternative> alternatives;
  for (const std::string& text : a.add) alternatives.push_back(check(parse_alternative(text)));
  PlanOptions options;
  options.policy = a.policy;
  options.policy_options.alpha = a.alpha;
  const std::vector<PlanScenario> scenarios = check(plan(workload, cluster, alternatives, options));
  print(scenarios);
  // A starving policy is a valid answer to a what-if: a warning, not an error.
  for (const PlanScenario& s : scenarios) {
    if (const std::string note = unfinished_note(s, a.policy); !note.empty()) {
      std::cerr << "allox plan: warning: " << note << "\n";
    }
  }
  if (!a.gantt.empty()) {
    const fs::path path(a.gantt);
    draw_gantt(scenarios.front(), a, path.has_parent_path() ? path.parent_path() : ".",
               path.stem().string());
  }
  if (!a.out.empty()) {
    std::error_code ec;
    fs::create_directories(a.out, ec);
    const std::vector<std::string> stems = gantt_stems(scenarios);
    for (std::size_t i = 0; i < scenarios.size(); ++i) draw_gantt(scenarios[i], a, a.out, stems[i]);
    write_json(scenarios, stems, fs::path(a.out) / "plan.json");
  }
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "plan",
      "What-if planning: predicted avg JCT, makespan and per-user finish for a jobs file on a "
      "cluster as is and with added machines (--add gpu=4 --add cpu=8 ...), with SVG Gantt "
      "charts.");
  auto a = std::make_shared<PlanArgs>();
  cmd->add_option("--cluster", a->cluster, "cluster.yaml")->required();
  cmd->add_option("--jobs", a->jobs, "jobs.yaml")->required();
  cmd->add_option("--add", a->add,
                  "an alternative: machines to add, device=N[,device=N...] (repeatable; each "
                  "--add is one alternative)");
  cmd->add_option("--policy", a->policy, "scheduling policy")->capture_default_str();
  cmd->add_option("--alpha", a->alpha, "allox fairness knob α (1 = minimum total JCT)")
      ->check(number_in(0, 1))
      ->capture_default_str();
  cmd->add_option("--gantt", a->gantt,
                  "the as-is plan's Gantt chart: writes exactly two files, PATH without its "
                  "extension plus .svg and .png (--gantt out/plan.svg writes out/plan.svg and "
                  "out/plan.png, replacing them); the folder must exist");
  cmd->add_option("--out", a->out,
                  "folder (made if missing) for plan.json and, per scenario, gantt_<scenario>.svg "
                  "and .png (as_is, then each --add: --add gpu=4,cpu=8 gives gantt_gpu4_cpu8; a "
                  "name taken by an earlier scenario gets _<index>, the --add's position from 1); "
                  "nothing else is written");
  cmd->callback([a] { run_plan(*a); });
}

}  // namespace allox::cli
