// The simulator's trace readers (sim/trace_file.h, sim/allox_trace.h) on arbitrary text, and the
// simulator on what they accept. The first byte picks the reader ('c' CSV, 'a' the AlloX paper's
// format, anything else YAML/JSON); the rest is the file. Nothing may throw or crash. An
// accepted trace has jobs, passes validate_trace() and is sorted by arrival; a CSV trace written
// back and read again gives the same jobs. A small accepted trace is simulated with allox
// (α = 1) on a fixed cluster: the run ends, and every job that ran finished after it arrived.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "core/model.h"
#include "sim/allox_trace.h"
#include "sim/experiment.h"
#include "sim/trace.h"
#include "sim/trace_file.h"

namespace {

using namespace allox;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_trace: accepted trace breaks: %s\n", what);
  std::abort();
}

Expected<Trace> read(char reader, const std::string& text) {
  if (reader == 'c') return parse_csv_trace(text, "fuzz.csv");
  if (reader == 'a') {
    std::istringstream in(text);
    return parse_allox_trace(in, "fuzz.txt");
  }
  return parse_yaml_trace(text, "fuzz.yaml");
}

void check_csv_round_trip(const Trace& trace) {
  std::ostringstream out;
  write_csv_trace(trace, out);
  auto again = parse_csv_trace(out.str(), "again.csv");
  if (!again) fail("the written CSV does not read back");
  if (again->jobs.size() != trace.jobs.size()) fail("the CSV round trip changed the job count");
  for (std::size_t i = 0; i < trace.jobs.size(); ++i) {
    const TraceJob& a = trace.jobs[i];
    const TraceJob& b = again->jobs[i];
    if (a.job.id != b.job.id || a.job.user != b.job.user || a.job.arrival != b.job.arrival ||
        a.job.time != b.job.time || a.true_time != b.true_time || a.job.units != b.job.units) {
      fail("the CSV round trip changed a job");
    }
  }
}

void simulate_small(const Trace& trace) {
  const Cluster cluster = make_uniform_cluster({{"cpu", 2}, {"gpu", 2}}, {});
  for (const TraceJob& job : trace.jobs) {
    if (job.job.units != 1) return;
    for (const auto& [device, seconds] : job.job.time) {
      if (!cluster.has_device(device)) return;
    }
  }
  PolicyOptions policy;
  policy.alpha = 1;
  SimOptions sim;
  sim.estimates = EstimateMode::kTrace;
  auto run = run_policy(trace, cluster, {.policy = "allox", .alpha = 1, .label = "allox"},
                        policy, sim);
  if (!run) {
    if (run.message().empty()) fail("a refused run without a message");
    return;
  }
  for (const SimJobRecord& record : run->result.jobs) {
    if (record.finish && *record.finish < record.arrival) fail("a job finished before arriving");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const char reader = static_cast<char>(data[0]);
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto trace = read(reader, text);
  if (!trace) {
    if (trace.message().empty()) fail("an error without a message");
    return 0;
  }
  if (!validate_trace(*trace).ok()) fail("an accepted trace fails validate_trace");
  if (!std::is_sorted(trace->jobs.begin(), trace->jobs.end(),
                      [](const TraceJob& a, const TraceJob& b) {
                        return a.job.arrival < b.job.arrival;
                      })) {
    fail("an accepted trace is not sorted by arrival");
  }
  check_csv_round_trip(*trace);
  if (trace->jobs.size() <= 12) simulate_small(*trace);
  return 0;
}
