// alloxd/service.h: kube-scheduler's verbs over typed values, each answer checked against the
// test's own account of the cluster (which nodes have a free machine, which pods run where), plus
// device variants, queue reasons, completions and profiles (with an API server:
// service_api_test.cc; the real scheduler's recorded bodies: real_v128_replay_test.cc).
#include "alloxd/service.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>

#include "alloxd/http/http_server.h"
#include "alloxd/http/routes.h"
#include "core/thread_priority.h"
#include "fairness/usage_window.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

using nlohmann::json;
using testing::make_pod;

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

// The cluster kube-scheduler sees: gpu-node-1 with eight free GPUs, gpu-node-2 with eight GPUs
// all taken by other jobs, cpu-node-1 with CPUs only. The test keeps its own account of which
// GPUs are taken and checks every answer against it, never against a reply allox wrote.
class KubeSchedulerVerbsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = testing::make_config(
        {{"gpu-node-1", {{"gpu", 8}}}, {"gpu-node-2", {{"gpu", 8}}}, {"cpu-node-1", {{"cpu", 2}}}},
        dir_.file("state.db"));
    service_ = make_service(config_);
    for (int i = 0; i < 8; ++i) {
      std::string name = "filler-" + std::to_string(i);
      service_->filter(args_for(make_pod("other", name, "nvidia.com/gpu"), {"gpu-node-2"}));
      ASSERT_EQ("", service_->bind(binding("other", name, "gpu-node-2")).error);
      taken_gpus_["gpu-node-2"].insert("uid-" + name);
    }
    service_->solve_now();
  }

  int free_gpus(const std::string& node) const {
    const auto& machines = gpus_.at(node);
    auto taken = taken_gpus_.find(node);
    return machines - (taken == taken_gpus_.end() ? 0 : static_cast<int>(taken->second.size()));
  }

  testing::ScratchDir dir_;
  ExtenderConfig config_;
  std::unique_ptr<ExtenderService> service_;
  const std::vector<std::string> offered_ = {"gpu-node-1", "gpu-node-2", "cpu-node-1"};
  const std::map<std::string, int> gpus_ = {
      {"gpu-node-1", 8}, {"gpu-node-2", 8}, {"cpu-node-1", 0}};
  std::map<std::string, std::set<std::string>> taken_gpus_;  // node -> uids of the pods on it
  const json pod_ =
      make_pod("ml-team-a", "resnet-train-0", "nvidia.com/gpu", {{"allox.io/time.gpu", "3600"}});
};

TEST_F(KubeSchedulerVerbsTest, FilterKeepsOnlyNodesWithAFreeGpuAndNamesNoOther) {
  FilterResult result = service_->filter(args_for(pod_, offered_));
  ASSERT_EQ("", result.error);
  ASSERT_TRUE(result.node_names.has_value());
  // The job starts now: kept exactly where a GPU is free (one node here), on no node without one,
  // and nothing else is answered (kube-scheduler reads reasons only when no node is left).
  ASSERT_EQ(1u, result.node_names->size());
  const std::string kept(result.node_names->front());
  EXPECT_NE(offered_.end(), std::find(offered_.begin(), offered_.end(), kept)) << kept;
  EXPECT_GT(free_gpus(kept), 0) << kept;
  EXPECT_TRUE(result.failed_nodes.empty()) << render(result);
  EXPECT_TRUE(result.failed_and_unresolvable_nodes.empty()) << render(result);
}

TEST_F(KubeSchedulerVerbsTest, FilterOfferedNoFreeGpuSaysWhyForEveryNode) {
  std::vector<std::string> offered;
  for (const std::string& node : offered_) {
    if (free_gpus(node) == 0) offered.push_back(node);
  }
  FilterResult result = service_->filter(args_for(pod_, offered));
  ASSERT_EQ("", result.error);
  EXPECT_TRUE(result.node_names->empty());
  // Every offered node is answered exactly once.
  std::map<std::string, int> answered;
  for (const auto& entry : result.failed_nodes) ++answered[std::string(entry.node)];
  for (const auto& entry : result.failed_and_unresolvable_nodes) {
    ++answered[std::string(entry.node)];
  }
  for (const std::string& node : offered) EXPECT_EQ(1, answered[node]) << node;
  EXPECT_EQ(offered.size(), answered.size());
  // A full GPU node may free up (resolvable) and its reason names what is missing; a node with
  // no GPU at all never can (unresolvable).
  for (const std::string& node : offered) {
    if (gpus_.at(node) > 0) {
      ASSERT_TRUE(result.failed_nodes.contains(node)) << node;
      EXPECT_NE(std::string::npos, result.failed_nodes.at(node).find("nvidia.com/gpu"))
          << result.failed_nodes.at(node);
      EXPECT_NE(std::string::npos,
                result.failed_nodes.at(node).find("0 of " + std::to_string(gpus_.at(node))))
          << result.failed_nodes.at(node);
    } else {
      ASSERT_TRUE(result.failed_and_unresolvable_nodes.contains(node)) << node;
      EXPECT_NE(std::string::npos,
                result.failed_and_unresolvable_nodes.at(node).find("nvidia.com/gpu"));
    }
  }
}

TEST_F(KubeSchedulerVerbsTest, PrioritizeScoresEveryOfferedNodeAndOnlyTheKeptOneAboveZero) {
  FilterResult kept = service_->filter(args_for(pod_, offered_));
  ASSERT_EQ(1u, kept.node_names->size());
  std::vector<HostPriority> scores = service_->prioritize(args_for(pod_, offered_));
  ASSERT_EQ(offered_.size(), scores.size());
  for (std::size_t i = 0; i < scores.size(); ++i) {
    EXPECT_EQ(offered_[i], scores[i].host) << "in the order offered";
    EXPECT_EQ(scores[i].host == kept.node_names->front() ? kMaxExtenderPriority : 0,
              scores[i].score)
        << scores[i].host;
  }
}

TEST_F(KubeSchedulerVerbsTest, BindWhereFilterKeptStartsTheJobAndABindToAFullNodeIsRefused) {
  FilterResult kept = service_->filter(args_for(pod_, offered_));
  ASSERT_EQ(1u, kept.node_names->size());
  EXPECT_NE("", service_->bind(binding("ml-team-a", "resnet-train-0", "gpu-node-2")).error)
      << "gpu-node-2 has no free GPU";
  const std::string node(kept.node_names->front());
  ASSERT_EQ("", service_->bind(binding("ml-team-a", "resnet-train-0", node)).error);
  auto job = service_->job("ml-team-a/resnet-train-0");
  ASSERT_TRUE(job.ok()) << job.message();
  EXPECT_EQ(JobPhase::kRunning, job->record.phase);
  EXPECT_EQ(node, job->record.node);
  EXPECT_EQ("ml-team-a", job->record.user) << "the namespace is the charged user";
}

// kube-scheduler asks which of its proposed victims may go: victims that are not allox's jobs
// come back exactly as proposed; a node whose victims include a running allox job is dropped.
TEST_F(KubeSchedulerVerbsTest, PreemptPassesOtherVictimsAsProposedAndDropsNodesRunningAlloxJobs) {
  PreemptionArgs args;
  args.pod = make_pod("x", "urgent", "nvidia.com/gpu");
  args.victims["gpu-node-1"] = {{"someone-else", "another-one"}, 1};
  args.victims["gpu-node-2"] = {{*taken_gpus_["gpu-node-2"].begin()}, 0};
  args.victims["cpu-node-1"] = {{}, 0};
  PreemptionResult result = service_->preempt(args);
  for (const auto& [node, victims] : args.victims) {
    bool runs_allox_job = false;
    for (const std::string& uid : victims.pod_uids) {
      runs_allox_job = runs_allox_job || taken_gpus_[node].contains(uid);
    }
    if (runs_allox_job) {
      EXPECT_FALSE(result.victims.contains(node)) << node;
      continue;
    }
    ASSERT_TRUE(result.victims.contains(node)) << node;
    EXPECT_EQ(victims.pod_uids, result.victims.at(node).pod_uids) << node;
    EXPECT_EQ(victims.num_pdb_violations, result.victims.at(node).num_pdb_violations) << node;
  }
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
  ASSERT_EQ(1u, admitted) << render(gpu) << render(cpu);
  bool gpu_chosen = gpu.node_names->size() == 1;
  const std::string chosen_pod = gpu_chosen ? "resnet-gpu" : "resnet-cpu";
  const std::string other_pod = gpu_chosen ? "resnet-cpu" : "resnet-gpu";
  const std::string chosen_node = gpu_chosen ? "g" : "c";
  const std::string other_node = gpu_chosen ? "c" : "g";
  const FilterResult& other = gpu_chosen ? cpu : gpu;
  EXPECT_NE(std::string::npos, other.failed_nodes.at(other_node).find("another variant"))
      << render(other);

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
            service->filter(args_for(first, {"g1", "g2"})).node_names->strings());
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
            service->filter(args_for(second, {"g1", "g2"})).node_names->strings());
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

namespace allox::extender {
namespace {

// With real-time request threads, one /filter or /prioritize may cost only so much: a body over
// limits.realtime_filter_body_bytes is refused at its header (routes.h body_limit), and more
// candidate nodes than limits.realtime_node_names get 413 before any is looked at. In the
// normal class both pass as before.
TEST(RealtimeLimitsTest, OneFilterCallIsBoundedOnlyWhenRequestThreadsAreRealtime) {
  testing::ScratchDir dir;
  auto config = testing::make_config({{"g", {{"gpu", 1}}}}, dir.file("s.db"));
  config.limits.realtime_node_names = 5000;
  auto service = make_service(config);
  std::vector<std::string> unknown;
  for (int i = 0; i < 10200; ++i) unknown.push_back("unknown-node-" + std::to_string(i));
  HttpRequest request{"POST", "/filter", "",
                      testing::filter_body(make_pod("lab", "p", "nvidia.com/gpu"), unknown), ""};
  HttpRequest head{"POST", "/filter", "", "", ""};
  HttpRequest bind_head{"POST", "/bind", "", "", ""};
  ASSERT_EQ(RequestClass::kNormal, request_class());
  EXPECT_EQ(200, route(*service, request).status);
  EXPECT_EQ(static_cast<std::size_t>(-1), body_limit(*service, head));

  set_request_class(RequestClass::kRealtime);
  const HttpReply refused = route(*service, request);
  const std::size_t filter_limit = body_limit(*service, head);
  const std::size_t bind_limit = body_limit(*service, bind_head);
  set_request_class(RequestClass::kNormal);
  EXPECT_EQ(413, refused.status);
  EXPECT_NE(std::string::npos, refused.body.find("10200 candidate nodes")) << refused.body;
  EXPECT_NE(std::string::npos, refused.body.find("limits.realtime_node_names")) << refused.body;
  EXPECT_EQ(config.limits.realtime_filter_body_bytes, filter_limit);
  EXPECT_EQ(static_cast<std::size_t>(-1), bind_limit);
  EXPECT_LT(refused.body.size(), 200u);  // not 10,200 reasons
}

}  // namespace
}  // namespace allox::extender
