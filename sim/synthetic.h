// Seeded synthetic traces built from Gavel's measured throughput table.
//
// The table is the profiler's ThroughputTable (profiler/throughput_table.h, the one definition),
// loaded from data/gavel/simulation_throughputs.json. A job type is one single-worker
// configuration (scale factor 1) on the plain device types (k80, p100, v100; the
// "*_unconsolidated" variants are left out); a device with zero throughput cannot run it. A job's
// family is its configuration, so the profiler can predict it from the same table.
//
// A synthetic job: arrival from a Poisson process (exponential gaps, rate arrival_rate), user
// uniform over `users`, job type uniform over the table, duration on its fastest device from a
// Pareto distribution (shape pareto_shape, median median_duration, capped at
// max_duration_factor × median); its step count follows, and its time on every other device is
// steps / throughput there. Estimates are true × (1 + e), e uniform in ±estimate_error.
//
// Multi-device jobs (SyntheticOptions::multi_device), after Gavel's generator: each job first
// draws its scale factor k (devices on one node, Job::units) with Gavel's probabilities, 1: 0.7,
// 2: 0.1, 4: 0.15, 8: 0.05, then its model uniformly among those the table has at k workers
// (Gavel's distributed job types; A3C, CycleGAN and Recommendation have none), and its speeds are
// the table's k-worker throughputs (steps/s of the whole job; a device that cannot hold the
// k-worker job is left out). Its duration is drawn on its fastest device with k devices of it. Off,
// no draw is added, so a seed gives the same one-device trace whether or not multi-device
// generation exists.
//
// Deterministic for a seed on every platform: the generator draws from std::mt19937_64 (fully
// specified by the standard) and maps draws to doubles itself rather than through the
// implementation-defined <random> distributions. O(jobs).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/result.h"
#include "profiler/throughput_table.h"
#include "sim/trace.h"

namespace allox {

struct JobType {
  std::string model;                              // e.g. "ResNet-50 (batch size 64)"
  std::map<DeviceType, double> steps_per_second;  // only devices that can run it
};

// The single-worker job types of a table, sorted by model name. Error if there are none.
Expected<std::vector<JobType>> synthetic_job_types(const ThroughputTable& table);

// The most jobs, and users, a synthetic trace holds: about as many as a trace file within the
// input limit (core/input_file.h) can list.
inline constexpr std::size_t kMaxSyntheticJobs = 1'000'000;
inline constexpr std::size_t kMaxSyntheticUsers = kMaxSyntheticJobs;
// The most iterations a synthetic job counts: exactly representable as a double.
inline constexpr double kMaxSyntheticIterations = 9.0e15;

struct SyntheticOptions {
  std::size_t jobs = 1000;
  std::size_t users = 4;
  double arrival_rate = 0.01;     // jobs per second
  double median_duration = 1800;  // seconds on the job's fastest device
  double pareto_shape = 1.5;      // smaller is heavier-tailed; > 0
  double max_duration_factor = 50;
  double estimate_error = 0.2;  // in [0, 1)
  bool multi_device = false;    // draw scale factors 1/2/4/8 (see above)
  std::uint64_t seed = 1;
};

// What errors call the options and the table: SyntheticOptions' field names by default; a
// command passes the names its user typed ("--rate", "--gavel t.json").
struct SyntheticOptionNames {
  std::string jobs = "jobs";
  std::string users = "users";
  std::string arrival_rate = "arrival_rate";
  std::string median_duration = "median_duration";
  std::string table = "the throughput table";
};

// Errors name the first out-of-range option. The trace holds what a trace file may state
// (sim/trace_file.h): every arrival and time, estimates included, at most kMaxInputSeconds,
// iteration counts at most kMaxSyntheticIterations; a trace past them is an error naming the
// option that put it there (arrivals: arrival_rate; times on a job's fastest device:
// median_duration; times on its other devices and iteration counts: the table's throughputs).
// Users are named user0 .. user<U-1>, jobs job0 ...
Expected<Trace> generate_synthetic_trace(const ThroughputTable& table,
                                         const SyntheticOptions& options,
                                         const SyntheticOptionNames& names = {});

}  // namespace allox
