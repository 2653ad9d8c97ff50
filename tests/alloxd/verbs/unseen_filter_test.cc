// alloxd/verbs/verbs.h, /filter for a pod alloxd has not seen. With a watch whose
// controller nudges parked pods (VerbOptions::nudges) a pod of a job the book does not have is
// answered from the latest plan with nothing written (the watch registers it), never held for a
// round, and nudged once the watch shows it and a plan starts it: parked until then, never for
// kube-scheduler's 5 minutes. An offered node that says alloxd is behind still gets the pod
// registered and answered from the plan that settles it. Without a watch, the first filter
// waits for the plan that includes the pod. The planner's rounds wait while the test holds
// them, so "without waiting" is an order of events here, never a time.
#include <gtest/gtest.h>

#include <condition_variable>
#include <functional>
#include <mutex>

#include "alloxd/control/controller.h"
#include "alloxd/store/store.h"
#include "alloxd/verbs/verbs.h"
#include "tests/alloxd/testing/test_support.h"
#include "tests/kube/scripted_server.h"

namespace allox::extender {
namespace {

using kube::testing::ScriptedReply;
using kube::testing::ScriptedRequest;
using kube::testing::ScriptedServer;
using nlohmann::json;

// fifo, except that a round waits while the test holds it.
class HeldPolicy final : public SchedulingPolicy {
 public:
  std::string name() const override { return inner_->name(); }
  Expected<Decision> decide(const ClusterState& state) override {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !held_; });
    return inner_->decide(state);
  }
  void hold() {
    std::lock_guard lock(mu_);
    held_ = true;
  }
  void release() {
    std::lock_guard lock(mu_);
    held_ = false;
    cv_.notify_all();
  }

 private:
  std::unique_ptr<SchedulingPolicy> inner_ = make_policy("fifo", PolicyOptions{}).value();
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
};

const std::string kUnplanned = "queued: waiting for allox's next scheduling round";

json gpu_pod(const std::string& name) {
  return testing::make_pod("lab", name, "nvidia.com/gpu", {{"allox.io/time.gpu", "10"}});
}

struct Fixture {
  testing::ScratchDir dir;
  Metrics metrics;
  HeldPolicy* policy = nullptr;  // owned by the planner
  std::unique_ptr<Planner> planner;
  ScriptedServer server{[](const ScriptedRequest& r) {
    return ScriptedReply{r.method == "POST" ? 201 : 200, "{}", nullptr};
  }};
  kube::KubeClient client{{server.url(), "", ""}};
  kube::EventRecorder events{client, {}};
  std::unique_ptr<ClusterFeed> feed;
  std::unique_ptr<Controller> controller;
  // The controller told what the feed and the planner hold, and every job it enqueued
  // reconciled, its actions run, on this thread.
  void reconcile() {
    controller->pods_changed();
    controller->plan_changed();
    controller->drain();
  }
  std::unique_ptr<ExtenderVerbs> verbs;
  bool waited = false;                  // a filter started waiting for its first plan
  std::function<void()> on_watch_wait;  // runs when a filter starts waiting for the watch

  explicit Fixture(bool nudges) {
    ExtenderConfig config = testing::make_config({}, dir.file("state.db"));
    config.scheduler_name = "allox-scheduler";
    auto held = std::make_unique<HeldPolicy>();
    policy = held.get();
    auto made = Planner::create(config, std::move(held), metrics);
    EXPECT_TRUE(made.ok()) << made.message();
    planner = std::move(*made);
    feed = std::make_unique<ClusterFeed>(client, *planner, planner->config(), nullptr);
    controller = std::make_unique<Controller>(*planner, *feed, client, events, [] { return true; });
    VerbOptions options;
    options.nudges = nudges;
    // A wait would end at the plan, which the hook lets through: a wrong answer is then a failed
    // expectation, not a test stuck until first_plan_wait.
    options.first_plan_wait = std::chrono::minutes(10);
    options.on_first_plan_wait = [this] {
      waited = true;
      policy->release();
    };
    options.on_watch_wait = [this] {
      if (on_watch_wait) on_watch_wait();
    };
    verbs = std::make_unique<ExtenderVerbs>(*planner, nullptr, metrics, options);
    planner->start();
    feed->node_handler().on_replace({testing::make_node("g1", "1")});
    planner->solve_now();  // ready: the inventory and a first plan
  }
  ~Fixture() {
    policy->release();
    planner->stop();
  }
  bool in_book(const std::string& job_id) const {
    return planner->read([&](const JobBook& book) { return book.job(job_id) != nullptr; });
  }
  FilterResult filter(const json& pod) {
    auto args = parse_extender_args(testing::filter_body(pod, {"g1"}));
    EXPECT_TRUE(args.ok()) << args.message();
    return verbs->filter(*args);
  }
  std::vector<std::string> nudged() const {
    std::vector<std::string> pods;
    for (const auto& r : server.requests()) {
      if (r.method == "PATCH" &&
          json::parse(r.body)["metadata"]["annotations"].contains("allox.io/nudge")) {
        pods.push_back(r.target.substr(r.target.rfind('/') + 1));
      }
    }
    return pods;
  }
};

TEST(UnseenFilterTest, OnTheNudgePathANewJobIsAnsweredWhileItsRoundIsHeldAndNothingIsWritten) {
  Fixture f(/*nudges=*/true);
  ASSERT_TRUE(f.planner->ready());
  f.policy->hold();  // no round can publish a plan
  const auto before = f.planner->latest_plan()->version;

  FilterResult answer = f.filter(gpu_pod("a"));

  EXPECT_FALSE(f.waited);
  EXPECT_EQ(before, f.planner->latest_plan()->version);  // answered before any plan had it
  ASSERT_TRUE(answer.error.empty()) << answer.error;
  EXPECT_TRUE(answer.node_names->empty());
  ASSERT_TRUE(answer.failed_nodes.contains("g1"));
  EXPECT_EQ(kUnplanned, answer.failed_nodes.at("g1"));
  // Left to the watch: not in the book, not in the store (so a kill -9 now loses nothing).
  EXPECT_FALSE(f.in_book("lab/a"));
  {
    auto store = Store::open_for_reading(f.dir.file("state.db"));
    ASSERT_TRUE(store.ok()) << store.message();
    auto stored = (*store)->load();
    ASSERT_TRUE(stored.ok()) << stored.message();
    EXPECT_TRUE(stored->jobs.empty());
    EXPECT_TRUE(stored->variants.empty());
  }
  // Asked again before the watch: the same answer.
  EXPECT_EQ(kUnplanned, f.filter(gpu_pod("a")).failed_nodes.at("g1"));

  // The watch registers it, and the held round plans it.
  f.feed->pod_handler().on_upsert(gpu_pod("a"));
  EXPECT_EQ(JobPhase::kQueued,
            f.planner->read([](const JobBook& book) { return book.job("lab/a")->record.phase; }));
  f.policy->release();
  f.planner->solve_now();
  EXPECT_EQ(1u, f.planner->latest_plan()->starts.count("lab/a"));
}

// kube-scheduler parked the pod on that answer: the controller nudges it once the watch shows it
// and a plan starts it, and retried it is kept on its node.
TEST(UnseenFilterTest, AParkedUnseenPodIsNudgedOnceTheWatchShowsItAndAPlanStartsIt) {
  Fixture f(/*nudges=*/true);
  f.policy->hold();
  ASSERT_EQ(kUnplanned, f.filter(gpu_pod("a")).failed_nodes.at("g1"));
  f.reconcile();
  EXPECT_TRUE(f.nudged().empty());  // nothing starts it yet

  json parked = gpu_pod("a");  // as kube-scheduler left it (handleSchedulingFailure)
  parked["status"]["conditions"] =
      json::array({{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}}});
  f.feed->pod_handler().on_upsert(parked);
  f.policy->release();
  f.planner->solve_now();
  ASSERT_EQ(1u, f.planner->latest_plan()->starts.count("lab/a"));
  f.reconcile();
  EXPECT_EQ(std::vector<std::string>{"a"}, f.nudged());
  FilterResult retried = f.filter(gpu_pod("a"));
  EXPECT_EQ(std::vector<std::string>{"g1"},
            std::vector<std::string>(retried.node_names->begin(), retried.node_names->end()));
}

// kube-scheduler offers g1, whose one GPU the book still shows taken (the watch has not brought
// the completion in yet): the answer waits for the plan that settles it, so the new pod is
// registered first and that plan starts it there, instead of parking it for a nudge.
TEST(UnseenFilterTest, AnOfferedNodeTheBookShowsBusyGetsThePodRegisteredAndAnsweredFromThePlan) {
  Fixture f(/*nudges=*/true);
  f.feed->pod_handler().on_upsert(gpu_pod("r"));
  auto running =
      read_job_variant(gpu_pod("r"), f.planner->config().devices, f.planner->config().tenancy);
  ASSERT_TRUE(running.ok()) << running.message();
  ASSERT_TRUE(f.planner->record_start(*running, "g1", -1).ok());
  f.planner->solve_now();
  bool caught_up = false;
  f.on_watch_wait = [&] {
    EXPECT_TRUE(f.in_book("lab/a"));                // registered before the wait
    caught_up = f.planner->complete("lab/r").ok();  // the watch catches up: g1 is free
  };

  FilterResult answer = f.filter(gpu_pod("a"));

  EXPECT_TRUE(caught_up);
  ASSERT_TRUE(answer.error.empty()) << answer.error;
  EXPECT_EQ(std::vector<std::string>{"g1"},
            std::vector<std::string>(answer.node_names->begin(), answer.node_names->end()));
}

// A new pod of a job the book has (a second variant) is the filter's to register, as before: the
// answer depends on the job's plan, and the book must know the pod is one of its variants.
TEST(UnseenFilterTest, APodOfAJobTheBookHasIsRegisteredByTheFilter) {
  Fixture f(/*nudges=*/true);
  f.policy->hold();
  f.feed->pod_handler().on_upsert(gpu_pod("a"));
  json sibling = testing::make_pod("lab", "a-second", "nvidia.com/gpu",
                                   {{"allox.io/job", "a"}, {"allox.io/time.gpu", "10"}});

  FilterResult answer = f.filter(sibling);

  ASSERT_TRUE(answer.error.empty()) << answer.error;
  EXPECT_EQ(
      2u, f.planner->read([](const JobBook& book) { return book.job("lab/a")->variants.size(); }));
  ASSERT_TRUE(answer.failed_nodes.contains("g1"));
  EXPECT_EQ(kUnplanned, answer.failed_nodes.at("g1"));
}

// Without a watch nothing would bring a parked pod back before kube-scheduler's 5 minutes: the
// first filter waits for the plan that has the pod, and is answered from it.
TEST(UnseenFilterTest, WithoutAWatchTheFirstFilterWaitsForThePlanThatHasThePod) {
  Fixture f(/*nudges=*/false);
  f.policy->hold();  // released by the wait's hook
  FilterResult answer = f.filter(gpu_pod("a"));
  EXPECT_TRUE(f.waited);
  ASSERT_TRUE(answer.error.empty()) << answer.error;
  EXPECT_EQ(std::vector<std::string>{"g1"},
            std::vector<std::string>(answer.node_names->begin(), answer.node_names->end()));
}

}  // namespace
}  // namespace allox::extender
