// allox simulate's pieces (cli/simulate/), called directly: the options as CLI11 parses them,
// the checks that need several options at once, the cluster --machines describes, and the rules
// --rules and its single-rule options resolve to.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli/simulate/args.h"
#include "cli/simulate/inputs.h"
#include "cli/simulate/options.h"
#include "cli/simulate/outputs.h"
#include "cli/simulate/rules.h"
#include "sim/allox_trace.h"
#include "sim/trace_file.h"

namespace allox::cli {
namespace {

// The options after parsing `line` (without the program and subcommand names).
SimulateArgs parse(std::vector<std::string> line) {
  CLI::App app;
  SimulateArgs args;
  add_simulate_options(app, args);
  std::reverse(line.begin(), line.end());  // CLI11 takes the arguments last first
  app.parse(line);
  return args;
}

Trace csv_trace() {
  auto trace = parse_csv_trace("job,user,time.gpu,time.cpu\na,u,10,20\nb,v,30,\n", "t.csv");
  EXPECT_TRUE(trace.ok()) << trace.message();
  return *trace;
}

// Two jobs in the AlloX format, which states what each job holds (cores, memory, GPUs).
Trace allox_format_trace() {
  std::istringstream in(
      "# 0\n1 a 1 0 q\nstage -1.0 20 3 780 1 2 369 1 0 0\n0\n"
      "# 1\n1 b 1 5 r\nstage -1.0 32 16 700 1 4 300 1 0 0\n0\n");
  auto trace = parse_allox_trace(in, "t.txt");
  EXPECT_TRUE(trace.ok()) << trace.message();
  return *trace;
}

TEST(SimulateOptions, ParseIntoTheArgumentsWithTheirDefaults) {
  const SimulateArgs a = parse({"--trace", "t.csv", "--gpus", "2", "--machines", "v100=2",
                                "--machines", "k80=1x4", "--sweep-alpha", "0.2,1"});
  EXPECT_EQ("t.csv", a.trace);
  EXPECT_EQ(2, a.gpus);
  EXPECT_EQ(-1, a.cpus);
  EXPECT_EQ((std::vector<std::string>{"v100=2", "k80=1x4"}), a.machines);
  EXPECT_EQ((std::vector<double>{0.2, 1}), a.sweep_alpha);
  EXPECT_EQ("allox", a.policy);
  EXPECT_EQ(0.1, a.alpha);
  EXPECT_EQ("allox", a.rules);
  EXPECT_EQ(-1, a.round_period);
  EXPECT_EQ(1u, a.threads);
}

TEST(SimulateOptions, RefuseOptionsThatExcludeEachOtherAndBadValues) {
  EXPECT_THROW(parse({"--trace", "t.csv", "--synthetic", "3"}), CLI::ExcludesError);
  EXPECT_THROW(parse({"--cluster", "c.yaml", "--gpus", "2"}), CLI::ExcludesError);
  EXPECT_THROW(parse({"--cluster", "c.yaml", "--machines", "gpu=2"}), CLI::ExcludesError);
  EXPECT_THROW(parse({"--rules", "paper"}), CLI::ValidationError);
  EXPECT_THROW(parse({"--round-period", "0.5"}), CLI::ValidationError);
  EXPECT_THROW(parse({"--round-period", "1e-300"}), CLI::ValidationError);
  EXPECT_EQ(0, parse({"--round-period", "0"}).round_period);
  EXPECT_EQ(1, parse({"--round-period", "1"}).round_period);
}

TEST(SimulateInputs, OptionsThatOnlyWorkTogether) {
  SimulateArgs a;
  EXPECT_EQ("give --trace FILE or --synthetic N", check_option_pairs(a).message());
  a.synthetic_jobs = 5;
  EXPECT_TRUE(check_option_pairs(a).ok());
  a.plots = true;
  EXPECT_EQ("--plots needs --out DIR", check_option_pairs(a).message());
  a.out = "run";
  EXPECT_TRUE(check_option_pairs(a).ok());
}

// --save-trace over the --trace file (by name or by another path to it) replaced the input.
TEST(SimulateInputs, SavingTheTraceOverItsOwnFileIsRefused) {
  const std::string trace = ALLOX_SOURCE_DIR "/examples/trace.csv";
  SimulateArgs a;
  a.trace = trace;
  a.save_trace = ALLOX_SOURCE_DIR "/examples/../examples/trace.csv";
  EXPECT_EQ("--save-trace " + a.save_trace + " is the --trace file " + trace +
                ": it would be overwritten; save the trace elsewhere",
            check_option_pairs(a).message());
  a.save_trace = trace;
  EXPECT_FALSE(check_option_pairs(a).ok());
  a.save_trace = ::testing::TempDir() + "/saved-trace.csv";  // need not exist yet
  EXPECT_TRUE(check_option_pairs(a).ok()) << check_option_pairs(a).message();
}

TEST(SimulateInputs, TheClusterOfCountsAndNodeShapes) {
  SimulateArgs a;
  a.cpus = 1;
  a.machines = {"v100=2", "k80=1x4", "v100=1"};
  auto cluster = load_cluster(a);
  ASSERT_TRUE(cluster.ok()) << cluster.message();
  std::map<DeviceType, int> per_type;
  for (const Machine& m : cluster->machines) ++per_type[m.device];
  EXPECT_EQ((std::map<DeviceType, int>{{"cpu", 1}, {"k80", 4}, {"v100", 3}}), per_type);
  for (const Machine& m : cluster->machines) {
    if (m.device == "k80") {
      EXPECT_EQ("k80-0", m.node) << m.name;
    }
  }
}

TEST(SimulateInputs, BadMachineEntriesAreRefusedNamingThem) {
  const std::string shape =
      "--machines expects device=N or device=NxU (N >= 1 machines, or N nodes of U units, U at "
      "most 64, at most 100000 devices), got '";
  struct Case {
    std::vector<std::string> machines;
    std::string error;
  };
  const Case cases[] = {
      {{"v100"}, shape + "v100'"},
      {{"=3"}, shape + "=3'"},
      {{"v100=0"}, shape + "v100=0'"},
      {{"v100=2x65"}, shape + "v100=2x65'"},
      {{"v100=1x4", "v100=1x8"}, "--machines: two node shapes for v100 ('v100=1x8')"},
      {{"gpu=100000", "gpu=1"}, "--machines gpu=1: over 100000 machines of gpu"},
      {{"gpu=60000", "cpu=60000"},
       "--gpus, --cpus and --machines describe 120000 devices; a cluster has at most 100000"},
      {{}, "give --cluster FILE, or --gpus/--cpus/--machines counts"},
  };
  for (const Case& c : cases) {
    SimulateArgs a;
    a.machines = c.machines;
    EXPECT_EQ(c.error, load_cluster(a).message()) << c.error;
  }
}

TEST(SimulateInputs, ASweepOfGpusStaysWithinTheClusterLimit) {
  SimulateArgs a;
  a.cpus = 2;
  a.gpus = 4;
  const Cluster cluster = *load_cluster(a);
  a.sweep_gpus = {0, static_cast<int>(kMaxClusterDevices) - 2};
  EXPECT_TRUE(check_sweep_gpus(a, cluster).ok());
  a.sweep_gpus.push_back(static_cast<int>(kMaxClusterDevices) - 1);
  EXPECT_EQ("--sweep-gpus 99999: the cluster would have over 100000 devices",
            check_sweep_gpus(a, cluster).message());
}

TEST(SimulateRules, AlloxRulesByDefault) {
  const SimulateArgs a = parse({"--alpha", "0.5", "--profiling", "--startup", "2"});
  auto s = resolve_rules(a, csv_trace());
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(0.5, s->policy.alpha);
  EXPECT_TRUE(s->sim.profiling.enabled);
  EXPECT_EQ(2, s->sim.profiling.startup);
  EXPECT_EQ(ResumeRule::kCheckpoint, s->sim.resume);
  EXPECT_EQ(ProfilingRunLength::kStartupPlusIterations, s->sim.profiling.run_length);
  EXPECT_EQ(SrptRank::kRemaining, s->policy.srpt_rank);
  EXPECT_TRUE(s->policy.drf_capacity.empty());
  EXPECT_EQ("devices", s->drf_vector);
}

TEST(SimulateRules, ReferencePresetWithEachRuleOverridable) {
  // The reference simulator's rules; its drf vector only where the trace states resources.
  auto s = resolve_rules(parse({"--rules", "reference"}), csv_trace());
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ResumeRule::kExact, s->sim.resume);
  EXPECT_EQ(ProfilingRunLength::kFractionOfTime, s->sim.profiling.run_length);
  EXPECT_EQ("remaining", s->srpt_rank);
  EXPECT_EQ("devices", s->drf_vector);
  s = resolve_rules(parse({"--rules", "reference"}), allox_format_trace());
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ("reference", s->drf_vector);
  EXPECT_FALSE(s->policy.drf_capacity.empty());
  // A single rule's option wins over the preset.
  s = resolve_rules(parse({"--rules", "reference", "--resume", "checkpoint", "--drf-vector",
                           "devices", "--srpt-rank", "original"}),
                    allox_format_trace());
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ResumeRule::kCheckpoint, s->sim.resume);
  EXPECT_EQ(ProfilingRunLength::kFractionOfTime, s->sim.profiling.run_length);
  EXPECT_EQ(SrptRank::kOriginal, s->policy.srpt_rank);
  EXPECT_TRUE(s->policy.drf_capacity.empty());
  // Asked for by name, the reference vector needs a trace that states resources.
  EXPECT_EQ(
      "--drf-vector reference: the trace states no resources per job (the AlloX trace format "
      "does: cores, memory, GPUs, GPU memory)",
      resolve_rules(parse({"--drf-vector", "reference"}), csv_trace()).message());
}

TEST(SimulateRules, TheLinesThatDescribeTheRuns) {
  SimulateArgs a =
      parse({"--rules", "reference", "--es-pick", "head", "--gpus", "2", "--cpus", "1"});
  const Cluster cluster = *load_cluster(a);
  const Trace trace = allox_format_trace();
  const RunSettings s = *resolve_rules(a, trace);
  EXPECT_EQ(
      "2 jobs, 2 users, 3 machines; profiling off; estimates from the profiler; rules: srpt-rank "
      "remaining, resume exact, profiling-run fraction, startup 1 s, drf-vector reference (cpu: "
      "cores 32, memory_gb 16; gpu: gpu_memory_gb 4, gpus 1 per machine), es-pick head",
      settings_line(a, trace, cluster, s));
  EXPECT_EQ("2 jobs, 1 cpu + 2 gpu, profiling off, profiler estimates, reference rules",
            plot_setting(a, trace, cluster));
}

}  // namespace
}  // namespace allox::cli
