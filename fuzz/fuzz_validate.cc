// allox validate's checks (cli/validate/file_check.h) on arbitrary text: telling a file's kind
// from its name, --kind and its content, then checking it as that kind. Nothing may throw or
// crash, and every answer says something: an error with a message, or a summary line. An
// accepted cluster or jobs file is kept for the cross-check, and the cross-check of jobs against
// a cluster (the fuzzed file against a fixed one of the other kind) never throws either.
//
// An input is two bytes and the file: the first picks the file's name ('y' fuzz.yaml, 't'
// fuzz.txt, 'c' fuzz.csv, anything else a name without an extension, as a pipe has), the second
// --kind ('C' cluster, 'J' jobs, 'T' trace, 'A' alloxd, anything else none).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/validate/file_check.h"

namespace {

using namespace allox;
using namespace allox::cli;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_validate: %s\n", what);
  std::abort();
}

std::string name_for(char c) {
  switch (c) {
    case 'y':
      return "fuzz.yaml";
    case 't':
      return "fuzz.txt";
    case 'c':
      return "fuzz.csv";
    default:
      return "/dev/fd/63";
  }
}

std::string kind_for(char c) {
  switch (c) {
    case 'C':
      return "cluster";
    case 'J':
      return "jobs";
    case 'T':
      return "trace";
    case 'A':
      return "alloxd";
    default:
      return "";
  }
}

constexpr const char* kCluster =
    "machines:\n  - {name: g0, device: gpu}\n  - {name: c0, device: cpu}\n";
constexpr const char* kJobs = "users: [{name: a}]\njobs:\n  - {id: j1, user: a, time: {gpu: 60}}\n";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::string path = name_for(static_cast<char>(data[0]));
  const std::string forced = kind_for(static_cast<char>(data[1]));
  const std::string text(reinterpret_cast<const char*>(data) + 2, size - 2);
  Checked checked;
  auto summary = check_text(path, text, forced, checked);
  if (!summary && summary.message().empty()) fail("an error without a message");
  if (summary && summary->empty()) fail("an accepted file without a summary");
  for (const auto& [source, workload] : checked.workloads) {
    if (workload.jobs.empty()) fail("a jobs file kept for the cross-check without a job");
  }
  // The other kind, fixed, so the cross-check runs on whatever the fuzzed file gave.
  if (checked.cluster && checked.workloads.empty()) {
    if (!check_text("jobs.yaml", kJobs, "", checked)) fail("the fixed jobs file refused");
  } else if (!checked.workloads.empty() && !checked.cluster) {
    if (!check_text("cluster.yaml", kCluster, "", checked)) fail("the fixed cluster refused");
  }
  for (const Error& error : check_jobs_runnable(checked)) {
    if (error.message.empty()) fail("a cross-check error without a message");
  }
  return 0;
}
