// alloxd/store/job_book.h with GPU models as node labels: one pod that requests nvidia.com/gpu
// offers the policy every model's time, the plan starts it on a type of its choosing, and the
// start records the type the job runs as. The policy here is allox itself (fairness/policy.h).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <unordered_map>

#include "alloxd/plan/plan.h"
#include "alloxd/store/job_book.h"
#include "fairness/policy.h"

namespace allox::extender {
namespace {

DeviceMapping models() {
  DeviceMapping mapping;
  mapping.resources = {{"nvidia.com/gpu",
                        "gpu",
                        {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3", "h100"},
                         {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB", "a100"}}}};
  return mapping;
}

// A pod of `job` that runs on any GPU model, with a time hint per model.
JobVariant any_gpu(const std::string& job, double h100, double a100) {
  JobVariant v;
  v.pod = {job + "-gpu", "lab", "uid-" + job};
  v.job_id = "lab/" + job;
  v.user = "lab";
  v.device = "gpu";
  v.devices = {"gpu", "h100", "a100"};
  v.time_hints = {{"h100", h100}, {"a100", a100}};
  return v;
}

JobRecord record_of(const JobVariant& v, double arrival) {
  JobRecord record;
  record.id = v.job_id;
  record.user = v.user;
  record.arrival = arrival;
  return record;
}

// The allox policy's plan of the book at `now`: job id -> its planned start.
std::unordered_map<std::string, PlannedStart> plan_of(const JobBook& book, double now) {
  PlanInput input = book.snapshot(now);
  PolicyOptions options;
  options.alpha = 1;
  auto policy = make_policy("allox", options);
  EXPECT_TRUE(policy.ok()) << policy.message();
  Plan plan = make_plan(input, (*policy)->decide(input.state), *input.slots, 0);
  EXPECT_TRUE(plan.error.empty()) << plan.error;
  return plan.starts;
}

TEST(JobBookDevicesTest, OnePodOffersThePolicyEveryModelOnTheCluster) {
  JobBook book(models(), 3600);
  book.set_inventory({{"h1", {{"h100", 1}}}, {"a1", {{"a100", 1}}}, {"c1", {{"cpu", 1}}}});
  const JobVariant v = any_gpu("train", 100, 300);
  book.add_run(record_of(v, 0), v);
  const Job& job = *book.job(v.job_id)->planned;
  // Every model the cluster has; not the plain type, which no node offers, nor the CPU.
  EXPECT_EQ((std::map<DeviceType, double>{{"h100", 100}, {"a100", 300}}), job.time);
}

TEST(JobBookDevicesTest, RunsOnTheFasterModelWhenFreeAndOnTheSlowerWhenTheFasterIsBusyLong) {
  JobBook book(models(), 3600);
  book.set_inventory({{"h1", {{"h100", 1}}}, {"a1", {{"a100", 1}}}});
  const JobVariant first = any_gpu("first", 100, 300);
  book.add_run(record_of(first, 0), first);
  auto starts = plan_of(book, 1);
  ASSERT_EQ(1u, starts.count(first.job_id));
  EXPECT_EQ("h100", starts.at(first.job_id).device) << "the faster model is free";
  EXPECT_EQ("h1", starts.at(first.job_id).node);

  // It runs there as h100, a type the pod offered though it names the plain type.
  auto started = book.start(first.job_id, first, "h1", starts.at(first.job_id).slot, 1);
  ASSERT_TRUE(started.ok()) << started.message();
  EXPECT_EQ("h100", started->device);
  EXPECT_EQ(0, book.capacity("h1", "h100").free);

  // The H100 is busy for 2,000 s more: a newcomer is better off on the A100 now (300 s) than
  // waiting (2,000 + 100 s).
  const JobVariant slow = any_gpu("first-long", 2000, 6000);
  JobBook busy(models(), 3600);
  busy.set_inventory({{"h1", {{"h100", 1}}}, {"a1", {{"a100", 1}}}});
  busy.add_run(record_of(slow, 0), slow);
  ASSERT_TRUE(busy.start(slow.job_id, slow, "h1", -1, 0).ok());
  const JobVariant next = any_gpu("next", 100, 300);
  busy.add_run(record_of(next, 1), next);
  starts = plan_of(busy, 1);
  ASSERT_EQ(1u, starts.count(next.job_id));
  EXPECT_EQ("a100", starts.at(next.job_id).device);
  auto second = busy.start(next.job_id, next, "a1", starts.at(next.job_id).slot, 1);
  ASSERT_TRUE(second.ok()) << second.message();
  EXPECT_EQ("a100", second->device);
  EXPECT_EQ("a1", second->node);
}

TEST(JobBookDevicesTest, APinnedPodRunsOnItsModelOnly) {
  JobBook book(models(), 3600);
  book.set_inventory({{"h1", {{"h100", 1}}}, {"a1", {{"a100", 1}}}});
  JobVariant pinned = any_gpu("pinned", 100, 300);
  pinned.device = "a100";
  pinned.devices = {"a100"};
  book.add_run(record_of(pinned, 0), pinned);
  EXPECT_EQ((std::map<DeviceType, double>{{"a100", 300}}), book.job(pinned.job_id)->planned->time);
  EXPECT_EQ(std::nullopt, book.device_on("h1", pinned));
  EXPECT_EQ("a100", book.device_on("a1", pinned).value_or(""));
  auto refused = book.start(pinned.job_id, pinned, "h1", -1, 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ("node h1 has no free nvidia.com/gpu of model a100 (0 of 0 free)", refused.message());
}

TEST(JobBookDevicesTest, TheThroughputTableEstimatesANamedModelOnTheTypesItKnows) {
  auto table = ThroughputTable::load_gavel(std::string(ALLOX_SOURCE_DIR) +
                                           "/data/gavel/simulation_throughputs.json");
  ASSERT_TRUE(table.ok()) << table.message();
  auto shared = std::make_shared<const ThroughputTable>(std::move(*table));
  DeviceMapping mapping;
  mapping.resources = {{"nvidia.com/gpu",
                        "gpu",
                        {{"nvidia.com/gpu.product", "Tesla-V100", "v100"},
                         {"nvidia.com/gpu.product", "Tesla-K80", "k80"},
                         {"nvidia.com/gpu.product", "NVIDIA-H100", "h100"}}}};
  JobBook book(mapping, 3600, shared);
  book.set_inventory({{"v", {{"v100", 1}}}, {"k", {{"k80", 1}}}, {"h", {{"h100", 1}}}});
  JobVariant v;
  v.pod = {"resnet", "lab", "uid-resnet"};
  v.job_id = "lab/resnet";
  v.user = "lab";
  v.device = "gpu";
  v.devices = {"gpu", "v100", "k80", "h100"};
  v.iterations = 10000;
  v.model = "resnet50";
  v.batch_size = 64;
  book.add_run(record_of(v, 0), v);
  const BookJob& job = *book.job(v.job_id);
  const ThroughputKey key{"ResNet-50 (batch size 64)", 1};
  for (const DeviceType type : {"v100", "k80"}) {
    const TimeEstimate e = book.estimate(job, type);
    EXPECT_EQ(TimeEstimate::Source::kTable, e.source) << type;
    EXPECT_DOUBLE_EQ(10000 / shared->steps_per_second(key, type).value(), e.seconds) << type;
  }
  EXPECT_LT(book.estimate(job, "v100").seconds, book.estimate(job, "k80").seconds);
  // A type the table does not know: the default.
  EXPECT_EQ(TimeEstimate::Source::kDefault, book.estimate(job, "h100").source);
  EXPECT_DOUBLE_EQ(3600, book.estimate(job, "h100").seconds);
}

}  // namespace
}  // namespace allox::extender
