// extender/store.h: what is recorded is what load() gives back, across reopenings.
#include "extender/store.h"

#include <gtest/gtest.h>

#include "tests/extender/test_support.h"

namespace allox::extender {
namespace {

JobRecord arrival(const std::string& id, const std::string& user, double at) {
  JobRecord job;
  job.id = id;
  job.user = user;
  job.arrival = at;
  return job;
}

TEST(StoreTest, LifecycleVariantsProfilesAndUsageSurviveReopening) {
  testing::ScratchDir dir;
  const std::string path = dir.file("state.db");
  {
    auto store = Store::open(path);
    ASSERT_TRUE(store.ok()) << store.message();
    JobRecord job = arrival("j1", "alice", 100.0);
    ASSERT_TRUE((*store)->record_arrival(job).ok());
    ASSERT_TRUE((*store)->record_arrival(job).ok());  // idempotent
    ASSERT_TRUE((*store)->record_arrival(arrival("j2", "bob", 101.0)).ok());
    JobVariant variant;
    variant.pod = {"j1-gpu", "ns", "uid-1"};
    variant.job_id = "j1";
    variant.user = "alice";
    variant.device = "gpu";
    variant.iterations = 500;
    variant.time_hints = {{"gpu", 60}, {"cpu", 240}};
    ASSERT_TRUE((*store)->record_variant(variant).ok());
    job.phase = JobPhase::kRunning;
    job.pod_namespace = "ns";
    job.pod_name = "j1-gpu";
    job.pod_uid = "uid-1";
    job.node = "n1";
    job.device = "gpu";
    job.machine = 3;
    job.start = 110;
    ASSERT_TRUE((*store)->record_start(job).ok());
    ASSERT_TRUE(
        (*store)->record_profile({"j2", "cpu", ProfileSample::Kind::kProfile, 10, 5.5, 102}).ok());
    ASSERT_TRUE((*store)->record_finish("j1", 170).ok());
  }
  auto store = Store::open(path);
  ASSERT_TRUE(store.ok()) << store.message();
  auto state = (*store)->load();
  ASSERT_TRUE(state.ok()) << state.message();
  ASSERT_EQ(2u, state->jobs.size());
  const JobRecord& j1 = state->jobs[0];
  EXPECT_EQ("j1", j1.id);
  EXPECT_EQ(JobPhase::kDone, j1.phase);
  EXPECT_EQ("n1", j1.node);
  EXPECT_EQ(3, j1.machine);
  EXPECT_DOUBLE_EQ(110, j1.start);
  EXPECT_DOUBLE_EQ(170, j1.finish);
  EXPECT_EQ(JobPhase::kQueued, state->jobs[1].phase);
  ASSERT_EQ(1u, state->variants.size());
  EXPECT_EQ("j1-gpu", state->variants[0].pod.name);
  EXPECT_EQ(500, state->variants[0].iterations.value());
  EXPECT_DOUBLE_EQ(240, state->variants[0].time_hints.at("cpu"));
  ASSERT_EQ(1u, state->profiles.size());
  EXPECT_DOUBLE_EQ(5.5, state->profiles[0].seconds);

  auto usage = (*store)->usage_since(150);
  ASSERT_TRUE(usage.ok());
  ASSERT_EQ(1u, usage->size());
  EXPECT_DOUBLE_EQ(170, (*usage)[0].end.value());
  EXPECT_TRUE((*store)->usage_since(171)->empty());
}

TEST(StoreTest, UnopenablePathIsAnError) {
  auto store = Store::open("/nonexistent-dir/x/state.db");
  ASSERT_FALSE(store.ok());
  EXPECT_NE(std::string::npos, store.message().find("cannot open"));
}

}  // namespace
}  // namespace allox::extender
