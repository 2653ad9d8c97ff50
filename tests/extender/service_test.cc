// extender/service.h: kube-scheduler's verbs over typed values, replaying upstream's golden
// messages against a cluster arranged to produce them, plus device variants, queue reasons,
// binding, completions and preemption (with an API server: service_api_test.cc).
#include "extender/service.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "extender/http_server.h"
#include "fairness/usage_window.h"
#include "tests/extender/golden.h"
#include "tests/extender/test_support.h"

namespace allox::extender {
namespace {

using nlohmann::json;
using testing::make_pod;

std::string golden(const std::string& name) {
  return testing::read_text_file(ALLOX_SOURCE_DIR "/data/kube-extender/" + name);
}

std::unique_ptr<ExtenderService> make_service(const ExtenderConfig& config,
                                              std::unique_ptr<ClusterApi> api = nullptr) {
  auto policy = make_policy(config.policy, PolicyOptions{});
  EXPECT_TRUE(policy.ok()) << policy.message();
  ServiceOptions options;
  options.first_plan_wait = std::chrono::seconds(20);  // loaded CI machines solve slowly
  auto service = ExtenderService::create(config, std::move(*policy), std::move(api), options);
  EXPECT_TRUE(service.ok()) << service.message();
  (*service)->start();
  (*service)->solve_now();
  return std::move(*service);
}

ExtenderArgs args_for(const json& pod, const std::vector<std::string>& nodes) {
  auto args = parse_extender_args(testing::filter_body(pod, nodes));
  EXPECT_TRUE(args.ok()) << args.message();
  return *args;
}

BindingArgs binding(const std::string& ns, const std::string& pod, const std::string& node) {
  return {pod, ns, "uid-" + pod, node};
}

class GoldenReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = testing::make_config(
        {{"gpu-node-1", {{"gpu", 8}}}, {"gpu-node-2", {{"gpu", 8}}}, {"cpu-node-1", {{"cpu", 2}}}},
        dir_.file("state.db"));
    service_ = make_service(config_);
    // gpu-node-2 is full: eight running jobs.
    for (int i = 0; i < 8; ++i) {
      std::string name = "filler-" + std::to_string(i);
      service_->filter(args_for(make_pod("other", name, "nvidia.com/gpu"), {"gpu-node-2"}));
      ASSERT_EQ("", service_->bind(binding("other", name, "gpu-node-2")).error);
    }
    service_->solve_now();
  }

  testing::ScratchDir dir_;
  ExtenderConfig config_;
  std::unique_ptr<ExtenderService> service_;
};

TEST_F(GoldenReplayTest, FilterAnswersTheGoldenResult) {
  auto args = parse_extender_args(golden("filter_args_nodecache.json"));
  ASSERT_TRUE(args.ok()) << args.message();
  json got = to_json(service_->filter(*args));
  EXPECT_EQ("", testing::field_difference(json::parse(golden("filter_result_nodecache.json")), got))
      << got.dump();
}

TEST_F(GoldenReplayTest, PrioritizeGivesThePlannedNodeTheTopScore) {
  auto args = parse_extender_args(golden("filter_args_nodecache.json"));
  ASSERT_TRUE(args.ok());
  service_->filter(*args);
  json got = to_json(service_->prioritize(*args));
  json want = json::parse(golden("prioritize_result.json"));
  // The golden list's first entry is the planned node at MaxExtenderPriority.
  ASSERT_EQ(3u, got.size());
  EXPECT_EQ("", testing::field_difference(want[0], got[0])) << got.dump();
  EXPECT_EQ(0, got[1]["Score"]);
  EXPECT_EQ(0, got[2]["Score"]);
}

TEST_F(GoldenReplayTest, BindAnswersTheGoldenResultAndStartsTheJob) {
  auto args = parse_extender_args(golden("filter_args_nodecache.json"));
  ASSERT_TRUE(args.ok());
  service_->filter(*args);
  auto bind = parse_binding_args(golden("bind_args.json"));
  ASSERT_TRUE(bind.ok()) << bind.message();
  json got = to_json(service_->bind(*bind));
  EXPECT_EQ("", testing::field_difference(json::parse(golden("bind_result_ok.json")), got));
  auto job = service_->job("ml-team-a/resnet-train-0");
  ASSERT_TRUE(job.ok()) << job.message();
  EXPECT_EQ(JobPhase::kRunning, job->record.phase);
  EXPECT_EQ("gpu-node-1", job->record.node);
  EXPECT_EQ("ml-team-a", job->record.user);
}

TEST_F(GoldenReplayTest, PreemptPassesVictimsThatAreNotAlloxJobs) {
  auto args = parse_preemption_args(golden("preempt_args_nodecache.json"));
  ASSERT_TRUE(args.ok()) << args.message();
  json got = to_json(service_->preempt(*args));
  EXPECT_EQ("", testing::field_difference(json::parse(golden("preempt_result.json")), got));
}

TEST_F(GoldenReplayTest, PreemptRefusesNodesWhoseVictimsAreRunningAlloxJobs) {
  PreemptionArgs args;
  args.pod = make_pod("x", "urgent", "nvidia.com/gpu");
  args.victims["gpu-node-2"] = {{"uid-filler-3"}, 0};
  args.victims["gpu-node-1"] = {{"someone-else"}, 0};
  PreemptionResult result = service_->preempt(args);
  EXPECT_EQ(0u, result.victims.count("gpu-node-2"));
  EXPECT_EQ(1u, result.victims.count("gpu-node-1"));
}

TEST(ServiceTest, ExactlyOneDeviceVariantIsAdmittedAndBound) {
  testing::ScratchDir dir;
  auto config =
      testing::make_config({{"g", {{"gpu", 1}}}, {"c", {{"cpu", 1}}}}, dir.file("state.db"));
  auto service = make_service(config);
  std::map<std::string, std::string> annotations = {
      {"allox.io/job", "resnet"}, {"allox.io/time.gpu", "100"}, {"allox.io/time.cpu", "400"}};
  json gpu_pod = make_pod("lab", "resnet-gpu", "nvidia.com/gpu", annotations);
  json cpu_pod = make_pod("lab", "resnet-cpu", "cpu", annotations);
  service->filter(args_for(cpu_pod, {"g", "c"}));
  service->filter(args_for(gpu_pod, {"g", "c"}));
  service->solve_now();
  FilterResult gpu = service->filter(args_for(gpu_pod, {"g", "c"}));
  FilterResult cpu = service->filter(args_for(cpu_pod, {"g", "c"}));
  std::size_t admitted = gpu.node_names->size() + cpu.node_names->size();
  ASSERT_EQ(1u, admitted) << to_json(gpu).dump() << to_json(cpu).dump();
  bool gpu_chosen = gpu.node_names->size() == 1;
  const std::string chosen_pod = gpu_chosen ? "resnet-gpu" : "resnet-cpu";
  const std::string other_pod = gpu_chosen ? "resnet-cpu" : "resnet-gpu";
  const std::string chosen_node = gpu_chosen ? "g" : "c";
  const std::string other_node = gpu_chosen ? "c" : "g";
  const FilterResult& other = gpu_chosen ? cpu : gpu;
  EXPECT_NE(std::string::npos, other.failed_nodes.at(other_node).find("another variant"))
      << to_json(other).dump();

  ASSERT_EQ("", service->bind(binding("lab", chosen_pod, chosen_node)).error);
  FilterResult after = service->filter(args_for(gpu_chosen ? cpu_pod : gpu_pod, {"g", "c"}));
  EXPECT_TRUE(after.node_names->empty());
  EXPECT_NE(std::string::npos, after.failed_and_unresolvable_nodes.at(other_node)
                                   .find("already runs as pod lab/" + chosen_pod));
  EXPECT_NE("", service->bind(binding("lab", other_pod, other_node)).error);
  EXPECT_EQ(1u, service->queue().running.size());
}

TEST(ServiceTest, QueuedJobsGetAQueueReasonOnEveryNode) {
  testing::ScratchDir dir;
  auto config = testing::make_config({{"g1", {{"gpu", 1}}}, {"g2", {{"gpu", 0}, {"cpu", 1}}}},
                                     dir.file("state.db"));
  auto service = make_service(config);
  json first = make_pod("lab", "first", "nvidia.com/gpu", {{"allox.io/time.gpu", "100"}});
  json second = make_pod("lab", "second", "nvidia.com/gpu", {{"allox.io/time.gpu", "100"}});
  ASSERT_EQ(std::vector<std::string>{"g1"},
            *service->filter(args_for(first, {"g1", "g2"})).node_names);
  ASSERT_EQ("", service->bind(binding("lab", "first", "g1")).error);
  service->solve_now();
  FilterResult queued = service->filter(args_for(second, {"g1", "g2", "ghost"}));
  EXPECT_TRUE(queued.node_names->empty());
  EXPECT_EQ(0u, queued.failed_nodes.at("g1").rfind("queued: position 1 of 1", 0))
      << queued.failed_nodes.at("g1");
  EXPECT_EQ("node has no nvidia.com/gpu capacity", queued.failed_and_unresolvable_nodes.at("g2"));
  EXPECT_EQ("node ghost is not in allox's inventory", queued.failed_nodes.at("ghost"));
  EXPECT_EQ("", queued.error);

  ASSERT_TRUE(service->complete("lab/first").ok());
  service->solve_now();
  EXPECT_EQ(std::vector<std::string>{"g1"},
            *service->filter(args_for(second, {"g1", "g2"})).node_names);
  EXPECT_FALSE(service->complete("lab/first").ok());  // already done
}

TEST(ServiceTest, UnreadablePodIsUnresolvableNotAnError) {
  testing::ScratchDir dir;
  auto service = make_service(testing::make_config({{"g", {{"gpu", 1}}}}, dir.file("s.db")));
  FilterResult r = service->filter(
      args_for(make_pod("lab", "p", "nvidia.com/gpu", {{"allox.io/time.gpu", "soon"}}), {"g"}));
  EXPECT_EQ("", r.error);
  EXPECT_NE(std::string::npos, r.failed_and_unresolvable_nodes.at("g").find("allox.io/time.gpu"));
  EXPECT_TRUE(service->queue().queued.empty());
}

TEST(ServiceTest, ProfilesReplaceHintsInEstimates) {
  testing::ScratchDir dir;
  auto service = make_service(testing::make_config({{"g", {{"gpu", 1}}}}, dir.file("s.db")));
  service->filter(
      args_for(make_pod("lab", "p", "nvidia.com/gpu",
                        {{"allox.io/time.gpu", "999"}, {"allox.io/iterations", "1000"}}),
               {"g"}));
  ASSERT_TRUE(service->add_profile({"lab/p", "gpu", ProfileSample::Kind::kProfile, 10, 6}).ok());
  ASSERT_TRUE(service->add_profile({"lab/p", "gpu", ProfileSample::Kind::kProfile, 20, 7}).ok());
  auto job = service->job("lab/p");
  ASSERT_TRUE(job.ok());
  ASSERT_EQ(1u, job->variants.size());
  EXPECT_EQ(TimeEstimate::Source::kProfile, job->variants[0].estimate.source);
  EXPECT_NEAR(105, job->variants[0].estimate.seconds, 1e-6);
  EXPECT_FALSE(service->add_profile({"lab/nope", "gpu", ProfileSample::Kind::kProfile, 1, 1}).ok());
  EXPECT_FALSE(service->add_profile({"lab/p", "gpu", ProfileSample::Kind::kProfile, 0, 1}).ok());
}

// /v1/fairness is fairness/report.h's report: the inventory sizes the cluster, the window comes
// from the config, and the current share is L (a job counts its fastest device type's share).
TEST(ServiceTest, FairnessReportUsesTheInventoryTheWindowAndL) {
  testing::ScratchDir dir;
  auto config = testing::make_config({{"g", {{"gpu", 4}}}, {"c", {{"cpu", 2}}}}, dir.file("s.db"));
  config.fairness_window = 600;
  auto policy = make_policy("fifo", PolicyOptions{});
  ASSERT_TRUE(policy.ok());
  std::atomic<double> clock{1000};
  ServiceOptions options;
  options.clock = [&] { return clock.load(); };
  options.first_plan_wait = std::chrono::seconds(20);  // loaded CI machines solve slowly
  auto created = ExtenderService::create(config, std::move(*policy), nullptr, options);
  ASSERT_TRUE(created.ok()) << created.message();
  ExtenderService& service = **created;
  service.start();
  service.solve_now();  // ready: a first plan
  json gpu_job = make_pod("alice", "a", "nvidia.com/gpu", {{"allox.io/time.gpu", "100"}});
  json cpu_job =
      make_pod("bob", "b", "cpu", {{"allox.io/time.gpu", "100"}, {"allox.io/time.cpu", "400"}});
  service.filter(args_for(gpu_job, {"g", "c"}));
  service.filter(args_for(cpu_job, {"g", "c"}));
  service.solve_now();
  ASSERT_EQ("", service.bind(binding("alice", "a", "g")).error);
  ASSERT_EQ("", service.bind(binding("bob", "b", "c")).error);
  clock = 1300;

  auto report = service.fairness();
  ASSERT_TRUE(report.ok()) << report.message();
  EXPECT_DOUBLE_EQ(1300, report->now);
  EXPECT_DOUBLE_EQ(600, report->window);
  ASSERT_EQ(2u, report->users.size());
  const UserReport& alice = report->users[0];
  const UserReport& bob = report->users[1];
  EXPECT_EQ("alice", alice.user);
  EXPECT_DOUBLE_EQ(1.0 / 4, alice.current_share);             // one of four GPUs
  EXPECT_DOUBLE_EQ(1.0 / 2, bob.current_share);               // one of two CPUs: its only variant
  EXPECT_DOUBLE_EQ(300.0 / (4 * 600), alice.windowed_share);  // 300 s of one GPU in 600 s
  EXPECT_DOUBLE_EQ(300.0 / (2 * 600), bob.windowed_share);    // 300 s of one of two CPUs
  EXPECT_DOUBLE_EQ(jain_index({alice.windowed_share, bob.windowed_share}),
                   report->jain_windowed_share);
  EXPECT_EQ(2u, report->running);
}

}  // namespace
}  // namespace allox::extender
