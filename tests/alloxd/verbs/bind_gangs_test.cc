// A gang's members at /filter and /bind (alloxd/verbs/verbs_gangs.cc): /filter passes a member
// only on its placement's node; /bind binds all N together when all have arrived, none when one
// is missing at the deadline, and rolls the gang back when the API server refuses some Bindings
// after it accepted others.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "alloxd/plan/planner.h"
#include "alloxd/verbs/verbs.h"
#include "fairness/policy.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

using nlohmann::json;

// The API server's binding endpoint: records each Binding, refuses those of `refused` pods.
class BindingApi final : public ClusterApi {
 public:
  explicit BindingApi(std::set<std::string> refused = {}) : refused_(std::move(refused)) {}
  Status bind(const BindingArgs& binding) override {
    std::lock_guard lock(mu_);
    if (refused_.count(binding.pod_name)) return Error{"node " + binding.node + " not found"};
    bound_.push_back(binding.pod_name);
    return OkStatus();
  }
  Expected<std::optional<json>> pod(const std::string&, const std::string&) override {
    return std::optional<json>{};
  }
  std::vector<std::string> bound() const {
    std::lock_guard lock(mu_);
    return bound_;
  }

 private:
  mutable std::mutex mu_;
  std::set<std::string> refused_;
  std::vector<std::string> bound_;
};

// g2a and g2b (2 GPUs each), g4 (4); a gang "big" of 3 members × 2 GPUs registered and planned.
struct Cluster {
  testing::ScratchDir dir;
  Metrics metrics;
  BindingApi api;
  std::unique_ptr<Planner> planner;
  std::unique_ptr<ExtenderVerbs> verbs;
  std::shared_ptr<const Plan> plan;

  explicit Cluster(std::set<std::string> refused = {},
                   std::chrono::milliseconds wait = std::chrono::seconds(30))
      : api(std::move(refused)) {
    ExtenderConfig config = testing::make_config(
        {{"g2a", {{"gpu", 2}}}, {"g2b", {{"gpu", 2}}}, {"g4", {{"gpu", 4}}}}, dir.file("state.db"));
    PlannerOptions planner_options;
    planner_options.inventory = config.nodes;
    auto made = Planner::create(config, make_policy("fifo", PolicyOptions{}).value(), metrics,
                                planner_options);
    EXPECT_TRUE(made.ok()) << made.message();
    planner = std::move(*made);
    planner->start();
    VerbOptions options;
    options.gang_bind_wait = wait;
    verbs = std::make_unique<ExtenderVerbs>(*planner, &api, metrics, options);
    for (int i = 0; i < 3; ++i) {
      auto member = read_job_variant(pod(i), config.devices);
      EXPECT_TRUE(member.ok()) << member.message();
      EXPECT_TRUE(planner->register_variant(*member).ok());
    }
    planner->solve_now();
    plan = planner->latest_plan();
    EXPECT_EQ(1u, plan->starts.count("lab/big"));
  }
  ~Cluster() { planner->stop(); }

  static json pod(int i) {
    json pod = testing::make_pod("lab", "big-" + std::to_string(i), "nvidia.com/gpu",
                                 {{"allox.io/job", "big"}, {"allox.io/gang-size", "3"}});
    pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "2";
    return pod;
  }
  std::string node_of(int i) const {
    return plan->starts.at("lab/big").member("lab/big-" + std::to_string(i))->node;
  }
  // Binds members `which` at once, each to its placement's node; their errors, in order.
  std::vector<std::string> bind(const std::vector<int>& which) {
    std::vector<std::string> errors(which.size());
    std::vector<std::thread> threads;
    for (std::size_t k = 0; k < which.size(); ++k) {
      threads.emplace_back([&, k] {
        const std::string name = "big-" + std::to_string(which[k]);
        errors[k] = verbs->bind(BindingArgs{name, "lab", "uid-" + name, node_of(which[k])}).error;
      });
    }
    for (std::thread& t : threads) t.join();
    return errors;
  }
  JobPhase phase() const {
    return planner->read([](const JobBook& book) { return book.job("lab/big")->record.phase; });
  }
};

TEST(BindGangsTest, FilterPassesAMemberOnlyOnItsPlacementsNode) {
  Cluster cluster;
  for (int i = 0; i < 3; ++i) {
    auto args = parse_extender_args(testing::filter_body(Cluster::pod(i), {"g2a", "g2b", "g4"}));
    ASSERT_TRUE(args.ok()) << args.message();
    FilterResult result = cluster.verbs->filter(*args);
    ASSERT_TRUE(result.node_names.has_value());
    ASSERT_EQ(1u, result.node_names->size()) << i;
    EXPECT_EQ(cluster.node_of(i), (*result.node_names)[0]) << i;
  }
}

TEST(BindGangsTest, WhenAllMembersReachBindAllAreBoundAndTheGangRuns) {
  Cluster cluster;
  std::vector<std::string> errors = cluster.bind({0, 1, 2});
  for (const std::string& error : errors) EXPECT_EQ("", error);
  EXPECT_EQ(3u, cluster.api.bound().size());
  EXPECT_EQ(JobPhase::kRunning, cluster.phase());
  cluster.planner->read([&](const JobBook& book) {
    const BookJob* job = book.job("lab/big");
    ASSERT_EQ(3u, job->member_nodes.size());
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(cluster.node_of(i), job->member_nodes.at("lab/big-" + std::to_string(i)));
    }
  });
}

TEST(BindGangsTest, WhenAMemberIsMissingNoneIsBound) {
  Cluster cluster({}, std::chrono::milliseconds(300));
  std::vector<std::string> errors = cluster.bind({0, 2});
  for (const std::string& error : errors) {
    EXPECT_NE(std::string::npos, error.find("2 of 3 members reached /bind")) << error;
  }
  EXPECT_TRUE(cluster.api.bound().empty());
  EXPECT_EQ(JobPhase::kQueued, cluster.phase());
  // Tried again, all of them this time: the gang runs.
  for (const std::string& error : cluster.bind({0, 1, 2})) EXPECT_EQ("", error);
  EXPECT_EQ(JobPhase::kRunning, cluster.phase());
}

TEST(BindGangsTest, APartlyBoundGangIsRolledBack) {
  Cluster cluster({"big-1"});
  std::vector<std::string> errors = cluster.bind({0, 1, 2});
  for (const std::string& error : errors) {
    EXPECT_NE(std::string::npos, error.find("rolled back")) << error;
  }
  EXPECT_EQ(2u, cluster.api.bound().size()) << "two Bindings were made before the rollback";
  EXPECT_EQ(JobPhase::kQueued, cluster.phase());
  std::vector<Planner::Rollback> rollbacks = cluster.planner->take_rollbacks();
  ASSERT_EQ(1u, rollbacks.size());
  EXPECT_EQ(3u, rollbacks[0].members.size()) << "the controller deletes every member";
  cluster.planner->read([](const JobBook& book) {
    const BookJob* job = book.job("lab/big");
    EXPECT_NE(std::string::npos, job->gang_note.find("member lab/big-1's binding"))
        << job->gang_note;
    EXPECT_TRUE(job->variants.empty());
  });
  for (const MachineSlot& slot :
       cluster.planner->read([](const JobBook& book) { return book.slots(); })) {
    EXPECT_EQ("", slot.running_job) << "a rolled-back gang holds nothing";
  }
}

}  // namespace
}  // namespace allox::extender
