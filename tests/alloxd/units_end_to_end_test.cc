// Multi-unit pods end to end: nodes with 2 and 4 GPUs and CPU nodes, 1-, 2- and 4-GPU jobs
// (some with a CPU variant too) and one 8-GPU pod no node can hold, through the emulator's fake
// API server and kube-scheduler v1.28 emulator (its NodeResourcesFit counts quantities), fake
// kubelets and an in-process alloxd watching the API server, on a stepped clock. Pods are created
// gated (allox.io/queue) and released by alloxd.
//
// What is checked comes from the API server's own records (a subscriber that sees every pod
// write), not from alloxd's reports:
//   - no node is ever over-committed: at every write, the requests (nvidia.com/gpu and cpu) of
//     the pods bound to a node and not yet finished add up to at most its allocatable;
//   - every job is bound exactly once and finishes;
//   - the 8-GPU pod is never ungated nor bound, alloxd's GET /v1/jobs/{id} shows it parked with
//     its reason, and a Parked event with that reason was posted to it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "alloxd/http/http_server.h"
#include "alloxd/service.h"
#include "fairness/policy.h"
#include "kube/quantity.h"
#include "kubesim/fake_api_server.h"
#include "kubesim/replay.h"
#include "kubesim/scheduler_config.h"
#include "kubesim/sim_clock.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

using nlohmann::json;

constexpr char kToken[] = "units-end-to-end";
constexpr char kNamespace[] = "demo";
const char* const kResources[] = {"nvidia.com/gpu", "cpu"};

std::string source(const std::string& relative) {
  return std::string(ALLOX_SOURCE_DIR) + "/" + relative;
}

// A pod's requests summed over its containers, of the resources checked here.
std::map<std::string, double> requests_of(const json& pod) {
  std::map<std::string, double> total;
  for (const json& container : pod["spec"].value("containers", json::array())) {
    const json requests =
        container.value("resources", json::object()).value("requests", json::object());
    for (const char* resource : kResources) {
      if (!requests.contains(resource)) continue;
      auto amount = kube::parse_quantity(requests[resource].get<std::string>());
      if (amount) total[resource] += *amount;
    }
  }
  return total;
}

// What the API server's store shows, write by write: the pods holding each node's resources (bound
// and not finished), any moment they exceed its allocatable, and the bindings per job.
class NodeLedger {
 public:
  NodeLedger(emulator::ApiObjects& objects,
             std::map<std::string, std::map<std::string, double>> allocatable)
      : objects_(objects), allocatable_(std::move(allocatable)) {
    id_ = objects_.subscribe([this](const emulator::Change& change) { observe(change); });
  }
  ~NodeLedger() { objects_.unsubscribe(id_); }
  std::vector<std::string> overcommits() const {
    std::lock_guard lock(mu_);
    return overcommits_;
  }
  std::map<std::string, int> binds() const {
    std::lock_guard lock(mu_);
    return binds_;
  }
  // The most of each resource ever held at once on each node.
  std::map<std::string, std::map<std::string, double>> peaks() const {
    std::lock_guard lock(mu_);
    return peaks_;
  }

 private:
  static std::string node_of(const emulator::ObjectPtr& pod) {
    return pod ? (*pod)["spec"].value("nodeName", "") : std::string();
  }
  static bool holds(const emulator::ObjectPtr& pod) {
    if (!pod || node_of(pod).empty()) return false;
    const std::string phase = (*pod).value("status", json::object()).value("phase", "");
    return phase != "Succeeded" && phase != "Failed";
  }
  void observe(const emulator::Change& change) {
    if (change.resource != &emulator::pods_resource()) return;
    const emulator::ObjectPtr& some = change.after ? change.after : change.before;
    const json& meta = (*some)["metadata"];
    const std::string key = meta.value("namespace", "") + "/" + meta.value("name", "");
    std::lock_guard lock(mu_);
    if (node_of(change.before).empty() && !node_of(change.after).empty()) {
      ++binds_[meta.value("annotations", json::object()).value("allox.io/job", "?")];
    }
    held_.erase(key);
    if (holds(change.after)) held_[key] = {node_of(change.after), requests_of(*change.after)};
    std::map<std::string, std::map<std::string, double>> used;
    for (const auto& [pod, holding] : held_) {
      for (const auto& [resource, amount] : holding.second) used[holding.first][resource] += amount;
    }
    for (const auto& [node, amounts] : used) {
      for (const auto& [resource, amount] : amounts) {
        double& peak = peaks_[node][resource];
        peak = std::max(peak, amount);
        const double has = allocatable_[node][resource];
        if (amount > has + 1e-9) {
          overcommits_.push_back(node + ": " + std::to_string(amount) + " " + resource + " of " +
                                 std::to_string(has) + " after a write of " + key);
        }
      }
    }
  }

  emulator::ApiObjects& objects_;
  std::map<std::string, std::map<std::string, double>> allocatable_;
  int id_ = 0;
  mutable std::mutex mu_;
  std::map<std::string, std::pair<std::string, std::map<std::string, double>>> held_;
  std::map<std::string, std::map<std::string, double>> peaks_;
  std::vector<std::string> overcommits_;
  std::map<std::string, int> binds_;
};

// Jobs of 1, 2 and 4 GPUs arriving over 20 minutes; every third also has a CPU variant.
std::vector<emulator::ReplayJob> workload() {
  std::vector<emulator::ReplayJob> jobs;
  const int gpus[] = {2, 1, 1, 4, 1, 2, 2, 1, 4, 1, 2, 1, 1, 2, 4, 1};
  for (int i = 0; i < static_cast<int>(std::size(gpus)); ++i) {
    emulator::ReplayJob job;
    job.id = "job" + std::to_string(i);
    job.user = "queue" + std::to_string(i % 3);
    job.arrival = 75.0 * i;
    const double seconds = 300 + 97.0 * (i % 5);
    job.true_time["gpu"] = seconds;
    job.estimate["gpu"] = seconds;
    job.units["gpu"] = gpus[i];
    if (i % 3 == 0) {
      job.true_time["cpu"] = seconds * 4;
      job.estimate["cpu"] = seconds * 4;
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

TEST(UnitsEndToEndTest, NoNodeIsOvercommittedAndAPodLargerThanEveryNodeIsParked) {
  testing::ScratchDir dir;
  emulator::SimClock clock{emulator::SimClock::Stepped{}};
  auto config = load_extender_config(source("examples/alloxd.yaml"));
  ASSERT_TRUE(config.ok()) << config.message();
  auto scheduler =
      emulator::load_scheduler_configuration(source("manifests/scheduler-config.yaml"));
  ASSERT_TRUE(scheduler.ok()) << scheduler.message();

  emulator::FakeApiServerOptions api_options;
  api_options.token = kToken;
  api_options.clock = [&clock] { return clock.now(); };
  auto api = emulator::FakeApiServer::start(api_options);
  ASSERT_TRUE(api.ok()) << api.message();
  emulator::ApiObjects& objects = (*api)->objects();

  emulator::ReplayOptions options;
  options.scheduler = *scheduler;
  options.scheduler_name = scheduler->scheduler_names.front();
  options.pod_namespace = kNamespace;
  options.gated = true;
  for (const auto& r : config->devices.resources) options.resource_of[r.device] = r.resource;
  options.cpu_cores = config->devices.cores_per_machine;
  options.max_simulated_s = 48 * 3600;
  const std::vector<NodeInventory> nodes = {{"node-a", {{"gpu", 2}, {"cpu", 1}}},
                                            {"node-b", {{"gpu", 2}}},
                                            {"node-d", {{"gpu", 4}}},
                                            {"node-c", {{"cpu", 2}}}};
  std::map<std::string, std::map<std::string, double>> allocatable;
  for (const NodeInventory& node : nodes) {
    const auto quantities = emulator::node_allocatable(node.machines, options);
    (*api)->add_node(node.name, quantities);
    for (const char* resource : kResources) {
      auto it = quantities.find(resource);
      if (it == quantities.end()) continue;
      auto amount = kube::parse_quantity(it->second);
      ASSERT_TRUE(amount.ok()) << it->second;
      allocatable[node.name][resource] = *amount;
    }
  }

  config->database = dir.file("alloxd.db");
  config->apiserver = ApiServerConfig{(*api)->url(), kToken, "", std::nullopt};
  config->scheduler_name = options.scheduler_name;
  PolicyOptions policy_options;
  policy_options.alpha = config->alpha;
  policy_options.starvation_bound = config->starvation_bound;
  auto policy = make_policy(config->policy, policy_options);
  ASSERT_TRUE(policy.ok()) << policy.message();
  ServiceOptions service_options;
  service_options.clock = [&clock] { return clock.now(); };
  auto service = ExtenderService::create(*config, std::move(*policy), nullptr, service_options);
  ASSERT_TRUE(service.ok()) << service.message();
  (*service)->start();
  HttpServerOptions http;
  http.port = 0;
  auto server = HttpServer::start(**service, http);
  ASSERT_TRUE(server.ok()) << server.message();
  for (auto& extender : options.scheduler.extenders) extender.url_prefix = (*server)->url();
  options.quiet = [&] {
    if ((*service)->busy()) return false;
    std::map<std::string, std::string> held;
    for (const emulator::ObjectPtr& pod : objects.objects(emulator::pods_resource())) {
      if ((*pod)["spec"].value("schedulerName", "") != options.scheduler_name) continue;
      const json& meta = (*pod)["metadata"];
      held[meta.value("namespace", "") + "/" + meta.value("name", "")] =
          meta.value("resourceVersion", "");
    }
    return (*service)->observed_pods() == held && !(*service)->busy();
  };

  // The pod no node can hold, created before the replay starts, gated as the replay's are.
  const std::vector<emulator::ReplayJob> jobs = workload();
  NodeLedger ledger(objects, allocatable);
  {
    json huge = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata",
         {{"name", "huge-gpu"},
          {"namespace", kNamespace},
          {"annotations",
           {{"allox.io/job", "huge"}, {"allox.io/user", "queue0"}, {"allox.io/time.gpu", "600"}}}}},
        {"spec",
         {{"schedulerName", options.scheduler_name},
          {"schedulingGates", json::array({{{"name", "allox.io/queue"}}})},
          {"containers", json::array({{{"name", "main"},
                                       {"image", "registry.invalid/train:latest"},
                                       {"resources",
                                        {{"requests", {{"nvidia.com/gpu", "8"}, {"cpu", "8"}}},
                                         {"limits", {{"nvidia.com/gpu", "8"}}}}}}})}}}};
    auto created = objects.create(emulator::pods_resource(), kNamespace, huge);
    ASSERT_FALSE(std::holds_alternative<emulator::ApiError>(created));
  }
  auto summary = emulator::replay_jobs(objects, clock, jobs, options);
  ASSERT_TRUE(summary.ok()) << summary.message();

  // alloxd released a pod only onto a node with its units free: kube-scheduler never found a
  // released pod unschedulable (a 2-GPU pod released where one GPU was free would be).
  EXPECT_EQ(0u, summary->scheduler.unschedulable);
  EXPECT_EQ(0u, summary->scheduler.timeouts);
  // No node ever held more than it has, and the wide jobs did share nodes with others.
  const std::vector<std::string> overcommits = ledger.overcommits();
  EXPECT_TRUE(overcommits.empty())
      << overcommits.size() << " over-commits, e.g. " << overcommits.front();
  const auto peaks = ledger.peaks();
  for (const auto& [node, amounts] : peaks) {
    std::printf("%s: at most %.0f nvidia.com/gpu and %.0f cpu held at once\n", node.c_str(),
                amounts.count("nvidia.com/gpu") ? amounts.at("nvidia.com/gpu") : 0.0,
                amounts.count("cpu") ? amounts.at("cpu") : 0.0);
  }
  std::printf("%zu jobs over %.0f simulated s in %.1f s wall\n", summary->jobs.size(),
              summary->simulated_s, summary->wall_s);
  EXPECT_EQ(4, peaks.at("node-d").at("nvidia.com/gpu")) << "the 4-GPU jobs ran on node-d";
  // Every job bound once and finished; the huge one never.
  const std::map<std::string, int> binds = ledger.binds();
  ASSERT_EQ(jobs.size(), summary->jobs.size());
  for (const emulator::ReplayedJob& job : summary->jobs) {
    auto it = binds.find(job.id);
    EXPECT_TRUE(it != binds.end() && it->second == 1)
        << job.id << " was bound " << (it == binds.end() ? 0 : it->second) << " times";
    EXPECT_GT(job.finish, 0) << job.id << " never finished";
  }
  EXPECT_EQ(0u, binds.count("huge"));
  EXPECT_EQ(jobs.size(), binds.size());
  // The 4-GPU jobs ran on the one node that has 4 GPUs, whole.
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].units.at("gpu") == 4 && summary->jobs[i].device == "gpu") {
      EXPECT_EQ("node-d", summary->jobs[i].node) << jobs[i].id;
    }
  }

  // The huge pod: still gated, unbound, parked with its reason in alloxd and in an event.
  auto huge = objects.get(emulator::pods_resource(), kNamespace, "huge-gpu");
  ASSERT_TRUE(std::holds_alternative<emulator::ObjectPtr>(huge));
  const json& pod = *std::get<emulator::ObjectPtr>(huge);
  EXPECT_EQ("", pod["spec"].value("nodeName", ""));
  EXPECT_EQ(1u, pod["spec"].value("schedulingGates", json::array()).size()) << pod.dump();
  const std::string reason =
      "no node can hold it: 8 nvidia.com/gpu on one node (pod demo/huge-gpu), the largest node "
      "has 4";
  auto reply = testing::http_request((*server)->url(), "GET", "/v1/jobs/demo/huge");
  ASSERT_EQ(200, reply.status) << reply.body;
  EXPECT_EQ(reason, json::parse(reply.body).value("parked", "")) << reply.body;
  std::vector<std::string> parked_events;
  for (const emulator::ObjectPtr& event : objects.objects(emulator::events_resource())) {
    const json& e = *event;
    if (e.value("reason", "") == "Parked" &&
        e.value("involvedObject", json::object()).value("name", "") == "huge-gpu") {
      parked_events.push_back(e.value("message", ""));
    }
  }
  ASSERT_FALSE(parked_events.empty()) << "no Parked event for the huge pod";
  EXPECT_EQ("allox cannot schedule job demo/huge: " + reason, parked_events.front());

  (*server)->stop();
  (*service)->stop();
  (*api)->stop();
}

}  // namespace
}  // namespace allox::extender
