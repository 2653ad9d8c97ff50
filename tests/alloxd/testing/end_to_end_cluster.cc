// The emulated cluster and the API server's ledger of the end-to-end tests
// (end_to_end_cluster.h).
#include "tests/alloxd/testing/end_to_end_cluster.h"

#include "kubesim/patches.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <variant>

#include "kube/quantity.h"
#include "kubesim/scheduler_config.h"

namespace allox::extender::testing {
namespace {

using nlohmann::json;

constexpr char kToken[] = "end-to-end";

// A pod's requests summed over its containers, of the resources the ledger counts.
std::map<std::string, double> requests_of(const json& pod) {
  std::map<std::string, double> total;
  for (const json& container : pod["spec"].value("containers", json::array())) {
    const json requests =
        container.value("resources", json::object()).value("requests", json::object());
    for (const char* resource : kLedgerResources) {
      if (!requests.contains(resource)) continue;
      auto amount = kube::parse_quantity(requests[resource].get<std::string>());
      if (amount) total[resource] += *amount;
    }
  }
  return total;
}

std::string node_of(const emulator::ObjectPtr& pod) {
  return pod ? (*pod)["spec"].value("nodeName", "") : std::string();
}

// Bound to a node and not finished: its requests count there.
bool holds(const emulator::ObjectPtr& pod) {
  if (!pod || node_of(pod).empty()) return false;
  const std::string phase = (*pod).value("status", json::object()).value("phase", "");
  return phase != "Succeeded" && phase != "Failed";
}

// The node a required node affinity term pins the pod to (metadata.name In [node]), as alloxd's
// gate removal writes it; empty when there is none.
std::string pinned_node(const json& pod) {
  const json required =
      pod["spec"]
          .value("affinity", json::object())
          .value("nodeAffinity", json::object())
          .value("requiredDuringSchedulingIgnoredDuringExecution", json::object());
  for (const json& term : required.value("nodeSelectorTerms", json::array())) {
    for (const json& field : term.value("matchFields", json::array())) {
      const json values = field.value("values", json::array());
      if (field.value("key", "") == "metadata.name" && field.value("operator", "") == "In" &&
          values.size() == 1 && values[0].is_string()) {
        return values[0].get<std::string>();
      }
    }
  }
  return "";
}

}  // namespace

ApiLedger::ApiLedger(emulator::ApiObjects& objects,
                     std::map<std::string, std::map<std::string, double>> allocatable,
                     std::function<double()> clock)
    : objects_(objects), allocatable_(std::move(allocatable)), clock_(std::move(clock)) {
  id_ = objects_.subscribe([this](const emulator::Change& change) { observe(change); });
}

ApiLedger::~ApiLedger() {
  objects_.unsubscribe(id_);
}

std::vector<std::string> ApiLedger::overcommits() const {
  std::lock_guard lock(mu_);
  return overcommits_;
}

std::map<std::string, std::vector<ApiLedger::Bound>> ApiLedger::bound() const {
  std::lock_guard lock(mu_);
  return bound_;
}

std::vector<ApiLedger::Transition> ApiLedger::transitions() const {
  std::lock_guard lock(mu_);
  return transitions_;
}

std::map<std::string, std::map<std::string, double>> ApiLedger::peaks() const {
  std::lock_guard lock(mu_);
  return peaks_;
}

void ApiLedger::observe(const emulator::Change& change) {
  if (change.resource != &emulator::pods_resource()) return;
  const emulator::ObjectPtr& some = change.after ? change.after : change.before;
  const json& meta = (*some)["metadata"];
  const std::string key = meta.value("namespace", "") + "/" + meta.value("name", "");
  std::lock_guard lock(mu_);
  const std::string job = meta.value("annotations", json::object()).value("allox.io/job", "?");
  const double at = clock_ ? clock_() : 0;
  if (node_of(change.before).empty() && !node_of(change.after).empty()) {
    bound_[job].push_back(
        {meta.value("name", ""), node_of(change.after), pinned_node(*change.after)});
    transitions_.push_back({job, meta.value("name", ""), node_of(change.after), true, at});
  }
  if (held_.count(key) && !holds(change.after)) {
    transitions_.push_back({job, meta.value("name", ""), held_.at(key).first, false, at});
  }
  held_.erase(key);
  if (holds(change.after)) held_[key] = {node_of(change.after), requests_of(*change.after)};
  // Every node's holding after this write, against its allocatable.
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

std::unique_ptr<EndToEndCluster> EndToEndCluster::start(
    ExtenderConfig config, const std::vector<NodeInventory>& nodes,
    const PolicyOptions& policy_options, bool gated,
    const std::map<std::string, json>& node_patches) {
  std::unique_ptr<EndToEndCluster> cluster(new EndToEndCluster());
  emulator::SimClock& clock = cluster->clock_;
  auto scheduler = emulator::load_scheduler_configuration(std::string(ALLOX_SOURCE_DIR) +
                                                          "/manifests/scheduler-config.yaml");
  EXPECT_TRUE(scheduler.ok()) << scheduler.message();
  if (!scheduler) return nullptr;
  emulator::FakeApiServerOptions api_options;
  api_options.token = kToken;
  api_options.clock = [&clock] { return clock.now(); };
  auto api = emulator::FakeApiServer::start(api_options);
  EXPECT_TRUE(api.ok()) << api.message();
  if (!api) return nullptr;
  cluster->api_ = std::move(*api);

  emulator::ReplayOptions& options = cluster->options_;
  options.scheduler = *scheduler;
  options.scheduler_name = scheduler->scheduler_names.front();
  options.pod_namespace = "demo";
  options.gated = gated;
  options.max_simulated_s = 48 * 3600;
  for (const auto& r : config.devices.resources) {
    options.resource_of[r.device] = r.resource;
    for (const auto& rule : r.node_labels) {
      options.resource_of[rule.device] = r.resource;
      options.label_of.emplace(rule.device, std::pair(rule.label, rule.value));
    }
  }
  options.cpu_cores = config.devices.cores_per_machine;
  // The nodes, labelled for their models; what each may hold, for the ledger.
  std::map<std::string, std::map<std::string, double>> allocatable;
  for (const NodeInventory& node : nodes) {
    const auto quantities = emulator::node_allocatable(node.machines, options);
    cluster->api_->add_node(node.name, quantities, emulator::node_labels(node.machines, options));
    if (auto patch = node_patches.find(node.name); patch != node_patches.end()) {
      auto patched = cluster->objects().patch(emulator::nodes_resource(), "", node.name,
                                              emulator::PatchType::kMerge, patch->second.dump(),
                                              false);
      const auto* error = std::get_if<emulator::ApiError>(&patched);
      EXPECT_EQ(nullptr, error) << node.name << ": " << error->message;
    }
    for (const char* resource : kLedgerResources) {
      auto it = quantities.find(resource);
      if (it == quantities.end()) continue;
      auto amount = kube::parse_quantity(it->second);
      EXPECT_TRUE(amount.ok()) << node.name << " " << resource << ": " << it->second;
      if (amount) allocatable[node.name][resource] = *amount;
    }
  }
  // Each node's model as the API server's node object labels it.
  for (const emulator::ObjectPtr& node : cluster->objects().objects(emulator::nodes_resource())) {
    const json labels = (*node)["metadata"].value("labels", json::object());
    std::string model = "none";
    for (const auto& [type, label] : options.label_of) {
      if (labels.value(label.first, "") == label.second) model = type;
    }
    cluster->node_model_[(*node)["metadata"].value("name", "")] = model;
  }
  cluster->ledger_ = std::make_unique<ApiLedger>(cluster->objects(), std::move(allocatable),
                                                 [&clock] { return clock.now(); });

  config.database = cluster->dir_.file("alloxd.db");
  config.apiserver = ApiServerConfig{cluster->api_->url(), kToken, "", std::nullopt};
  config.scheduler_name = options.scheduler_name;
  auto policy = make_policy(config.policy, policy_options);
  EXPECT_TRUE(policy.ok()) << policy.message();
  if (!policy) return nullptr;
  ServiceOptions service_options;
  service_options.clock = [&clock] { return clock.now(); };
  service_options.on_change = cluster->changes_.notifier();
  auto service = ExtenderService::create(config, std::move(*policy), nullptr, service_options);
  EXPECT_TRUE(service.ok()) << service.message();
  if (!service) return nullptr;
  cluster->service_ = std::move(*service);
  cluster->service_->start();
  // Ready: the API server's nodes and pods listed and a first plan published, so what a test
  // reads first (the inventory, closed nodes) is the API server's, not a race with the watch.
  ExtenderService& started = *cluster->service_;
  EXPECT_TRUE(cluster->changes_.until([&started] { return started.ready(); }))
      << "alloxd not ready";
  HttpServerOptions http;
  http.port = 0;
  auto server = HttpServer::start(*cluster->service_, http);
  EXPECT_TRUE(server.ok()) << server.message();
  if (!server) return nullptr;
  cluster->server_ = std::move(*server);
  cluster->url_ = cluster->server_->url();
  for (auto& extender : options.scheduler.extenders) extender.url_prefix = cluster->url_;
  // Quiet once alloxd is idle and has observed every pod of its scheduler as the store has it.
  ExtenderService& alloxd = *cluster->service_;
  emulator::ApiObjects& objects = cluster->objects();
  const std::string scheduler_name = options.scheduler_name;
  options.quiet = [&alloxd, &objects, scheduler_name] {
    if (alloxd.busy()) return false;
    std::map<std::string, std::string> held;
    for (const emulator::ObjectPtr& pod : objects.objects(emulator::pods_resource())) {
      if ((*pod)["spec"].value("schedulerName", "") != scheduler_name) continue;
      const json& meta = (*pod)["metadata"];
      held[meta.value("namespace", "") + "/" + meta.value("name", "")] =
          meta.value("resourceVersion", "");
    }
    return alloxd.observed_pods() == held && !alloxd.busy();
  };
  return cluster;
}

EndToEndCluster::~EndToEndCluster() {
  ledger_.reset();
  if (server_) server_->stop();
  if (service_) service_->stop();
  if (api_) api_->stop();
}

Expected<emulator::ReplaySummary> EndToEndCluster::replay(
    const std::vector<emulator::ReplayJob>& jobs) {
  return emulator::replay_jobs(objects(), clock_, jobs, options_);
}

void EndToEndCluster::create_gpu_pod(const std::string& name, const std::string& job, int gpus,
                                     const std::map<std::string, std::string>& annotations,
                                     const std::string& cores) {
  json notes = {{"allox.io/job", job}};
  for (const auto& [key, value] : annotations) notes[key] = value;
  const std::string count = std::to_string(gpus);
  json spec = {
      {"schedulerName", options_.scheduler_name},
      {"containers", json::array({{{"name", "main"},
                                   {"image", "registry.invalid/train:latest"},
                                   {"resources",
                                    {{"requests", {{"nvidia.com/gpu", count}, {"cpu", cores}}},
                                     {"limits", {{"nvidia.com/gpu", count}}}}}}})}};
  if (options_.gated) spec["schedulingGates"] = json::array({{{"name", "allox.io/queue"}}});
  const json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", options_.pod_namespace}, {"annotations", notes}}},
      {"spec", spec}};
  auto created = objects().create(emulator::pods_resource(), options_.pod_namespace, pod);
  EXPECT_FALSE(std::holds_alternative<emulator::ApiError>(created)) << "creating pod " << name;
}

std::vector<std::string> EndToEndCluster::event_messages(const std::string& reason,
                                                         const std::string& name) {
  std::vector<std::string> out;
  for (const emulator::ObjectPtr& event : objects().objects(emulator::events_resource())) {
    const json& e = *event;
    if (e.value("reason", "") == reason &&
        e.value("involvedObject", json::object()).value("name", "") == name) {
      out.push_back(e.value("message", ""));
    }
  }
  return out;
}

Response EndToEndCluster::get(const std::string& path) const {
  return http_request(url_, "GET", path);
}

void EndToEndCluster::expect_parked(const std::string& job, const std::string& pod,
                                    const std::string& reason) {
  const std::string ns = pod_namespace();
  auto object = objects().get(emulator::pods_resource(), ns, pod);
  ASSERT_TRUE(std::holds_alternative<emulator::ObjectPtr>(object)) << pod;
  const json& seen = *std::get<emulator::ObjectPtr>(object);
  EXPECT_EQ("", seen["spec"].value("nodeName", ""));
  EXPECT_EQ(1u, seen["spec"].value("schedulingGates", json::array()).size()) << seen.dump();
  auto reply = get("/v1/jobs/" + ns + "/" + job);
  ASSERT_EQ(200, reply.status) << reply.body;
  EXPECT_EQ(reason, json::parse(reply.body).value("parked", "")) << reply.body;
  const std::vector<std::string> parked = event_messages("Parked", pod);
  ASSERT_FALSE(parked.empty()) << "no Parked event for " << pod;
  EXPECT_EQ("allox cannot schedule job " + ns + "/" + job + ": " + reason, parked.front());
}

}  // namespace allox::extender::testing
