// allox's own trace formats, YAML and CSV (examples/trace.yaml, examples/trace.csv).
//
// YAML (or JSON) is jobs.yaml (core/workload_file.h) plus an optional per-job `estimate`: the
// times a scheduler believes, while `time` is what execution takes. A device missing from
// `estimate` is estimated exactly.
//
//   users: [{name: alice, weight: 2}]
//   jobs:
//     - {id: j1, user: alice, arrival: 0, time: {cpu: 97, gpu: 49}, estimate: {gpu: 55}}
//
// CSV has a header row and one row per job:
//
//   job,user,arrival,time.cpu,time.gpu,estimate.cpu,estimate.gpu
//   j1,alice,0,97,49,,55
//
// Columns job and time.<device> (one or more) are required; user (default "default"), arrival
// (default 0), units (devices on one node the job needs at once, default 1; with units k,
// time.<device> is the time on k devices) and estimate.<device> are optional; YAML takes the same
// `units` key per job; an empty time cell means the job cannot run on
// that device, an empty estimate cell means "exact". Fields may be double-quoted. Users get
// weight 1. Errors name the file, line and field. A trace without a job is an error (a mistake,
// never a run of nothing). Loaded traces are sorted by arrival and pass validate_trace().
#pragma once

#include <ostream>
#include <string>

#include "core/result.h"
#include "sim/trace.h"

namespace allox {

Expected<Trace> parse_yaml_trace(const std::string& text, const std::string& source);
Expected<Trace> parse_csv_trace(const std::string& text, const std::string& source);
Expected<Trace> load_yaml_trace(const std::string& path);
Expected<Trace> load_csv_trace(const std::string& path);

// Writes the CSV form; parse_csv_trace() reads it back to an equal trace (user weights aside).
void write_csv_trace(const Trace& trace, std::ostream& out);

}  // namespace allox
