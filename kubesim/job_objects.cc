#include "kubesim/job_objects.h"

#include "kube/object_fields.h"

namespace allox::emulator {

using kube::member;
using kube::string_member;
using nlohmann::json;

namespace {

ApiError job_invalid(const std::string& name, const std::string& field, const std::string& why) {
  return invalid("Job", name, field, why, "batch");
}

}  // namespace

ApiResult<json> prepare_new_job(json job) {
  const std::string name = string_member(member(job, "metadata"), "name");
  if (!job.contains("spec") || !job["spec"].is_object()) {
    return job_invalid(name, "spec.template.spec.containers", "Required value");
  }
  json& spec = job["spec"];
  const json& pod_spec = member(member(spec, "template"), "spec");
  const json& containers = member(pod_spec, "containers");
  if (!containers.is_array() || containers.empty()) {
    return job_invalid(name, "spec.template.spec.containers", "Required value");
  }
  const std::string restart = string_member(pod_spec, "restartPolicy");
  if (restart != "OnFailure" && restart != "Never") {
    return job_invalid(name, "spec.template.spec.restartPolicy",
                       restart.empty() ? "Required value: valid values: \"OnFailure\", \"Never\""
                                       : "Unsupported value: \"" + restart +
                                             "\": supported values: \"OnFailure\", \"Never\"");
  }
  for (const char* field : {"parallelism", "completions", "backoffLimit"}) {
    const json& value = member(spec, field);
    if (value.is_null()) continue;
    if (!value.is_number_integer()) {
      return job_invalid(name, std::string("spec.") + field,
                         "Invalid value: " + value.dump() + ": must be an integer");
    }
    if (value.get<long long>() < 0) {
      return job_invalid(name, std::string("spec.") + field,
                         "Invalid value: " + value.dump() + ": must be greater than or equal to 0");
    }
  }
  if (member(spec, "completionMode").is_null()) spec["completionMode"] = "NonIndexed";
  const std::string mode = string_member(spec, "completionMode");
  if (mode != "NonIndexed" && mode != "Indexed") {
    return job_invalid(name, "spec.completionMode",
                       "Unsupported value: " + member(spec, "completionMode").dump() +
                           ": supported values: \"NonIndexed\", \"Indexed\"");
  }
  if (mode == "Indexed" && member(spec, "completions").is_null()) {
    return job_invalid(name, "spec.completions", "Required value: when completion mode is Indexed");
  }
  // SetDefaults_Job: both unset is a Job of one pod; parallelism alone is a work queue.
  if (member(spec, "completions").is_null() && member(spec, "parallelism").is_null()) {
    spec["completions"] = 1;
    spec["parallelism"] = 1;
  }
  if (member(spec, "parallelism").is_null()) spec["parallelism"] = 1;
  if (member(spec, "backoffLimit").is_null()) spec["backoffLimit"] = 6;
  if (member(spec, "suspend").is_null()) spec["suspend"] = false;
  return job;
}

void complete_new_job(json& job) {
  const std::string name = job["metadata"]["name"].get<std::string>();
  const std::string uid = job["metadata"]["uid"].get<std::string>();
  json& spec = job["spec"];
  if (!spec.contains("selector") || !spec["selector"].is_object()) {
    spec["selector"] = {{"matchLabels", {{"batch.kubernetes.io/controller-uid", uid}}}};
  }
  json& labels = spec["template"]["metadata"]["labels"];
  if (!labels.is_object()) labels = json::object();
  labels["batch.kubernetes.io/controller-uid"] = uid;
  labels["batch.kubernetes.io/job-name"] = name;
  labels["controller-uid"] = uid;
  labels["job-name"] = name;
  job["status"] = json::object();
}

std::optional<ApiError> job_update_error(const json& old, const json& updated) {
  const std::string name = string_member(member(old, "metadata"), "name");
  const json& before = member(old, "spec");
  const json& after = member(updated, "spec");
  for (const char* field : {"template", "selector", "completionMode"}) {
    if (member(before, field) != member(after, field)) {
      return job_invalid(name, std::string("spec.") + field,
                         "Invalid value: " + member(after, field).dump() + ": field is immutable");
    }
  }
  if (member(before, "completions") != member(after, "completions")) {
    const bool elastic = string_member(before, "completionMode") == "Indexed" &&
                         member(after, "completions") == member(after, "parallelism");
    if (!elastic) {
      return job_invalid(
          name, "spec.completions",
          "Invalid value: " + member(after, "completions").dump() + ": field is immutable");
    }
  }
  const json& parallelism = member(after, "parallelism");
  if (!parallelism.is_null() &&
      (!parallelism.is_number_integer() || parallelism.get<long long>() < 0)) {
    return job_invalid(
        name, "spec.parallelism",
        "Invalid value: " + parallelism.dump() + ": must be greater than or equal to 0");
  }
  return std::nullopt;
}

ApiResult<Propagation> propagation_of(const json& options, bool is_job) {
  const json& policy = member(options, "propagationPolicy");
  if (policy.is_string()) {
    const std::string value = policy.get<std::string>();
    if (value == "Orphan") return Propagation::kOrphan;
    if (value == "Background") return Propagation::kBackground;
    if (value == "Foreground") return Propagation::kForeground;
    ApiError error = invalid("DeleteOptions", "", "propagationPolicy",
                             "Unsupported value: \"" + value +
                                 "\": supported values: \"Foreground\", \"Background\", \"Orphan\"",
                             "meta.k8s.io");
    return error;
  }
  const json& orphan = member(options, "orphanDependents");
  if (orphan.is_boolean())
    return orphan.get<bool>() ? Propagation::kOrphan : Propagation::kBackground;
  return is_job ? Propagation::kOrphan : Propagation::kBackground;
}

namespace {

const json* controller_ref(const json& object, const std::string& kind) {
  const json& refs = member(member(object, "metadata"), "ownerReferences");
  if (!refs.is_array()) return nullptr;
  for (const json& ref : refs) {
    if (member(ref, "controller") == json(true) &&
        (kind.empty() || string_member(ref, "kind") == kind)) {
      return &ref;
    }
  }
  return nullptr;
}

}  // namespace

bool controlled_by(const json& object, const std::string& owner_uid) {
  const json* ref = controller_ref(object, "");
  return ref != nullptr && string_member(*ref, "uid") == owner_uid;
}

std::string controller_uid(const json& object, const std::string& kind) {
  const json* ref = controller_ref(object, kind);
  return ref == nullptr ? "" : string_member(*ref, "uid");
}

std::string controller_name(const json& object, const std::string& kind) {
  const json* ref = controller_ref(object, kind);
  return ref == nullptr ? "" : string_member(*ref, "name");
}

}  // namespace allox::emulator
