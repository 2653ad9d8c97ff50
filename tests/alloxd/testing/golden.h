// Upstream's golden extender messages (data/kube-extender/) for the extender tests.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace allox::extender::testing {

enum class GoldenKind {
  kExtenderArgs,
  kFilterResult,
  kHostPriorities,
  kBindingArgs,
  kBindingResult,
  kPreemptionArgs,
  kPreemptionResult
};
const char* golden_kind_name(GoldenKind kind);

struct GoldenMessage {
  std::string source;  // file, or file:line for .jsonl
  GoldenKind kind;
  std::string body;
};

// Every message in data/kube-extender/, classified by file name (or, in .jsonl files, by the
// Go fields present). A file the table does not know is returned with an empty kind list entry
// in `unknown_files` so a test can fail on it.
std::vector<GoldenMessage> golden_messages(std::vector<std::string>* unknown_files = nullptr);

// Field-by-field comparison: every field of `want` must be present in `got` with the same value
// (recursively); fields only in `got` must be null (upstream's older structs lack them). Returns
// the first difference, or "" when they agree.
std::string field_difference(const nlohmann::json& want, const nlohmann::json& got,
                             const std::string& where = "$");

}  // namespace allox::extender::testing
