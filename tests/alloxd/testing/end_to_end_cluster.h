// What alloxd's end-to-end tests share: an emulated cluster (the fake API server with a node
// inventory, labelled as the config's GPU models say; the kube-scheduler v1.28 emulator's options;
// an in-process alloxd watching the API server, and its HTTP server) on a stepped clock, and a
// ledger of the API server's own records (who was bound where, what each node held at once).
// The tests check what the cluster recorded, not what alloxd reports of itself.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "alloxd/config.h"
#include "alloxd/http/http_server.h"
#include "alloxd/service.h"
#include "fairness/policy.h"
#include "kubesim/fake_api_server.h"
#include "kubesim/replay.h"
#include "kubesim/sim_clock.h"
#include "tests/alloxd/testing/changes.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender::testing {

// The resources the ledger counts on a node.
inline constexpr const char* kLedgerResources[] = {"nvidia.com/gpu", "cpu"};

// What the API server's store shows, write by write: each job's bindings (pod, node, and the
// node the pod was pinned to when it was bound: on the gate path, the plan's node), the
// pods holding each node's resources (bound and not finished), the most of each resource a node
// ever held at once, and any moment the held requests exceed the node's allocatable.
class ApiLedger {
 public:
  struct Bound {
    std::string pod, node;
    std::string pinned;  // the node its required affinity names (alloxd's pin); empty: none
  };
  // A pod taking its node (bound) or letting go of it (ended or deleted while bound), in the
  // order the store wrote them, at the store's clock.
  struct Transition {
    std::string job, pod, node;
    bool bound = false;
    double at = 0;
  };
  // allocatable: node -> resource -> amount (of kLedgerResources); clock: the store's time.
  ApiLedger(emulator::ApiObjects& objects,
            std::map<std::string, std::map<std::string, double>> allocatable,
            std::function<double()> clock = {});
  ~ApiLedger();
  ApiLedger(const ApiLedger&) = delete;
  ApiLedger& operator=(const ApiLedger&) = delete;

  std::vector<std::string> overcommits() const;
  std::map<std::string, std::vector<Bound>> bound() const;  // job (allox.io/job) -> bindings
  std::map<std::string, std::map<std::string, double>> peaks() const;
  std::vector<Transition> transitions() const;

 private:
  void observe(const emulator::Change& change);

  emulator::ApiObjects& objects_;
  std::map<std::string, std::map<std::string, double>> allocatable_;
  int id_ = 0;
  mutable std::mutex mu_;
  std::map<std::string, std::pair<std::string, std::map<std::string, double>>> held_;
  std::map<std::string, std::map<std::string, double>> peaks_;
  std::vector<std::string> overcommits_;
  std::map<std::string, std::vector<Bound>> bound_;
  std::function<double()> clock_;
  std::vector<Transition> transitions_;
};

// The emulated cluster with alloxd in process. start() fails the calling test (and returns
// null) when a piece cannot start; the destructor stops them all.
class EndToEndCluster {
 public:
  // config: alloxd's (its database and apiserver are set here); nodes: the API server's
  // inventory; gated: pods are created with the allox.io/queue gate; node_patches: node name ->
  // a merge patch of that node applied before alloxd starts (spec's taints and unschedulable,
  // metadata's labels).
  static std::unique_ptr<EndToEndCluster> start(
      ExtenderConfig config, const std::vector<NodeInventory>& nodes,
      const PolicyOptions& policy_options, bool gated,
      const std::map<std::string, nlohmann::json>& node_patches = {});
  ~EndToEndCluster();
  EndToEndCluster(const EndToEndCluster&) = delete;
  EndToEndCluster& operator=(const EndToEndCluster&) = delete;

  emulator::ApiObjects& objects() { return api_->objects(); }
  emulator::FakeApiServer& api() { return *api_; }  // its fault injection
  emulator::SimClock& clock() { return clock_; }
  // The replay's options: scheduler (its extender at alloxd), resources and labels of the
  // config's devices, namespace, gate, and a quiet() that waits for alloxd to see every pod.
  emulator::ReplayOptions& options() { return options_; }
  const std::string& url() const { return url_; }
  const std::string& pod_namespace() const { return options_.pod_namespace; }
  // node -> the GPU model the API server's node object is labelled as ("none": no model label).
  const std::map<std::string, std::string>& node_model() const { return node_model_; }
  ApiLedger& ledger() { return *ledger_; }

  Expected<emulator::ReplaySummary> replay(const std::vector<emulator::ReplayJob>& jobs);
  // A gated pod of allox's scheduler, as the replay makes them, requesting `gpus` of
  // nvidia.com/gpu (and `cores` of cpu) and naming no GPU model; created in the API server.
  void create_gpu_pod(const std::string& name, const std::string& job, int gpus,
                      const std::map<std::string, std::string>& annotations,
                      const std::string& cores = "8");
  // The messages of the events with `reason` posted to pod `name`.
  std::vector<std::string> event_messages(const std::string& reason, const std::string& name);
  // GET `path` from alloxd's HTTP server.
  Response get(const std::string& path) const;
  // Fails the calling test unless pod `pod` of job `job` (both in the replay's namespace) is
  // still gated and unbound, `/v1/jobs/{job}` says it is parked for `reason`, and a Parked
  // event on the pod says so.
  void expect_parked(const std::string& job, const std::string& pod, const std::string& reason);

 private:
  EndToEndCluster() = default;

  ScratchDir dir_;
  emulator::SimClock clock_{emulator::SimClock::Stepped{}};
  std::unique_ptr<emulator::FakeApiServer> api_;
  Changes changes_;  // alloxd's plans and watch changes, for start() to wait until it is ready
  std::unique_ptr<ExtenderService> service_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<ApiLedger> ledger_;
  emulator::ReplayOptions options_;
  std::map<std::string, std::string> node_model_;
  std::string url_;
};

}  // namespace allox::extender::testing
