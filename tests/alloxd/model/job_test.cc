// alloxd/model/job.h: a pod's Job from its ownerReferences, the allox job a Job names, and the
// shapes allox runs (one pod, or an Indexed gang) or refuses, naming the field.
#include "alloxd/model/job.h"

#include <gtest/gtest.h>

namespace allox::extender {
namespace {

using nlohmann::json;

json owned_pod(json owner) {
  return {{"metadata",
           {{"name", "train-gpu-x7k2p"},
            {"namespace", "lab"},
            {"ownerReferences", json::array({std::move(owner)})}}}};
}

json batch_job(json spec, json annotations = json::object(), json template_annotations = json::object()) {
  spec["template"]["metadata"]["annotations"] = std::move(template_annotations);
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata",
           {{"name", "train-gpu"}, {"namespace", "lab"}, {"uid", "u-1"},
            {"annotations", std::move(annotations)}}},
          {"spec", std::move(spec)}};
}

TEST(JobModelTest, AJobOwnsAPodThroughItsControllerReference) {
  json controller = {{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"name", "train-gpu"},
                     {"uid", "u-1"}, {"controller", true}, {"blockOwnerDeletion", true}};
  auto owner = job_owner(owned_pod(controller));
  ASSERT_TRUE(owner.has_value());
  EXPECT_EQ("lab/train-gpu", owner->key());
  EXPECT_EQ("u-1", owner->uid);
  // Not the controller, another kind, or another API group: not a Job's pod.
  json not_controller = controller;
  not_controller["controller"] = false;
  EXPECT_FALSE(job_owner(owned_pod(not_controller)).has_value());
  json replica_set = controller;
  replica_set["kind"] = "ReplicaSet";
  replica_set["apiVersion"] = "apps/v1";
  EXPECT_FALSE(job_owner(owned_pod(replica_set)).has_value());
  json other_group = controller;
  other_group["apiVersion"] = "example.com/v1";
  EXPECT_FALSE(job_owner(owned_pod(other_group)).has_value());
  EXPECT_FALSE(job_owner(json{{"metadata", {{"name", "bare"}}}}).has_value());
}

TEST(JobModelTest, TheJobNamesItsAlloxJobMetadataFirstThenTemplateThenName) {
  const json spec = {{"parallelism", 1}, {"completions", 1}};
  struct Case {
    json metadata, in_template;
    std::string job_id;
  } cases[] = {
      {{{"allox.io/job", "train"}}, {{"allox.io/job", "other"}}, "lab/train"},
      {json::object(), {{"allox.io/job", "train"}}, "lab/train"},
      {json::object(), json::object(), "lab/train-gpu"},
      {{{"allox.io/job", "lab/train"}}, json::object(), "lab/train"},
  };
  for (const Case& c : cases) {
    auto facts = read_job(batch_job(spec, c.metadata, c.in_template));
    ASSERT_TRUE(facts.ok()) << facts.message();
    EXPECT_EQ(c.job_id, facts->job_id) << c.metadata.dump() << c.in_template.dump();
    EXPECT_EQ("u-1", facts->ref.uid);
  }
  // Another tenant's namespace in the id is refused, naming the annotation it came from.
  auto crossing = read_job(batch_job(spec, json::object(), {{"allox.io/job", "team-b/train"}}));
  ASSERT_FALSE(crossing.ok());
  EXPECT_NE(std::string::npos,
            crossing.message().find("Job.spec.template.metadata.annotations[allox.io/job]"))
      << crossing.message();
}

TEST(JobModelTest, ShapesAJobOfOnePodAGangOrARefusalNamingTheField) {
  struct Case {
    json spec;
    int gang;              // 0: refused
    std::string field;     // named by the refusal
  } cases[] = {
      {{{"parallelism", 1}, {"completions", 1}}, 1, ""},
      {{{"parallelism", 1}, {"completions", 1}, {"completionMode", "Indexed"}}, 1, ""},
      {{{"parallelism", 4}, {"completions", 4}, {"completionMode", "Indexed"}}, 4, ""},
      {{{"parallelism", 2}, {"completions", 4}, {"completionMode", "Indexed"}}, 0,
       "spec.completions (4) must equal spec.parallelism (2)"},
      {{{"parallelism", 3}}, 0, "spec.completions is unset"},
      {{{"parallelism", 3}, {"completions", 3}}, 0, "spec.completionMode NonIndexed"},
      {{{"parallelism", 1}, {"completions", 5}}, 0, "spec.completions 5"},
  };
  for (const Case& c : cases) {
    auto facts = read_job(batch_job(c.spec));
    ASSERT_TRUE(facts.ok()) << facts.message();
    auto gang = gang_of(*facts);
    if (c.gang > 0) {
      ASSERT_TRUE(gang.ok()) << c.spec.dump() << ": " << gang.message();
      EXPECT_EQ(c.gang, *gang) << c.spec.dump();
    } else {
      ASSERT_FALSE(gang.ok()) << c.spec.dump();
      EXPECT_NE(std::string::npos, gang.message().find(c.field)) << gang.message();
      EXPECT_NE(std::string::npos, gang.message().find("Job lab/train-gpu")) << gang.message();
    }
  }
}

TEST(JobModelTest, StateFromConditionsAndFailures) {
  json job = batch_job({{"parallelism", 1}, {"completions", 1}, {"backoffLimit", 2}});
  job["status"] = {{"failed", 1},
                   {"conditions", json::array({{{"type", "Complete"}, {"status", "False"}}})}};
  auto facts = read_job(job);
  ASSERT_TRUE(facts.ok());
  EXPECT_EQ(2, facts->backoff_limit);
  EXPECT_EQ(1, facts->failed);
  EXPECT_FALSE(facts->finished());
  job["status"]["conditions"] = json::array({{{"type", "Failed"}, {"status", "True"}}});
  EXPECT_TRUE(read_job(job)->failed_for_good);
  EXPECT_TRUE(read_job(job)->finished());
}

}  // namespace
}  // namespace allox::extender
