#include "alloxd/model/job.h"

#include <algorithm>

#include "alloxd/model/pod.h"
#include "kube/object_fields.h"

namespace allox::extender {

using kube::member;
using kube::string_member;
using nlohmann::json;

namespace {

std::optional<int> whole(const json& object, const char* key) {
  const json& value = member(object, key);
  if (!value.is_number_integer()) return std::nullopt;
  return static_cast<int>(std::clamp<std::int64_t>(value.get<std::int64_t>(), 0, 1 << 30));
}

bool condition_true(const json& job, const char* type) {
  const json& conditions = member(member(job, "status"), "conditions");
  if (!conditions.is_array()) return false;
  for (const json& c : conditions) {
    if (string_member(c, "type") == type && string_member(c, "status") == "True") return true;
  }
  return false;
}

}  // namespace

std::optional<JobOwner> job_owner(const json& pod) {
  const json& meta = member(pod, "metadata");
  const json& refs = member(meta, "ownerReferences");
  if (!refs.is_array()) return std::nullopt;
  for (const json& ref : refs) {
    if (member(ref, "controller") != json(true)) continue;
    if (string_member(ref, "kind") != "Job" || string_member(ref, "apiVersion") != "batch/v1")
      return std::nullopt;
    std::string ns = string_member(meta, "namespace");
    return JobOwner{ns.empty() ? "default" : ns, string_member(ref, "name"),
                    string_member(ref, "uid")};
  }
  return std::nullopt;
}

Expected<JobFacts> read_job(const json& job) {
  const json& meta = member(job, "metadata");
  JobFacts facts;
  facts.ref.name = string_member(meta, "name");
  if (facts.ref.name.empty()) return Error{"Job.metadata.name: required"};
  facts.ref.namespace_name = string_member(meta, "namespace");
  if (facts.ref.namespace_name.empty()) facts.ref.namespace_name = "default";
  facts.ref.uid = string_member(meta, "uid");
  const json& spec = member(job, "spec");
  std::string annotated = string_member(member(meta, "annotations"), "allox.io/job");
  const char* field = "Job.metadata.annotations[allox.io/job]";
  if (annotated.empty()) {
    annotated = string_member(member(member(member(spec, "template"), "metadata"), "annotations"),
                              "allox.io/job");
    field = "Job.spec.template.metadata.annotations[allox.io/job]";
  }
  if (annotated.empty()) {
    annotated = facts.ref.name;
    field = "Job.metadata.name";
  }
  facts.job_id = job_id_in_namespace(facts.ref.namespace_name, annotated);
  if (auto s = check_job_id(facts.job_id); !s) {
    return Error{std::string(field) + ": the job id " + s.message()};
  }
  facts.parallelism = whole(spec, "parallelism").value_or(1);
  facts.completions = whole(spec, "completions");
  facts.indexed = string_member(spec, "completionMode") == "Indexed";
  facts.backoff_limit = whole(spec, "backoffLimit").value_or(6);
  facts.failed = whole(member(job, "status"), "failed").value_or(0);
  facts.complete = condition_true(job, "Complete");
  facts.failed_for_good = condition_true(job, "Failed");
  return facts;
}

Expected<int> gang_of(const JobFacts& job) {
  const std::string name = "Job " + job.ref.key();
  const int completions = job.completions.value_or(-1);
  if (job.parallelism <= 1 && completions == 1) return 1;
  if (job.indexed) {
    if (completions == job.parallelism) return job.parallelism;
    return Error{name + ": spec.completions (" + std::to_string(completions) +
                 ") must equal spec.parallelism (" + std::to_string(job.parallelism) +
                 ") for allox to run an Indexed Job as one gang"};
  }
  if (!job.completions) {
    return Error{name + ": spec.completions is unset (a work queue of " +
                 std::to_string(job.parallelism) +
                 " pods); allox runs a Job of one pod, or an Indexed Job with completions equal "
                 "to parallelism as one gang"};
  }
  return Error{name + ": spec.completionMode NonIndexed with spec.parallelism " +
               std::to_string(job.parallelism) + " and spec.completions " +
               std::to_string(completions) +
               "; allox runs a Job of one pod, or an Indexed Job with completions equal to "
               "parallelism as one gang"};
}

}  // namespace allox::extender
