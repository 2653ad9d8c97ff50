// alloxd/verbs/verbs.h, /bind of a pod the job book does not know (one run per job,
// always): allox's pods are never bound blind, only another scheduler's pass through. The
// watch is fed by hand (ClusterFeed's handlers), the controller runs one pass at a time, and the
// API server behind the verbs is a recording double: every step is deterministic.
#include "alloxd/verbs/verbs.h"

#include <gtest/gtest.h>

#include "alloxd/control/controller.h"
#include "tests/alloxd/testing/test_support.h"
#include "tests/kube/scripted_server.h"

namespace allox::extender {
namespace {

using kube::testing::ScriptedReply;
using kube::testing::ScriptedRequest;
using kube::testing::ScriptedServer;
using nlohmann::json;

json variant(const std::string& name, const std::string& job, const std::string& resource) {
  return testing::make_pod(
      "lab", name, resource,
      {{"allox.io/job", job}, {"allox.io/time.gpu", "10"}, {"allox.io/time.cpu", "20"}});
}

// The API server as the verbs see it: the pods it holds (for the GET of an unknown pod) and
// every Binding posted.
class RecordingApi final : public ClusterApi {
 public:
  Status bind(const BindingArgs& binding) override {
    std::lock_guard lock(mu_);
    bound_.push_back(binding.pod_namespace + "/" + binding.pod_name + " -> " + binding.node);
    return OkStatus();
  }
  Expected<std::optional<json>> pod(const std::string& namespace_name,
                                    const std::string& name) override {
    std::lock_guard lock(mu_);
    ++gets_;
    if (!get_error_.empty()) return Error{get_error_};
    auto it = pods_.find(namespace_name + "/" + name);
    if (it == pods_.end()) return std::optional<json>{};
    return std::optional<json>{it->second};
  }
  void hold(const json& pod) {
    std::lock_guard lock(mu_);
    pods_[pod["metadata"]["namespace"].get<std::string>() + "/" +
          pod["metadata"]["name"].get<std::string>()] = pod;
  }
  void fail_gets(std::string error) {
    std::lock_guard lock(mu_);
    get_error_ = std::move(error);
  }
  std::vector<std::string> bound() const {
    std::lock_guard lock(mu_);
    return bound_;
  }
  int gets() const {
    std::lock_guard lock(mu_);
    return gets_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, json> pods_;
  std::vector<std::string> bound_;
  std::string get_error_;
  int gets_ = 0;
};

struct Fixture {
  testing::ScratchDir dir;
  ExtenderConfig config;
  Metrics metrics;
  std::unique_ptr<Planner> planner;
  // The controller's gate removals, deletions and events: answered, not looked at here.
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
  RecordingApi api;
  std::unique_ptr<ExtenderVerbs> verbs;

  Fixture() {
    config = testing::make_config({}, dir.file("state.db"));
    config.scheduler_name = "allox-scheduler";
    auto made = Planner::create(config, make_policy("fifo", PolicyOptions{}).value(), metrics);
    EXPECT_TRUE(made.ok()) << made.message();
    planner = std::move(*made);
    feed = std::make_unique<ClusterFeed>(client, *planner, config, nullptr);
    controller =
        std::make_unique<Controller>(*planner, *feed, client, events, [] { return true; });
    VerbOptions options;
    options.watched_job = [this](const std::string& namespace_name, const std::string& name) {
      return feed->watched_job(namespace_name, name);
    };
    verbs = std::make_unique<ExtenderVerbs>(*planner, &api, metrics, options);
    planner->start();
  }
  ~Fixture() {
    planner->stop();
  }
  BindingResult bind(const std::string& pod, const std::string& node) {
    return verbs->bind(BindingArgs{pod, "lab", "uid-" + pod, node});
  }
  JobPhase phase(const std::string& job) const {
    return planner->read([&](const JobBook& book) { return book.job(job)->record.phase; });
  }
};

// A double run once seen in the end-to-end test: kube-scheduler filtered one variant while
// the plan started its job on that device, the next plan moved the job to the other device and
// the controller admitted that variant (dropping this one from the book), and then this
// variant's /bind came. It used to be taken for another scheduler's pod and bound blind, so both
// variants ran.
TEST(VerbsTest, BindOfAVariantItsJobsAdmissionDroppedIsRefusedNeverBoundBlind) {
  Fixture f;
  f.feed->node_handler().on_replace(
      {testing::make_node("g1", "1", "0"), testing::make_node("c1", "0", "32")});
  f.feed->pod_handler().on_replace(
      {variant("a-gpu", "a", "nvidia.com/gpu"), variant("a-cpu", "a", "cpu")});
  f.planner->solve_now();
  f.reconcile();  // admits one variant: the other leaves the book
  const auto admitted = f.planner->admitted_as("lab/a");
  ASSERT_TRUE(admitted.has_value());
  const bool on_gpu = *admitted == "lab/a-gpu";
  const std::string chosen = on_gpu ? "a-gpu" : "a-cpu", dropped = on_gpu ? "a-cpu" : "a-gpu";
  const std::string chosen_node = on_gpu ? "g1" : "c1", dropped_node = on_gpu ? "c1" : "g1";
  ASSERT_EQ(nullptr,
            f.planner->read([&](const JobBook& book) { return book.job_of_pod("lab", dropped); }));

  BindingResult refused = f.bind(dropped, dropped_node);
  EXPECT_EQ(
      "job lab/a was admitted as variant lab/" + chosen + "; pod lab/" + dropped + " is not used",
      refused.error);
  EXPECT_TRUE(f.api.bound().empty()) << f.api.bound().front();
  EXPECT_EQ(0, f.api.gets()) << "the watch already said it is allox's";
  EXPECT_EQ(JobPhase::kQueued, f.phase("lab/a"));

  // The admitted variant binds; the dropped one stays refused, now because the job runs.
  ASSERT_EQ("", f.bind(chosen, chosen_node).error);
  EXPECT_EQ(JobPhase::kRunning, f.phase("lab/a"));
  EXPECT_EQ("job lab/a already runs as pod lab/" + chosen + "; pod lab/" + dropped + " is not used",
            f.bind(dropped, dropped_node).error);
  EXPECT_EQ(std::vector<std::string>{"lab/" + chosen + " -> " + chosen_node}, f.api.bound());
}

// A /bind may name a pod before the watch brings it in: the API server says whose it is. allox's
// is refused (kube-scheduler filters it again, which registers it); another scheduler's is bound
// as asked and recorded nowhere; a pod nobody can vouch for is not bound.
TEST(VerbsTest, BindOfAPodTheWatchHasNotSeenAsksTheApiServerWhoseItIs) {
  Fixture f;
  f.feed->node_handler().on_replace({testing::make_node("g1", "2", "0")});
  f.feed->pod_handler().on_replace({});
  f.api.hold(variant("b-gpu", "b", "nvidia.com/gpu"));
  json web = testing::make_pod("lab", "web", "nvidia.com/gpu");
  web["spec"]["schedulerName"] = "default-scheduler";
  f.api.hold(web);

  EXPECT_EQ("pod lab/b-gpu of job lab/b is not yet known to allox: filter it first",
            f.bind("b-gpu", "g1").error);
  EXPECT_EQ("pod lab/ghost does not exist", f.bind("ghost", "g1").error);
  ASSERT_EQ("", f.bind("web", "g1").error);
  EXPECT_EQ(std::vector<std::string>{"lab/web -> g1"}, f.api.bound());
  EXPECT_TRUE(f.planner->read([](const JobBook& book) { return book.jobs().empty(); }));

  f.api.fail_gets("API server answered 503");
  EXPECT_EQ("pod lab/web2 is unknown to allox, and API server answered 503",
            f.bind("web2", "g1").error);
  EXPECT_EQ(1u, f.api.bound().size());

  // Once filtered (registered) and planned, b binds through the one-run-per-job check.
  f.api.fail_gets("");
  ASSERT_TRUE(f.planner->register_variant(*read_job_variant(variant("b-gpu", "b", "nvidia.com/gpu"),
                                                            f.config.devices, f.config.tenancy)));
  ASSERT_EQ("", f.bind("b-gpu", "g1").error);
  EXPECT_EQ(JobPhase::kRunning, f.phase("lab/b"));
}

// A pod of allox's whose annotations cannot be read never enters the book, but the watch holds
// it: it is allox's, so it is refused with the reason rather than bound.
TEST(VerbsTest, BindOfAnUnreadablePodOfAlloxIsRefused) {
  Fixture f;
  f.feed->node_handler().on_replace({testing::make_node("g1", "1", "0")});
  json bad = variant("c-gpu", "c", "nvidia.com/gpu");
  bad["metadata"]["annotations"]["allox.io/time.gpu"] = "soon";
  f.feed->pod_handler().on_replace({bad});
  ASSERT_EQ(std::optional<std::string>(""), f.feed->watched_job("lab", "c-gpu"));

  EXPECT_EQ("allox cannot read pod lab/c-gpu's allox.io annotations; fix them and it is scheduled",
            f.bind("c-gpu", "g1").error);
  EXPECT_TRUE(f.api.bound().empty());
}

}  // namespace
}  // namespace allox::extender
