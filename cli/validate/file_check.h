// allox validate's checks, one input's text at a time, so a file is read once (a pipe gives its
// text only once) and any text can be checked without a file (the fuzz target does).
//
// Kinds: a cluster (top-level machines or pools), a jobs file (jobs or users), a trace (jobs
// with estimates; CSV; the AlloX paper's .txt format) or an alloxd config (listen, nodes,
// apiserver). The kind comes from `forced` ("cluster", "jobs", "trace", "alloxd"), else the
// path's extension (.txt, .csv), else the text: YAML's top-level keys, then the opening lines
// of the text formats.
//
// A file of users without a jobs key is valid (it is the weights file `allox report --jobs`
// reads), and its summary says that the planning commands need jobs; `jobs: []` is an error.
//
// Errors: values naming the file, the line and the field; no input throws or crashes.
// Thread-safe: pure functions over their arguments.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "core/workload_file.h"
#include "sim/trace.h"

namespace allox::cli {

enum class FileKind { kCluster, kJobs, kTrace, kAlloxTrace, kCsvTrace, kAlloxdConfig };

// What the valid files of one run hold for the cross-check of jobs against a cluster.
struct Checked {
  std::optional<Cluster> cluster;                           // the last valid cluster
  std::vector<std::pair<std::string, Workload>> workloads;  // (path, jobs) of each jobs file
  std::vector<std::pair<std::string, Trace>> traces;        // (path, trace) of each trace
};

Expected<FileKind> detect_kind(const std::string& path, const std::string& text,
                               const std::string& forced);

// Checks `text` as the kind it is: the one-line summary of a valid file ("cluster: 4 machines,
// 2 device types"), or the error. A valid cluster or jobs file is kept in `checked`.
Expected<std::string> check_text(const std::string& path, const std::string& text,
                                 const std::string& forced, Checked& checked);

// With a cluster among the valid files: every jobs file's jobs checked against it (each job
// has a device type the cluster has, on a node large enough), and every trace's (each job can
// run on some machine: sim/trace.h check_trace_runnable, the check `simulate` makes); one error
// per file that is not.
std::vector<Error> check_jobs_runnable(const Checked& checked);

}  // namespace allox::cli
