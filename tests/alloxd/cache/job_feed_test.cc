// alloxd/cache: batch/v1 Jobs as the unit of work. A Job's pods belong to the allox job the Job
// names (sibling Jobs sharing allox.io/job are its device variants); a pod seen before its Job
// waits for it; a shape allox refuses stays out of the book with the reason; a Job's pod that
// fails while the Job will replace it queues the same job again, so the replacement runs as the
// same run and the job ends once, when its Job's pod succeeds.
#include <gtest/gtest.h>

#include "alloxd/cache/cluster_feed.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

using nlohmann::json;

json batch_job(const std::string& name, const std::string& allox_job, json spec_extra = {}) {
  json spec = {{"parallelism", 1}, {"completions", 1}, {"backoffLimit", 2},
               {"completionMode", "NonIndexed"},
               {"template", {{"metadata", {{"annotations", {{"allox.io/job", allox_job}}}}}}}};
  if (spec_extra.is_object()) spec.merge_patch(spec_extra);
  return {{"apiVersion", "batch/v1"}, {"kind", "Job"},
          {"metadata", {{"name", name}, {"namespace", "lab"}, {"uid", "job-uid-" + name}}},
          {"spec", spec}};
}

// A pod of Job `job` as the Job controller makes it: template annotations, owner reference.
json job_pod(const std::string& job, const std::string& pod, const std::string& resource,
             const std::string& allox_job) {
  json out = testing::make_pod("lab", pod, resource, {{"allox.io/job", allox_job}});
  out["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "batch/v1"},
                                                     {"kind", "Job"},
                                                     {"name", job},
                                                     {"uid", "job-uid-" + job},
                                                     {"controller", true},
                                                     {"blockOwnerDeletion", true}}});
  return out;
}

json with_phase(json pod, const std::string& phase, const std::string& node = "g1") {
  pod["spec"]["nodeName"] = node;
  pod["status"]["phase"] = phase;
  return pod;
}

struct Fixture {
  testing::ScratchDir dir;
  ExtenderConfig config;
  Metrics metrics;
  std::unique_ptr<Planner> planner;
  kube::KubeClient client{{"http://127.0.0.1:1", "", ""}};  // never called
  std::unique_ptr<ClusterFeed> feed;

  Fixture() {
    config = testing::make_config({}, dir.file("state.db"));
    config.scheduler_name = "allox-scheduler";
    auto made = Planner::create(config, make_policy("fifo", PolicyOptions{}).value(), metrics);
    EXPECT_TRUE(made.ok()) << made.message();
    planner = std::move(*made);
    feed = std::make_unique<ClusterFeed>(client, *planner, config, nullptr);
    feed->node_handler().on_replace({testing::make_node("g1", "1", "64")});
    feed->job_handler().on_replace({});
    feed->pod_handler().on_replace({});
  }
  std::vector<std::string> variants(const std::string& job) const {
    return planner->read([&](const JobBook& book) {
      std::vector<std::string> keys;
      if (const BookJob* j = book.job(job)) {
        for (const auto& [key, v] : j->variants) keys.push_back(key);
      }
      return keys;
    });
  }
  std::optional<JobRecord> record(const std::string& job) const {
    return planner->read([&](const JobBook& book) -> std::optional<JobRecord> {
      const BookJob* j = book.job(job);
      if (j == nullptr) return std::nullopt;
      return j->record;
    });
  }
};

TEST(JobFeedTest, SiblingJobsAreVariantsOfTheJobTheyName) {
  Fixture f;
  f.feed->job_handler().on_upsert(batch_job("train-gpu", "train"));
  f.feed->job_handler().on_upsert(batch_job("train-cpu", "train"));
  f.feed->pod_handler().on_upsert(job_pod("train-gpu", "train-gpu-abcde", "nvidia.com/gpu", "train"));
  f.feed->pod_handler().on_upsert(job_pod("train-cpu", "train-cpu-fghij", "cpu", "train"));
  EXPECT_EQ((std::vector<std::string>{"lab/train-cpu-fghij", "lab/train-gpu-abcde"}),
            f.variants("lab/train"));
  const auto pods = f.feed->pods();
  ASSERT_TRUE(pods.at("lab/train-gpu-abcde").owner_job.has_value());
  EXPECT_EQ("lab/train-gpu", pods.at("lab/train-gpu-abcde").owner_job->key());
  // The Job's metadata names the allox job even when its template does not.
  json named = batch_job("solo", "");
  named["metadata"]["annotations"] = {{"allox.io/job", "from-metadata"}};
  named["spec"]["template"]["metadata"]["annotations"] = json::object();
  f.feed->job_handler().on_upsert(named);
  json solo_pod = job_pod("solo", "solo-klmno", "nvidia.com/gpu", "");
  solo_pod["metadata"].erase("annotations");
  f.feed->pod_handler().on_upsert(solo_pod);
  EXPECT_EQ(std::vector<std::string>{"lab/solo-klmno"}, f.variants("lab/from-metadata"));
}

TEST(JobFeedTest, APodSeenBeforeItsJobWaitsForIt) {
  Fixture f;
  f.feed->pod_handler().on_upsert(job_pod("early", "early-abcde", "nvidia.com/gpu", "early"));
  EXPECT_TRUE(f.variants("lab/early").empty());
  EXPECT_TRUE(f.feed->pods().at("lab/early-abcde").awaiting_job);
  f.feed->job_handler().on_upsert(batch_job("early", "early"));
  EXPECT_EQ(std::vector<std::string>{"lab/early-abcde"}, f.variants("lab/early"));
  EXPECT_FALSE(f.feed->pods().at("lab/early-abcde").awaiting_job);
}

TEST(JobFeedTest, ARefusedShapeStaysOutWithItsReason) {
  Fixture f;
  f.feed->job_handler().on_upsert(batch_job("queue", "queue", {{"parallelism", 3}, {"completions", nullptr}}));
  f.feed->pod_handler().on_upsert(job_pod("queue", "queue-abcde", "nvidia.com/gpu", "queue"));
  EXPECT_FALSE(f.record("lab/queue").has_value());
  const ObservedPod pod = f.feed->pods().at("lab/queue-abcde");
  EXPECT_FALSE(pod.variant.has_value());
  EXPECT_NE(std::string::npos, pod.job_refusal.find("spec.completions is unset")) << pod.job_refusal;
  // An Indexed gang is a variant with its gang size.
  f.feed->job_handler().on_upsert(batch_job(
      "gang", "gang", {{"parallelism", 4}, {"completions", 4}, {"completionMode", "Indexed"}}));
  f.feed->pod_handler().on_upsert(job_pod("gang", "gang-0-abcde", "nvidia.com/gpu", "gang"));
  const ObservedPod member = f.feed->pods().at("lab/gang-0-abcde");
  ASSERT_TRUE(member.variant.has_value());
  EXPECT_EQ(4, member.variant->gang);
}

TEST(JobFeedTest, AFailedPodTheJobReplacesIsTheSameJobAndRun) {
  Fixture f;
  f.feed->job_handler().on_upsert(batch_job("flaky", "flaky"));
  json first = job_pod("flaky", "flaky-aaaaa", "nvidia.com/gpu", "flaky");
  f.feed->pod_handler().on_upsert(first);
  f.feed->pod_handler().on_upsert(with_phase(first, "Running"));
  ASSERT_EQ(JobPhase::kRunning, f.record("lab/flaky")->phase);
  const std::int64_t row = f.record("lab/flaky")->row;
  // Failed, and the Job (backoffLimit 2) will replace it: queued again, not done.
  f.feed->pod_handler().on_upsert(with_phase(first, "Failed"));
  ASSERT_EQ(JobPhase::kQueued, f.record("lab/flaky")->phase);
  EXPECT_EQ(row, f.record("lab/flaky")->row);
  EXPECT_TRUE(f.variants("lab/flaky").empty());
  EXPECT_EQ(1, f.planner->read([](const JobBook& book) {
    return book.capacity("g1", "gpu").free;
  }));
  // The replacement is a variant of the same run; it runs and succeeds: the job is done once.
  json second = job_pod("flaky", "flaky-bbbbb", "nvidia.com/gpu", "flaky");
  f.feed->pod_handler().on_upsert(second);
  EXPECT_EQ(std::vector<std::string>{"lab/flaky-bbbbb"}, f.variants("lab/flaky"));
  f.feed->pod_handler().on_upsert(with_phase(second, "Running"));
  EXPECT_EQ(JobPhase::kRunning, f.record("lab/flaky")->phase);
  f.feed->pod_handler().on_upsert(with_phase(second, "Succeeded"));
  EXPECT_EQ(JobPhase::kDone, f.record("lab/flaky")->phase);
  EXPECT_EQ(row, f.record("lab/flaky")->row);
  EXPECT_EQ("flaky-bbbbb", f.record("lab/flaky")->pod_name);
}

TEST(JobFeedTest, TheLastFailureWithinBackoffLimitEndsTheJob) {
  Fixture f;
  f.feed->job_handler().on_upsert(batch_job("doomed", "doomed", {{"backoffLimit", 0}}));
  json only = job_pod("doomed", "doomed-aaaaa", "nvidia.com/gpu", "doomed");
  f.feed->pod_handler().on_upsert(only);
  f.feed->pod_handler().on_upsert(with_phase(only, "Running"));
  f.feed->pod_handler().on_upsert(with_phase(only, "Failed"));
  EXPECT_EQ(JobPhase::kDone, f.record("lab/doomed")->phase);  // no retry left: it ended
}

}  // namespace
}  // namespace allox::extender
