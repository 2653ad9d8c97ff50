// The parts of a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) the emulator
// honours, read from the same YAML an operator applies (manifests/scheduler-config.yaml):
//   profiles[].schedulerName      pods of these schedulers are scheduled; extenders apply to
//                                 every profile, as in kube-scheduler
//   percentageOfNodesToScore      0/absent: kube-scheduler's adaptive default (50 - nodes/125,
//                                 at least 5%, at least 100 nodes); 100: every node
//   podInitialBackoffSeconds      a failed pod's first back-off (default 1), doubling per
//   podMaxBackoffSeconds          attempt up to the max (default 10); initial > 0, max >= initial
//   extenders[]                   urlPrefix, filterVerb, prioritizeVerb, bindVerb, preemptVerb,
//                                 weight, nodeCacheCapable, ignorable, httpTimeout,
//                                 managedResources[{name, ignoredByScheduler}]
// Unknown keys are ignored (the real file has many the emulator does not model); a field of the
// wrong type is an error naming it. Thread-safe: plain values.
#pragma once

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "core/result.h"

namespace allox::emulator {

struct ExtenderStanza {
  std::string url_prefix;
  std::string filter_verb, prioritize_verb, bind_verb, preempt_verb;  // "" when not set
  long weight = 1;
  bool node_cache_capable = false;
  bool ignorable = false;
  std::chrono::milliseconds http_timeout{30000};
  // Pods requesting none of these are not sent (empty: every pod).
  std::set<std::string> managed_resources;
  // Managed resources the scheduler's own NodeResourcesFit does not check.
  std::set<std::string> ignored_by_scheduler;
};

struct SchedulerConfiguration {
  std::vector<std::string> scheduler_names = {"default-scheduler"};
  int percentage_of_nodes_to_score = 0;
  long pod_initial_backoff_seconds = 1;
  long pod_max_backoff_seconds = 10;
  std::vector<ExtenderStanza> extenders;
};

Expected<SchedulerConfiguration> load_scheduler_configuration(const std::string& path);
Expected<SchedulerConfiguration> parse_scheduler_configuration(const std::string& yaml,
                                                               const std::string& source);

}  // namespace allox::emulator
