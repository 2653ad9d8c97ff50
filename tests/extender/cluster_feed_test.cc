// extender/cluster_feed.h: what a (re-)list does to the book. A list is the whole truth about
// the pods the watch had shown (one it lacks was deleted), but not about a pod the book learnt
// of elsewhere: /filter registers a pod the moment kube-scheduler asks, which may be before the
// watch brings it in and after the list was taken. Dropping such a variant would let a /bind of
// it find nothing (issue 10's double run came from a variant missing from the book at /bind).
#include "extender/cluster_feed.h"

#include <gtest/gtest.h>

#include "tests/extender/test_support.h"

namespace allox::extender {
namespace {

using nlohmann::json;

json variant(const std::string& name, const std::string& job, const std::string& resource) {
  return testing::make_pod("lab", name, resource, {{"allox.io/job", job}});
}

struct Fixture {
  testing::ScratchDir dir;
  ExtenderConfig config;
  Metrics metrics;
  std::unique_ptr<Planner> planner;
  // Never called: the handlers are fed by hand and the feed is not started.
  kube::KubeClient client{{"http://127.0.0.1:1", "", ""}};
  std::unique_ptr<ClusterFeed> feed;

  Fixture() {
    config = testing::make_config({}, dir.file("state.db"));
    config.scheduler_name = "allox-scheduler";
    auto made = Planner::create(config, make_policy("fifo", PolicyOptions{}).value(), metrics);
    EXPECT_TRUE(made.ok()) << made.message();
    planner = std::move(*made);
    feed = std::make_unique<ClusterFeed>(client, *planner, config, nullptr);
    feed->node_handler().on_replace({testing::make_node("g1", "1")});
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
  void filter(const json& pod) {  // what /filter does with a pod it sees first
    auto v = read_job_variant(pod, config.devices, config.tenancy);
    ASSERT_TRUE(v.ok()) << v.message();
    ASSERT_TRUE(planner->register_variant(*v).ok());
  }
};

TEST(ClusterFeedTest, AListOlderThanAFilterRegisteredPodKeepsIt) {
  Fixture f;
  // The watch's first list was taken before the pods existed; /filter registered them first.
  f.filter(variant("a-gpu", "a", "nvidia.com/gpu"));
  f.filter(variant("a-cpu", "a", "cpu"));
  f.feed->pod_handler().on_replace({});
  EXPECT_EQ((std::vector<std::string>{"lab/a-cpu", "lab/a-gpu"}), f.variants("lab/a"));
  // A re-list that shows one of them (taken between their creations) keeps the other too.
  f.feed->pod_handler().on_replace({variant("a-gpu", "a", "nvidia.com/gpu")});
  EXPECT_EQ((std::vector<std::string>{"lab/a-cpu", "lab/a-gpu"}), f.variants("lab/a"));
  ASSERT_TRUE(f.feed->watched_job("lab", "a-gpu").has_value());
  EXPECT_FALSE(f.feed->watched_job("lab", "a-cpu").has_value());
}

TEST(ClusterFeedTest, AReListWithoutAPodTheWatchShowedForgetsIt) {
  Fixture f;
  f.feed->pod_handler().on_replace({variant("a-gpu", "a", "nvidia.com/gpu")});
  f.feed->pod_handler().on_upsert(variant("a-cpu", "a", "cpu"));
  EXPECT_EQ((std::vector<std::string>{"lab/a-cpu", "lab/a-gpu"}), f.variants("lab/a"));
  // Deleted while the watch was down: the next list is the truth.
  f.feed->pod_handler().on_replace({variant("a-gpu", "a", "nvidia.com/gpu")});
  EXPECT_EQ(std::vector<std::string>{"lab/a-gpu"}, f.variants("lab/a"));
  EXPECT_FALSE(f.feed->watched_job("lab", "a-cpu").has_value());
  EXPECT_EQ(std::optional<std::string>("lab/a"), f.feed->watched_job("lab", "a-gpu"));
}

}  // namespace
}  // namespace allox::extender
