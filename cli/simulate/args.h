// What `allox simulate` was asked for: every option's value as parsed, before any is resolved
// (rules.h turns the rule options into the simulator's settings). Plain data, filled by
// options.h's definitions.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "sim/synthetic.h"

namespace allox::cli {

struct SimulateArgs {
  // The trace: a file, or a synthetic one.
  std::string trace;
  std::string format;  // allox, yaml or csv; empty: from the file's extension
  std::size_t synthetic_jobs = 0;
  SyntheticOptions synthetic;
  std::string gavel = "data/gavel/simulation_throughputs.json";
  std::string save_trace;
  bool exact_estimates = false;

  // The cluster: a file, or counts.
  std::string cluster;
  int gpus = -1;
  int cpus = -1;
  std::vector<std::string> machines;  // device=N or device=NxU

  // The policies and the rules they run under.
  std::string policy = "allox";
  double alpha = 0.1;
  double starvation_bound = std::numeric_limits<double>::infinity();
  bool batch_rounds = false;
  std::string estimates = "profiler";
  std::string matcher_backend = "auto";
  bool profiling = false;
  std::string rules = "allox";
  std::string drf_vector;  // empty: as --rules and the trace say
  std::string srpt_rank;   // empty: remaining
  std::string es_pick = "shortest-there";
  std::string resume;         // empty: as --rules says
  std::string profiling_run;  // empty: as --rules says
  double startup = 1;
  double profiling_min_run = 1;
  double round_period = -1;  // -1: the policy's default
  unsigned threads = 1;

  // Further runs.
  std::vector<double> sweep_alpha;
  std::vector<int> sweep_gpus;
  std::vector<double> sweep_error;

  // Where results go.
  std::string out;
  bool plots = false;
  bool progress = false;
  bool no_progress = false;
};

}  // namespace allox::cli
