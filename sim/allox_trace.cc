#include "sim/allox_trace.h"

#include <cmath>
#include <sstream>
#include <vector>

#include "core/csv.h"
#include "core/input_file.h"
#include "core/utf8.h"

namespace allox {
namespace {

std::vector<std::string> split_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

bool to_double(const std::string& text, double& out) {
  const std::optional<double> value = parse_decimal(text);
  if (value) out = *value;
  return value.has_value();
}

// Reads the next non-blank line; false at end of input.
bool next_line(std::istream& in, std::string& line, int& line_no) {
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") != std::string::npos) return true;
  }
  return false;
}

}  // namespace

Expected<Trace> parse_allox_trace(std::istream& in, const std::string& source_name,
                                  const AlloxTraceOptions& options) {
  Trace trace;
  std::string line;
  int line_no = 0;
  auto fail = [&](const std::string& what) {
    return Error{source_name + ":" + std::to_string(line_no) + ": " + what};
  };
  while (next_line(in, line, line_no)) {
    if (line.rfind("#", 0) != 0) return fail("expected '# <index>' starting a job");
    if (!next_line(in, line, line_no)) return fail("job header missing after '#' line");
    const std::vector<std::string> header = split_words(line);
    double arrival = 0;
    if (header.size() != 5) {
      return fail("expected '1 <job id> 1 <arrival> <user>', got " + std::to_string(header.size()) +
                  " fields");
    }
    if (!is_utf8_text(header[1]) || !is_utf8_text(header[4])) {
      return fail("job id and user must be UTF-8 text without control characters");
    }
    if (!to_double(header[3], arrival) || arrival < 0 || arrival > kMaxInputSeconds) {
      return fail("arrival must be a number of seconds from 0 to " +
                  csv_number(kMaxInputSeconds) + ", got '" + header[3] + "'");
    }

    if (!next_line(in, line, line_no)) return fail("stage line missing");
    const std::vector<std::string> stage = split_words(line);
    if (stage.size() != 11 || stage[0] != "stage") {
      return fail("expected 'stage' followed by 10 numbers");
    }
    double v[10];
    for (int i = 0; i < 10; ++i) {
      if (!to_double(stage[i + 1], v[i])) return fail("bad number '" + stage[i + 1] + "'");
    }
    const double cpu_time = v[3], gpu_time = v[6], cpu_error = v[8], gpu_error = v[9];
    const std::string most = csv_number(kMaxInputSeconds);
    if (cpu_time <= 0 || gpu_time <= 0 || cpu_time > kMaxInputSeconds ||
        gpu_time > kMaxInputSeconds) {
      return fail("cpu and gpu times must be > 0 and at most " + most + " seconds");
    }
    if (cpu_error <= -1 || gpu_error <= -1) return fail("estimate errors must be > -1");
    if (cpu_time * (1 + cpu_error) > kMaxInputSeconds ||
        gpu_time * (1 + gpu_error) > kMaxInputSeconds) {
      return fail("estimates (time x (1 + error)) must be at most " + most + " seconds");
    }
    if (v[1] < 0 || v[2] < 0 || v[4] < 0 || v[5] < 0) {
      return fail("cores, memory, GPUs and GPU memory must be >= 0");
    }

    if (!next_line(in, line, line_no)) return fail("closing '0' line missing");
    if (split_words(line) != std::vector<std::string>{"0"}) {
      return fail("expected '0' closing the job (jobs with dependencies are not supported)");
    }

    TraceJob tj;
    tj.job.id = header[1];
    tj.job.user = header[4];
    tj.job.arrival = arrival;
    tj.true_time = {{"cpu", cpu_time}, {"gpu", gpu_time}};
    // v[0] is the stage's -1.0 (no parent); a job holds its cores and memory on a CPU node, its
    // GPUs and GPU memory on a GPU.
    tj.job.holds = {{"cpu", {{"cores", v[1]}, {"memory_gb", v[2]}}},
                    {"gpu", {{"gpus", v[4]}, {"gpu_memory_gb", v[5]}}}};
    if (options.exact_estimates) {
      tj.job.time = tj.true_time;
    } else {
      tj.job.time = {{"cpu", cpu_time * (1 + cpu_error)}, {"gpu", gpu_time * (1 + gpu_error)}};
    }
    trace.jobs.push_back(std::move(tj));
  }
  if (trace.jobs.empty()) {
    return Error{source_name +
                 ":1: the trace has no jobs: expected four lines per job, from '# <index>'"};
  }
  add_missing_users(trace);
  sort_by_arrival(trace);
  if (Status s = validate_trace(trace); !s.ok()) return Error{source_name + ": " + s.message()};
  return trace;
}

Expected<Trace> load_allox_trace(const std::string& path, const AlloxTraceOptions& options) {
  auto text = read_input_file(path);  // the input limit, and no wait on a FIFO
  if (!text) return text.error();
  std::istringstream in(std::move(*text));
  return parse_allox_trace(in, path, options);
}

}  // namespace allox
