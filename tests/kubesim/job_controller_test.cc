// batch/v1 Jobs in the emulator: the REST shapes of /apis/batch/v1 (defaults, 404/409/422 with
// causes, list and watch with resourceVersions, the delete propagation policies and batch/v1's
// Orphan default) and kube-controller-manager's Job controller and garbage collector
// (kubesim/job_controller.h): pods made from the template with their labels, owner and
// index, kept at parallelism until completions succeed, failed or deleted pods replaced within
// backoffLimit after the back-off, suspend, and the pods of a Job deleted in Background going.
#include "kubesim/job_controller.h"

#include <gtest/gtest.h>

#include "kubesim/fake_api_server.h"
#include "tests/alloxd/testing/changes.h"
#include "tests/kubesim/http_client.h"

namespace allox::emulator {
namespace {

using nlohmann::json;
using testing::request;

json job(const std::string& name, json spec_extra = json::object()) {
  json spec = {{"template",
                {{"metadata", {{"annotations", {{"allox.io/job", "train"}}}}},
                 {"spec",
                  {{"schedulerName", "allox-scheduler"},
                   {"restartPolicy", "Never"},
                   {"containers", json::array({{{"name", "main"}, {"image", "train:1"}}})}}}}}};
  spec.merge_patch(spec_extra);
  return {{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"metadata", {{"name", name}}},
          {"spec", spec}};
}

class JobsTest : public ::testing::Test {
 protected:
  JobsTest() {
    options_.clock = [this] { return clock_.now(); };
    api_ = std::make_unique<FakeApiServer>(options_);
    changes_.watch(*api_);
  }

  testing::Reply call(const std::string& method, const std::string& target,
                      const json& body = nullptr) {
    return request(api_->url(), method, target, body.is_null() ? "" : body.dump());
  }
  json create(const json& object, const std::string& ns = "lab") {
    auto reply = call("POST", "/apis/batch/v1/namespaces/" + ns + "/jobs", object);
    EXPECT_EQ(201, reply.status) << reply.body;
    return json::parse(reply.body);
  }
  void run_controller() {
    controller_ = std::make_unique<JobController>(api_->objects(), clock_);
    controller_->start();
  }
  std::vector<json> pods_of(const std::string& job_name) {
    std::vector<json> out;
    for (const ObjectPtr& pod : api_->objects().objects(pods_resource())) {
      if (controller_name(*pod, "Job") == job_name) out.push_back(*pod);
    }
    return out;
  }
  std::vector<json> active_pods_of(const std::string& job_name) {
    std::vector<json> out;
    for (json& pod : pods_of(job_name)) {
      std::string phase = pod["status"].value("phase", "");
      if (phase != "Succeeded" && phase != "Failed") out.push_back(std::move(pod));
    }
    return out;
  }
  json stored_job(const std::string& name) {
    auto got = api_->objects().get(jobs_resource(), "lab", name);
    return failed(got) ? json() : *std::get<ObjectPtr>(got);
  }
  bool has_condition(const std::string& name, const std::string& type) {
    json j = stored_job(name);
    if (j.is_null()) return false;
    for (const json& c : j["status"].value("conditions", json::array())) {
      if (c["type"] == type && c["status"] == "True") return true;
    }
    return false;
  }
  // As a kubelet reports the end of a pod's container.
  void end_pod(const json& pod, const std::string& phase) {
    auto patched = api_->objects().patch(pods_resource(), "lab", pod["metadata"]["name"],
                                         PatchType::kMerge,
                                         json{{"status", {{"phase", phase}}}}.dump(), true);
    ASSERT_FALSE(failed(patched));
  }
  bool until(const std::function<bool()>& done) { return changes_.until(done); }

  SimClock clock_{1000};  // the 10 s failure back-off passes in 10 ms
  FakeApiServerOptions options_;
  std::unique_ptr<FakeApiServer> api_;
  extender::testing::Changes changes_;
  std::unique_ptr<JobController> controller_;
};

TEST_F(JobsTest, CreateDefaultsTheSpecAndLabelsTheTemplate) {
  json created = create(job("one"));
  EXPECT_EQ("Job", created["kind"]);
  EXPECT_EQ("batch/v1", created["apiVersion"]);
  const json& spec = created["spec"];
  EXPECT_EQ(1, spec["parallelism"]);
  EXPECT_EQ(1, spec["completions"]);
  EXPECT_EQ(6, spec["backoffLimit"]);
  EXPECT_EQ("NonIndexed", spec["completionMode"]);
  EXPECT_EQ(false, spec["suspend"]);
  const std::string uid = created["metadata"]["uid"];
  EXPECT_EQ(uid, spec["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"]);
  const json& labels = spec["template"]["metadata"]["labels"];
  EXPECT_EQ(uid, labels["controller-uid"]);
  EXPECT_EQ("one", labels["job-name"]);
  EXPECT_EQ("one", labels["batch.kubernetes.io/job-name"]);
  // A work queue: parallelism alone leaves completions unset.
  json queue = create(job("queue", {{"parallelism", 3}}));
  EXPECT_FALSE(queue["spec"].contains("completions"));
  EXPECT_EQ(3, queue["spec"]["parallelism"]);
}

TEST_F(JobsTest, ErrorsHaveKubeApiserversShapes) {
  create(job("one"));
  auto again = call("POST", "/apis/batch/v1/namespaces/lab/jobs", job("one"));
  EXPECT_EQ(409, again.status);
  EXPECT_EQ("AlreadyExists", json::parse(again.body)["reason"]);
  auto missing = call("GET", "/apis/batch/v1/namespaces/lab/jobs/none");
  EXPECT_EQ(404, missing.status);
  EXPECT_EQ("jobs.batch \"none\" not found", json::parse(missing.body)["message"]);
  struct Case {
    json body;
    std::string field, cause;
  };
  json no_restart = job("a");
  no_restart["spec"]["template"]["spec"].erase("restartPolicy");
  json no_containers = job("b");
  no_containers["spec"]["template"]["spec"]["containers"] = json::array();
  const Case cases[] = {
      {no_restart, "spec.template.spec.restartPolicy", "FieldValueRequired"},
      {no_containers, "spec.template.spec.containers", "FieldValueRequired"},
      {job("c", {{"completionMode", "Indexed"}, {"completions", nullptr}}), "spec.completions",
       "FieldValueRequired"},
      {job("d", {{"completionMode", "Sometimes"}}), "spec.completionMode",
       "FieldValueNotSupported"},
      {job("e", {{"parallelism", -1}}), "spec.parallelism", "FieldValueInvalid"},
  };
  for (const Case& c : cases) {
    json body = c.body;
    if (body["spec"].contains("completions") && body["spec"]["completions"].is_null()) {
      body["spec"].erase("completions");
    }
    auto reply = call("POST", "/apis/batch/v1/namespaces/lab/jobs", body);
    ASSERT_EQ(422, reply.status) << c.field;
    json status = json::parse(reply.body);
    EXPECT_EQ("Invalid", status["reason"]) << c.field;
    EXPECT_EQ("batch", status["details"]["group"]) << c.field;
    EXPECT_EQ("Job", status["details"]["kind"]) << c.field;
    ASSERT_EQ(1u, status["details"]["causes"].size()) << c.field;
    EXPECT_EQ(c.field, status["details"]["causes"][0]["field"]) << c.field;
    EXPECT_EQ(c.cause, status["details"]["causes"][0]["reason"]) << c.field;
    EXPECT_NE(std::string::npos, status["message"].get<std::string>().find("Job.batch"));
  }
  // The template is immutable; parallelism is not.
  auto patched = request(api_->url(), "PATCH", "/apis/batch/v1/namespaces/lab/jobs/one",
                         R"({"spec":{"template":{"spec":{"restartPolicy":"OnFailure"}}}})", "",
                         "application/merge-patch+json");
  EXPECT_EQ(422, patched.status) << patched.body;
  EXPECT_NE(std::string::npos, patched.body.find("field is immutable"));
  patched = request(api_->url(), "PATCH", "/apis/batch/v1/namespaces/lab/jobs/one",
                    R"({"spec":{"parallelism":2}})", "", "application/merge-patch+json");
  EXPECT_EQ(200, patched.status) << patched.body;
}

TEST_F(JobsTest, ListAndWatchCarryResourceVersions) {
  json first = create(job("one"));
  auto listed = call("GET", "/apis/batch/v1/namespaces/lab/jobs");
  ASSERT_EQ(200, listed.status);
  json list = json::parse(listed.body);
  EXPECT_EQ("JobList", list["kind"]);
  ASSERT_EQ(1u, list["items"].size());
  const std::string rv = list["metadata"]["resourceVersion"];
  testing::WatchReader watch(api_->url(),
                             "/apis/batch/v1/jobs?watch=1&resourceVersion=" + rv, "");
  create(job("two"));
  auto line = watch.next_line();
  ASSERT_TRUE(line);
  json event = json::parse(*line);
  EXPECT_EQ("ADDED", event["type"]);
  EXPECT_EQ("two", event["object"]["metadata"]["name"]);
  EXPECT_LT(std::stoull(rv), std::stoull(event["object"]["metadata"]["resourceVersion"].get<std::string>()));
}

TEST_F(JobsTest, PodsComeFromTheTemplateThroughAdmissionAndCompleteTheJob) {
  // Pod creates go through admission like any other (the webhook adds its gate there).
  api_->objects().set_admission([](const json& pod) -> ApiResult<json> {
    json admitted = pod;
    admitted["metadata"]["labels"]["admitted"] = "yes";
    return admitted;
  });
  json created = create(job("one"));
  run_controller();
  ASSERT_TRUE(until([&] { return pods_of("one").size() == 1; }));
  json pod = pods_of("one")[0];
  const json& meta = pod["metadata"];
  EXPECT_EQ(0u, meta["name"].get<std::string>().rfind("one-", 0));
  EXPECT_EQ("one-", meta["generateName"]);
  EXPECT_EQ("yes", meta["labels"]["admitted"]);
  EXPECT_EQ("one", meta["labels"]["job-name"]);
  EXPECT_EQ("train", meta["annotations"]["allox.io/job"]);
  const json& owner = meta["ownerReferences"][0];
  EXPECT_EQ("Job", owner["kind"]);
  EXPECT_EQ("batch/v1", owner["apiVersion"]);
  EXPECT_EQ(created["metadata"]["uid"], owner["uid"]);
  EXPECT_EQ(true, owner["controller"]);
  EXPECT_EQ(true, owner["blockOwnerDeletion"]);
  ASSERT_TRUE(until([&] { return stored_job("one")["status"].value("active", 0) == 1; }));
  end_pod(pod, "Succeeded");
  ASSERT_TRUE(until([&] { return has_condition("one", "Complete"); }));
  json done = stored_job("one");
  EXPECT_EQ(1, done["status"]["succeeded"]);
  EXPECT_EQ(0, done["status"]["active"]);
  EXPECT_TRUE(done["status"].contains("completionTime"));
  EXPECT_EQ(1u, pods_of("one").size());  // nothing more was made
}

TEST_F(JobsTest, IndexedJobKeepsParallelismAndReplacesTheMissingIndex) {
  create(job("gang", {{"completionMode", "Indexed"}, {"completions", 3}, {"parallelism", 2}}));
  run_controller();
  ASSERT_TRUE(until([&] { return active_pods_of("gang").size() == 2; }));
  std::map<std::string, json> by_index;
  for (const json& pod : pods_of("gang")) {
    const std::string index =
        pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"];
    EXPECT_EQ(index, pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]);
    EXPECT_EQ(0u, pod["metadata"]["name"].get<std::string>().rfind("gang-" + index + "-", 0));
    EXPECT_EQ("gang-" + index, pod["spec"]["hostname"]);
    by_index[index] = pod;
  }
  ASSERT_EQ((std::vector<std::string>{"0", "1"}),
            (std::vector<std::string>{by_index.begin()->first, by_index.rbegin()->first}));
  // Index 0 succeeds: index 2 is made. Index 1's pod is deleted: index 1 is made again.
  end_pod(by_index["0"], "Succeeded");
  ASSERT_TRUE(until([&] {
    for (const json& pod : active_pods_of("gang")) {
      if (pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == "2")
        return true;
    }
    return false;
  }));
  ASSERT_FALSE(failed(api_->objects().remove(pods_resource(), "lab",
                                             by_index["1"]["metadata"]["name"], nullptr)));
  ASSERT_TRUE(until([&] {
    for (const json& pod : active_pods_of("gang")) {
      if (pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == "1" &&
          pod["metadata"]["uid"] != by_index["1"]["metadata"]["uid"])
        return true;
    }
    return false;
  }));
  EXPECT_EQ(1, stored_job("gang")["status"]["failed"]);  // the deleted pod counts as a failure
  for (const json& pod : active_pods_of("gang")) end_pod(pod, "Succeeded");
  ASSERT_TRUE(until([&] { return has_condition("gang", "Complete"); }));
  EXPECT_EQ("0-2", stored_job("gang")["status"]["completedIndexes"]);
}

TEST_F(JobsTest, FailuresBeyondBackoffLimitFailTheJob) {
  create(job("flaky", {{"backoffLimit", 1}}));
  run_controller();
  ASSERT_TRUE(until([&] { return active_pods_of("flaky").size() == 1; }));
  json first = active_pods_of("flaky")[0];
  end_pod(first, "Failed");
  // Replaced after the back-off: within backoffLimit.
  ASSERT_TRUE(until([&] {
    auto active = active_pods_of("flaky");
    return active.size() == 1 && active[0]["metadata"]["uid"] != first["metadata"]["uid"];
  }));
  end_pod(active_pods_of("flaky")[0], "Failed");
  ASSERT_TRUE(until([&] { return has_condition("flaky", "Failed"); }));
  json failed_job = stored_job("flaky");
  EXPECT_EQ(2, failed_job["status"]["failed"]);
  EXPECT_EQ("BackoffLimitExceeded", failed_job["status"]["conditions"][0]["reason"]);
  EXPECT_EQ(2u, pods_of("flaky").size());  // not replaced again
}

TEST_F(JobsTest, SuspendedJobRunsNothingUntilResumed) {
  create(job("later", {{"suspend", true}}));
  run_controller();
  ASSERT_TRUE(until([&] { return has_condition("later", "Suspended"); }));
  EXPECT_TRUE(pods_of("later").empty());
  auto patched = request(api_->url(), "PATCH", "/apis/batch/v1/namespaces/lab/jobs/later",
                         R"({"spec":{"suspend":false}})", "", "application/merge-patch+json");
  ASSERT_EQ(200, patched.status) << patched.body;
  ASSERT_TRUE(until([&] { return active_pods_of("later").size() == 1; }));
  ASSERT_TRUE(until([&] { return !has_condition("later", "Suspended"); }));
}

TEST_F(JobsTest, DeletePropagation) {
  create(job("bg"));
  create(job("kept"));
  create(job("orphan"));
  run_controller();
  ASSERT_TRUE(until([&] {
    return pods_of("bg").size() == 1 && pods_of("kept").size() == 1 &&
           pods_of("orphan").size() == 1;
  }));
  const std::string kept_pod = pods_of("kept")[0]["metadata"]["name"];
  const std::string orphan_pod = pods_of("orphan")[0]["metadata"]["name"];
  // Background (in the query): the Job goes, then the garbage collector takes its pod.
  auto deleted = call("DELETE", "/apis/batch/v1/namespaces/lab/jobs/bg?propagationPolicy=Background");
  EXPECT_EQ(200, deleted.status) << deleted.body;
  ASSERT_TRUE(until([&] {
    for (const ObjectPtr& pod : api_->objects().objects(pods_resource())) {
      if (pod->at("metadata").at("name").get<std::string>().rfind("bg-", 0) == 0) return false;
    }
    return true;
  }));
  // No policy: batch/v1's default keeps the pod, no longer owned.
  deleted = call("DELETE", "/apis/batch/v1/namespaces/lab/jobs/kept");
  EXPECT_EQ(200, deleted.status);
  auto pod = api_->objects().get(pods_resource(), "lab", kept_pod);
  ASSERT_FALSE(failed(pod));
  EXPECT_FALSE(std::get<ObjectPtr>(pod)->at("metadata").contains("ownerReferences"));
  // Orphan in DeleteOptions, with a uid precondition that does not match: 409, nothing changes.
  json wrong = {{"propagationPolicy", "Orphan"}, {"preconditions", {{"uid", "nope"}}}};
  EXPECT_EQ(409, call("DELETE", "/apis/batch/v1/namespaces/lab/jobs/orphan", wrong).status);
  json right = {{"propagationPolicy", "Orphan"},
                {"preconditions", {{"uid", stored_job("orphan")["metadata"]["uid"]}}}};
  EXPECT_EQ(200, call("DELETE", "/apis/batch/v1/namespaces/lab/jobs/orphan", right).status);
  EXPECT_FALSE(failed(api_->objects().get(pods_resource(), "lab", orphan_pod)));
  EXPECT_EQ(422, call("DELETE", "/apis/batch/v1/namespaces/lab/jobs/none",
                      json{{"propagationPolicy", "Sideways"}})
                     .status);
}

}  // namespace
}  // namespace allox::emulator
