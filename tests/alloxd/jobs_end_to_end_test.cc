// batch/v1 Jobs as allox's unit of work, end to end: the fake API server, its Job controller
// and garbage collector, the kube-scheduler v1.28 emulator, fake kubelets and an in-process
// alloxd (whose mutating webhook gates every pod the Job controller creates), on a stepped
// clock. Two sibling Jobs (a GPU and a CPU variant) name one allox job; ordinary pods run
// beside them; a third Job's first pod fails and the Job controller runs it again.
//
// Checked from the API server's own records (every pod binding, every Job deletion and the
// events), not from what alloxd says of itself:
//   - exactly one variant Job's pod was bound and ran; the other Job was deleted and its pods
//     went after it (Background: the garbage collector, not an Orphan delete that keeps them);
//   - a `Deleted` event on the deleted Job names the variant that runs, by its Job;
//   - every allox job was bound once, except the retried Job, bound twice by the Job controller's
//     retry yet one allox job (one run in alloxd's book, done once the Job is Complete);
//   - no node was ever over-committed.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "tests/alloxd/testing/end_to_end_cluster.h"
#include "tests/alloxd/testing/job_control_plane.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

using nlohmann::json;

json container(const json& requests) {
  return {{"name", "main"},
          {"image", "registry.invalid/train:latest"},
          {"resources", {{"requests", requests}}}};
}

json gpu_requests() { return {{"nvidia.com/gpu", "1"}, {"cpu", "1"}}; }
json cpu_requests() { return {{"cpu", "32"}}; }

// A batch/v1 Job of one pod for allox job `job`, with the estimates as hints.
json batch_job(const std::string& name, const std::string& job, const json& requests,
               const std::string& scheduler, int backoff_limit = 6) {
  json annotations = {{"allox.io/job", job},
                      {"allox.io/time.gpu", "600"},
                      {"allox.io/time.cpu", "6000"}};
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"backoffLimit", backoff_limit},
            {"template",
             {{"metadata", {{"annotations", annotations}}},
              {"spec",
               {{"schedulerName", scheduler},
                {"restartPolicy", "Never"},
                {"containers", json::array({container(requests)})}}}}}}}};
}

// A bare gated pod of its own allox job, as users submit them.
json plain_pod(const std::string& name, const json& requests, const std::string& scheduler) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"annotations",
             {{"allox.io/job", name}, {"allox.io/time.gpu", "300"}, {"allox.io/time.cpu", "3000"}}}}},
          {"spec", {{"schedulerName", scheduler}, {"containers", json::array({container(requests)})}}}};
}

std::string annotation(const json& pod, const char* key) {
  return pod["metadata"].value("annotations", json::object()).value(key, "");
}

TEST(JobsEndToEndTest, SiblingJobsRunOneVariantAndARetriedJobIsOneJob) {
  auto config = load_extender_config(std::string(ALLOX_SOURCE_DIR) + "/examples/alloxd.yaml");
  ASSERT_TRUE(config.ok()) << config.message();
  PolicyOptions policy_options;
  policy_options.alpha = config->alpha;
  policy_options.starvation_bound = config->starvation_bound;
  const std::vector<NodeInventory> nodes = {{"node-a", {{"gpu", 1}, {"cpu", 1}}},
                                            {"node-b", {{"cpu", 1}}}};
  auto cluster = testing::EndToEndCluster::start(*config, nodes, policy_options, /*gated=*/true);
  ASSERT_TRUE(cluster);
  const std::string ns = cluster->pod_namespace();
  const std::string scheduler = cluster->options().scheduler_name;
  // alloxd's gate webhook on every pod create of the namespace: the Job controller's too.
  emulator::AdmissionWebhook webhook;
  webhook.url = cluster->url() + "/admission/gate";
  webhook.namespaces = {ns};
  cluster->api().register_webhook(webhook);
  testing::Deletions deletions(cluster->objects());

  std::set<std::string> failed_once;
  std::mutex failed_mu;
  testing::JobControlPlane plane(
      *cluster,
      [](const json& pod) -> std::optional<double> {
        const std::string job = annotation(pod, "allox.io/job");
        const bool gpu = pod["spec"]["containers"][0]["resources"]["requests"].contains(
            "nvidia.com/gpu");
        if (job == "flaky") return 120;
        return gpu ? 600 : 3000;
      },
      [&](const json& pod) {
        // The retried Job's first pod fails; every other pod succeeds.
        if (annotation(pod, "allox.io/job") != "flaky") return 0;
        std::lock_guard lock(failed_mu);
        return failed_once.insert("flaky").second ? 1 : 0;
      });

  auto create = [&](const emulator::ResourceType& type, const json& object) {
    auto created = cluster->objects().create(type, ns, object);
    ASSERT_FALSE(std::holds_alternative<emulator::ApiError>(created))
        << std::get<emulator::ApiError>(created).message;
  };
  create(emulator::jobs_resource(), batch_job("train-gpu", "train", gpu_requests(), scheduler));
  create(emulator::jobs_resource(), batch_job("train-cpu", "train", cpu_requests(), scheduler));
  create(emulator::jobs_resource(), batch_job("flaky", "flaky", gpu_requests(), scheduler, 3));
  create(emulator::pods_resource(), plain_pod("plain-gpu", gpu_requests(), scheduler));
  create(emulator::pods_resource(), plain_pod("plain-cpu", cpu_requests(), scheduler));

  auto job_condition = [&](const std::string& name, const char* type) {
    auto got = cluster->objects().get(emulator::jobs_resource(), ns, name);
    if (std::holds_alternative<emulator::ApiError>(got)) return false;
    for (const json& c : (*std::get<emulator::ObjectPtr>(got))["status"].value(
             "conditions", json::array())) {
      if (c.value("type", "") == type && c.value("status", "") == "True") return true;
    }
    return false;
  };
  auto pod_phase = [&](const std::string& name) {
    auto got = cluster->objects().get(emulator::pods_resource(), ns, name);
    if (std::holds_alternative<emulator::ApiError>(got)) return std::string();
    return (*std::get<emulator::ObjectPtr>(got))["status"].value("phase", "");
  };
  // The phase alloxd's book gives a job: it learns of an ending from the watch, after the
  // Job's own condition.
  auto book_phase = [&](const std::string& job) {
    auto got = cluster->get("/v1/jobs/" + ns + "/" + job);
    return got.status == 200 ? json::parse(got.body).value("phase", "") : std::string();
  };
  const bool finished = plane.run_until(
      [&] {
        const bool variant_done =
            job_condition("train-gpu", "Complete") || job_condition("train-cpu", "Complete");
        return variant_done && job_condition("flaky", "Complete") &&
               pod_phase("plain-gpu") == "Succeeded" && pod_phase("plain-cpu") == "Succeeded" &&
               book_phase("train") == "done" && book_phase("flaky") == "done";
      },
      24 * 3600);
  ASSERT_TRUE(finished) << "the jobs did not all finish";

  // Exactly one variant Job ran; the other was deleted, and its pods after it (Background).
  const auto deleted_jobs = deletions.jobs();
  ASSERT_EQ(1u, deleted_jobs.size());
  const std::string unused = deleted_jobs.begin()->first;
  const std::string used = unused == "train-gpu" ? "train-cpu" : "train-gpu";
  EXPECT_TRUE(unused == "train-gpu" || unused == "train-cpu") << unused;
  EXPECT_TRUE(job_condition(used, "Complete"));
  const std::vector<std::uint64_t> unused_pods = deletions.pods_of(unused);
  ASSERT_FALSE(unused_pods.empty()) << "the unused Job had a pod, gated, until it was deleted";
  for (std::uint64_t at : unused_pods) EXPECT_GT(at, deleted_jobs.begin()->second);
  for (const emulator::ObjectPtr& pod : cluster->objects().objects(emulator::pods_resource())) {
    EXPECT_NE(unused, (*pod)["metadata"].value("labels", json::object()).value("job-name", ""))
        << "a pod of the deleted Job is left: " << (*pod)["metadata"]["name"];
  }
  // The event on the deleted Job, naming the variant that runs by its Job.
  bool told = false;
  for (const emulator::ObjectPtr& event : cluster->objects().objects(emulator::events_resource())) {
    const json& e = *event;
    if (e["involvedObject"].value("kind", "") == "Job" &&
        e["involvedObject"].value("name", "") == unused && e.value("reason", "") == "Deleted") {
      EXPECT_EQ("job " + ns + "/train runs as variant " + ns + "/" + used, e.value("message", ""));
      told = true;
    }
  }
  EXPECT_TRUE(told) << "no Deleted event on Job " << unused;

  // Every allox job bound once; the retried Job twice (its Job controller's retry).
  const auto bound = cluster->ledger().bound();
  ASSERT_EQ(1u, bound.count("train"));
  ASSERT_EQ(1u, bound.at("train").size());
  EXPECT_EQ(0u, bound.at("train")[0].pod.rfind(used + "-", 0)) << bound.at("train")[0].pod;
  EXPECT_EQ(1u, bound.at("plain-gpu").size());
  EXPECT_EQ(1u, bound.at("plain-cpu").size());
  ASSERT_EQ(2u, bound.at("flaky").size());
  // Gated by the webhook and released by alloxd's gate removal (the pin it writes), retry too.
  EXPECT_FALSE(bound.at("train")[0].pinned.empty());
  for (const auto& binding : bound.at("flaky")) EXPECT_FALSE(binding.pinned.empty()) << binding.pod;
  EXPECT_TRUE(cluster->ledger().overcommits().empty());

  // In alloxd's book the retried Job is one job, done once, as the pod that succeeded.
  auto flaky = cluster->get("/v1/jobs/" + ns + "/flaky");
  ASSERT_EQ(200, flaky.status) << flaky.body;
  const json report = json::parse(flaky.body);
  EXPECT_EQ("done", report.value("phase", "")) << flaky.body;
  EXPECT_EQ(ns + "/" + bound.at("flaky")[1].pod, report.value("pod", "")) << flaky.body;
  auto train = cluster->get("/v1/jobs/" + ns + "/train");
  ASSERT_EQ(200, train.status) << train.body;
  EXPECT_EQ("done", json::parse(train.body).value("phase", "")) << train.body;
}

}  // namespace
}  // namespace allox::extender
