// What allox reads from a batch/v1 Job and from the pods it owns: the Job is the unit of work
// (docs/design.md, "Jobs").
//
//   identity  a pod whose controller ownerReference is a batch/v1 Job belongs to the allox job
//             the Job names: its `allox.io/job` annotation (the Job's metadata first, then its
//             pod template's), else the Job's name; always in the Job's namespace (pod.h's rules
//             for job ids apply). Sibling Jobs sharing `allox.io/job` are device variants of one
//             allox job: the variant is the Job, not its pod (a pod the Job controller re-creates
//             is the same variant).
//   shape     a Job of one pod (parallelism 1, completions 1, either completion mode) is a job
//             of one pod; an Indexed Job with completions == parallelism = N > 1 is a gang of N
//             pods (JobVariant::gang). Any other shape is refused, naming the field: a
//             NonIndexed Job with parallelism or completions above 1 (a work queue or a
//             fixed-count Job: its pods are interchangeable, none is a variant or a gang
//             member), an Indexed Job whose completions differ from its parallelism (its indexes
//             would run in waves: not one gang, not one job).
//   state     finished: its Complete or Failed condition is True; failures: status.failed, and
//             spec.backoffLimit, so a failed pod that the Job controller will replace is told
//             from the last one.
//
// Pure functions over values: no lock, no I/O. Errors name the field.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/result.h"

namespace allox::extender {

// A pod's controlling Job, from its ownerReferences.
struct JobOwner {
  std::string namespace_name, name, uid;
  std::string key() const { return namespace_name + "/" + name; }
};
// The pod's controller ownerReference when it is a batch/v1 Job; std::nullopt otherwise.
std::optional<JobOwner> job_owner(const nlohmann::json& pod);

struct JobFacts {
  JobOwner ref;            // the Job itself
  std::string job_id;      // the allox job it is a variant of ("<namespace>/<name>")
  int parallelism = 1;
  std::optional<int> completions;
  bool indexed = false;
  int backoff_limit = 6;
  int failed = 0;          // status.failed
  bool complete = false;   // condition Complete=True
  bool failed_for_good = false;  // condition Failed=True
  bool finished() const { return complete || failed_for_good; }
};
// Reads a v1 Job; errors name the field (metadata.name, allox.io/job's job id).
Expected<JobFacts> read_job(const nlohmann::json& job);

// The gang size the Job's shape makes (1: a job of one pod), or the refusal naming the field.
Expected<int> gang_of(const JobFacts& job);

}  // namespace allox::extender
