#include "tests/alloxd/testing/golden.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

namespace allox::extender::testing {

using nlohmann::json;

const char* golden_kind_name(GoldenKind kind) {
  switch (kind) {
    case GoldenKind::kExtenderArgs:
      return "ExtenderArgs";
    case GoldenKind::kFilterResult:
      return "ExtenderFilterResult";
    case GoldenKind::kHostPriorities:
      return "HostPriorityList";
    case GoldenKind::kBindingArgs:
      return "ExtenderBindingArgs";
    case GoldenKind::kBindingResult:
      return "ExtenderBindingResult";
    case GoldenKind::kPreemptionArgs:
      return "ExtenderPreemptionArgs";
    case GoldenKind::kPreemptionResult:
      return "ExtenderPreemptionResult";
  }
  return "?";
}

namespace {

// A .jsonl line's type, from the Go fields it carries.
GoldenKind classify(const json& value) {
  if (value.is_array() || value.contains("Host")) return GoldenKind::kHostPriorities;
  if (value.contains("PodName")) return GoldenKind::kBindingArgs;
  if (value.contains("Pod")) {
    return value.contains("NodeNameToVictims") || value.contains("NodeNameToMetaVictims")
               ? GoldenKind::kPreemptionArgs
               : GoldenKind::kExtenderArgs;
  }
  if (value.contains("NodeNameToMetaVictims")) return GoldenKind::kPreemptionResult;
  if (value.contains("Nodes") || value.contains("NodeNames") || value.contains("FailedNodes")) {
    return GoldenKind::kFilterResult;
  }
  return GoldenKind::kBindingResult;
}

}  // namespace

std::vector<GoldenMessage> golden_messages(std::vector<std::string>* unknown_files) {
  static const std::map<std::string, GoldenKind> kFiles = {
      {"bind_args.json", GoldenKind::kBindingArgs},
      {"bind_result_ok.json", GoldenKind::kBindingResult},
      {"filter_args_nodecache.json", GoldenKind::kExtenderArgs},
      {"filter_result_nodecache.json", GoldenKind::kFilterResult},
      {"preempt_args_nodecache.json", GoldenKind::kPreemptionArgs},
      {"preempt_result.json", GoldenKind::kPreemptionResult},
      {"prioritize_result.json", GoldenKind::kHostPriorities},
  };
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(ALLOX_SOURCE_DIR "/data/kube-extender")) {
    files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<GoldenMessage> out;
  for (const auto& path : files) {
    std::string name = path.filename().string();
    std::ifstream in(path);
    if (path.extension() == ".jsonl") {
      std::string line;
      for (int number = 1; std::getline(in, line); ++number) {
        if (line.empty()) continue;
        out.push_back({name + ":" + std::to_string(number), classify(json::parse(line)), line});
      }
      continue;
    }
    auto kind = kFiles.find(name);
    if (kind == kFiles.end()) {
      if (unknown_files != nullptr && path.extension() == ".json") unknown_files->push_back(name);
      continue;
    }
    std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    out.push_back({name, kind->second, body});
  }
  return out;
}

std::string field_difference(const json& want, const json& got, const std::string& where) {
  if (want.is_object() && got.is_object()) {
    for (const auto& [key, value] : want.items()) {
      if (!got.contains(key)) return where + "." + key + ": missing";
      std::string diff = field_difference(value, got[key], where + "." + key);
      if (!diff.empty()) return diff;
    }
    for (const auto& [key, value] : got.items()) {
      if (!want.contains(key) && !value.is_null()) {
        return where + "." + key + ": unexpected " + value.dump();
      }
    }
    return "";
  }
  if (want.is_array() && got.is_array()) {
    if (want.size() != got.size()) {
      return where + ": " + std::to_string(got.size()) + " elements, want " +
             std::to_string(want.size());
    }
    for (std::size_t i = 0; i < want.size(); ++i) {
      std::string diff = field_difference(want[i], got[i], where + "[" + std::to_string(i) + "]");
      if (!diff.empty()) return diff;
    }
    return "";
  }
  if (want != got) return where + ": got " + got.dump() + ", want " + want.dump();
  return "";
}

}  // namespace allox::extender::testing
