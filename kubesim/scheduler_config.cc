#include "kubesim/scheduler_config.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

namespace allox::emulator {

namespace {

// "5s", "500ms", "1m30s" (Go durations, the subset configs use).
Expected<std::chrono::milliseconds> parse_duration(const std::string& text) {
  double total_ms = 0;
  std::size_t i = 0;
  if (text.empty()) return Error{"empty duration"};
  while (i < text.size()) {
    std::size_t used = 0;
    double value;
    try {
      value = std::stod(text.substr(i), &used);
    } catch (const std::exception&) {
      return Error{"\"" + text + "\" is not a duration such as 5s or 500ms"};
    }
    i += used;
    std::string unit;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) unit += text[i++];
    if (unit == "ms")
      total_ms += value;
    else if (unit == "s")
      total_ms += value * 1000;
    else if (unit == "m")
      total_ms += value * 60000;
    else if (unit == "h")
      total_ms += value * 3600000;
    else
      return Error{"\"" + text + "\" is not a duration such as 5s or 500ms"};
  }
  return std::chrono::milliseconds(static_cast<long>(total_ms));
}

}  // namespace

Expected<SchedulerConfiguration> parse_scheduler_configuration(const std::string& text,
                                                               const std::string& source) {
  SchedulerConfiguration config;
  try {
    YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) return Error{source + ": not a KubeSchedulerConfiguration"};
    if (root["kind"] && root["kind"].as<std::string>() != "KubeSchedulerConfiguration") {
      return Error{source + ": kind is " + root["kind"].as<std::string>() +
                   ", want KubeSchedulerConfiguration"};
    }
    if (root["profiles"]) {
      config.scheduler_names.clear();
      for (const YAML::Node& profile : root["profiles"]) {
        config.scheduler_names.push_back(profile["schedulerName"]
                                             ? profile["schedulerName"].as<std::string>()
                                             : "default-scheduler");
      }
    }
    if (root["percentageOfNodesToScore"]) {
      config.percentage_of_nodes_to_score = root["percentageOfNodesToScore"].as<int>();
    }
    if (root["podInitialBackoffSeconds"]) {
      config.pod_initial_backoff_seconds = root["podInitialBackoffSeconds"].as<long>();
    }
    if (root["podMaxBackoffSeconds"]) {
      config.pod_max_backoff_seconds = root["podMaxBackoffSeconds"].as<long>();
    }
    // kube-scheduler's own validation (ValidateKubeSchedulerConfiguration).
    if (config.pod_initial_backoff_seconds <= 0) {
      return Error{source + ": podInitialBackoffSeconds: must be greater than 0"};
    }
    if (config.pod_max_backoff_seconds < config.pod_initial_backoff_seconds) {
      return Error{source +
                   ": podMaxBackoffSeconds: must be greater than or equal to "
                   "podInitialBackoffSeconds"};
    }
    int index = 0;
    for (const YAML::Node& e : root["extenders"]) {
      const std::string where = source + ": extenders[" + std::to_string(index++) + "]";
      ExtenderStanza stanza;
      auto text_of = [&](const char* key) {
        return e[key] ? e[key].as<std::string>() : std::string();
      };
      stanza.url_prefix = text_of("urlPrefix");
      if (stanza.url_prefix.empty()) return Error{where + ".urlPrefix: required"};
      stanza.filter_verb = text_of("filterVerb");
      stanza.prioritize_verb = text_of("prioritizeVerb");
      stanza.bind_verb = text_of("bindVerb");
      stanza.preempt_verb = text_of("preemptVerb");
      if (e["weight"]) stanza.weight = e["weight"].as<long>();
      if (!stanza.prioritize_verb.empty() && stanza.weight <= 0) {
        return Error{where + ".weight: must be positive when prioritizeVerb is set"};
      }
      if (e["nodeCacheCapable"]) stanza.node_cache_capable = e["nodeCacheCapable"].as<bool>();
      if (e["ignorable"]) stanza.ignorable = e["ignorable"].as<bool>();
      if (e["httpTimeout"]) {
        auto timeout = parse_duration(e["httpTimeout"].as<std::string>());
        if (!timeout) return Error{where + ".httpTimeout: " + timeout.message()};
        stanza.http_timeout = *timeout;
      }
      for (const YAML::Node& r : e["managedResources"]) {
        if (!r["name"]) return Error{where + ".managedResources: an entry has no name"};
        stanza.managed_resources.insert(r["name"].as<std::string>());
        if (r["ignoredByScheduler"] && r["ignoredByScheduler"].as<bool>()) {
          stanza.ignored_by_scheduler.insert(r["name"].as<std::string>());
        }
      }
      config.extenders.push_back(std::move(stanza));
    }
  } catch (const YAML::Exception& e) {
    return Error{source + ": " + e.what()};
  }
  return config;
}

Expected<SchedulerConfiguration> load_scheduler_configuration(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{path + ": cannot open"};
  std::stringstream text;
  text << in.rdbuf();
  return parse_scheduler_configuration(text.str(), path);
}

}  // namespace allox::emulator
