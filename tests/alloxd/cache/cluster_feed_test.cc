// alloxd/cache/cluster_feed.h: what a (re-)list does to the book. A list is the whole truth about
// the pods the watch had shown (one it lacks was deleted), but not about a pod the book learnt
// of elsewhere: /filter registers a pod the moment kube-scheduler asks, which may be before the
// watch brings it in and after the list was taken. Dropping such a variant would let a /bind of
// it find nothing (a job once ran twice from a variant missing from the book at /bind).
#include "alloxd/cache/cluster_feed.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "alloxd/control/cluster_api.h"
#include "tests/alloxd/testing/test_support.h"

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

// The informer's own handler: a burst of waiting pods read at once is registered at
// on_caught_up, in one store transaction; until then the feed is busy. A pod whose registration
// is pending is registered before anything else reads or changes it, so the order of the watch
// is kept where it matters.
TEST(ClusterFeedTest, AWatchBurstOfWaitingPodsIsRegisteredWhenTheWatchCatchesUp) {
  Fixture f;
  kube::InformerHandler& watch = f.feed->pod_watch_handler();
  watch.on_replace({});
  watch.on_upsert(variant("a-gpu", "a", "nvidia.com/gpu"));
  watch.on_upsert(variant("a-cpu", "a", "cpu"));
  json relabelled = variant("a-cpu", "a", "cpu");
  relabelled["metadata"]["labels"]["team"] = "x";
  watch.on_upsert(relabelled);  // the same pod again: what pended is registered first
  watch.on_upsert(variant("b-gpu", "b", "nvidia.com/gpu"));
  EXPECT_TRUE(f.feed->busy());
  EXPECT_EQ((std::vector<std::string>{"lab/a-cpu", "lab/a-gpu"}), f.variants("lab/a"));
  EXPECT_TRUE(f.variants("lab/b").empty());
  watch.on_caught_up();
  EXPECT_FALSE(f.feed->busy());
  EXPECT_EQ(std::vector<std::string>{"lab/b-gpu"}, f.variants("lab/b"));

  // A waiting pod, then the same pod bound: the bind finds its job registered.
  watch.on_upsert(variant("c-gpu", "c", "nvidia.com/gpu"));
  json bound = variant("c-gpu", "c", "nvidia.com/gpu");
  bound["spec"]["nodeName"] = "g1";
  watch.on_upsert(bound);
  EXPECT_EQ(std::optional<std::string>("lab/c-gpu"), f.planner->read([](const JobBook& book) {
    const BookJob* job = book.job("lab/c");
    return job != nullptr && job->record.phase == JobPhase::kRunning
               ? std::optional<std::string>(job->record.pod_namespace + "/" + job->record.pod_name)
               : std::nullopt;
  }));
  watch.on_caught_up();

  // All of it is in the store: a planner restored from it holds the same jobs.
  f.feed.reset();
  f.planner.reset();
  auto restored =
      Planner::create(f.config, make_policy("fifo", PolicyOptions{}).value(), f.metrics);
  ASSERT_TRUE(restored.ok()) << restored.message();
  f.planner = std::move(*restored);
  EXPECT_EQ((std::vector<std::string>{"lab/a-cpu", "lab/a-gpu"}), f.variants("lab/a"));
  EXPECT_EQ(std::vector<std::string>{"lab/b-gpu"}, f.variants("lab/b"));
}

JobPhase phase_of(const Planner& planner, const std::string& job) {
  return planner.read([&](const JobBook& book) {
    const BookJob* j = book.job(job);
    return j == nullptr ? JobPhase::kRemoved : j->record.phase;
  });
}

// The pods that ended in a burst are completed at on_caught_up, in one store transaction, each
// job once (its pod's Succeeded and then its deletion are one end); until then the feed is busy.
// A start seen in the same burst that needs a machine one of them frees finds it free.
TEST(ClusterFeedTest, AWatchBurstOfEndedPodsIsCompletedOnceWhenTheWatchCatchesUp) {
  Fixture f;
  f.feed->node_handler().on_replace({testing::make_node("g1", "1"), testing::make_node("g2", "1")});
  kube::InformerHandler& watch = f.feed->pod_watch_handler();
  auto on = [](json pod, const std::string& node, const std::string& phase) {
    pod["spec"]["nodeName"] = node;
    if (!phase.empty()) pod["status"]["phase"] = phase;
    return pod;
  };
  const json a = variant("a-gpu", "a", "nvidia.com/gpu");
  const json b = variant("b-gpu", "b", "nvidia.com/gpu");
  watch.on_replace({on(a, "g1", "Running"), on(b, "g2", "Running")});
  ASSERT_EQ(JobPhase::kRunning, phase_of(*f.planner, "lab/a"));
  ASSERT_EQ(JobPhase::kRunning, phase_of(*f.planner, "lab/b"));

  watch.on_upsert(on(a, "g1", "Succeeded"));
  watch.on_upsert(on(b, "g2", "Failed"));
  watch.on_delete(on(a, "g1", "Succeeded"));
  EXPECT_TRUE(f.feed->busy());
  EXPECT_EQ(JobPhase::kRunning, phase_of(*f.planner, "lab/a"));
  EXPECT_EQ(JobPhase::kRunning, phase_of(*f.planner, "lab/b"));
  watch.on_caught_up();
  EXPECT_FALSE(f.feed->busy());
  EXPECT_EQ(JobPhase::kDone, phase_of(*f.planner, "lab/a"));
  EXPECT_EQ(JobPhase::kDone, phase_of(*f.planner, "lab/b"));

  // c's pod is bound to g2 in the burst that shows d's end there: d's end is recorded first.
  const json c = variant("c-gpu", "c", "nvidia.com/gpu");
  const json d = variant("d-gpu", "d", "nvidia.com/gpu");
  watch.on_upsert(on(d, "g2", "Running"));
  watch.on_caught_up();
  ASSERT_EQ(JobPhase::kRunning, phase_of(*f.planner, "lab/d"));
  watch.on_upsert(c);
  watch.on_upsert(on(d, "g2", "Succeeded"));
  watch.on_upsert(on(c, "g2", ""));
  EXPECT_EQ(JobPhase::kDone, phase_of(*f.planner, "lab/d"));
  EXPECT_EQ(JobPhase::kRunning, phase_of(*f.planner, "lab/c"));
  watch.on_caught_up();
  f.planner->read([](const JobBook& book) { EXPECT_EQ(0, book.capacity("g2", "gpu").free); });

  // The ends are in the store: a planner restored from it has them.
  f.feed.reset();
  f.planner.reset();
  auto restored =
      Planner::create(f.config, make_policy("fifo", PolicyOptions{}).value(), f.metrics);
  ASSERT_TRUE(restored.ok()) << restored.message();
  EXPECT_EQ(JobPhase::kDone, phase_of(**restored, "lab/a"));
  EXPECT_EQ(JobPhase::kDone, phase_of(**restored, "lab/b"));
  EXPECT_EQ(JobPhase::kDone, phase_of(**restored, "lab/d"));
  EXPECT_EQ(JobPhase::kRunning, phase_of(**restored, "lab/c"));
}

// sync_pods copies only what changed since a mirror's last sync; the definition it must meet is
// pods() (a full copy) and the keys that left, after random upserts, deletes and re-lists, with
// a second mirror syncing now and then (each then needs a full copy again).
TEST(ClusterFeedTest, SyncedMirrorsEqualAFullCopyAfterRandomChanges) {
  Fixture f;
  std::mt19937 rng(7);
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  auto pod = [&](int i, int version) {
    json p = variant("p" + std::to_string(i), "j" + std::to_string(i % 5),
                     i % 2 ? "cpu" : "nvidia.com/gpu");
    p["metadata"]["resourceVersion"] = std::to_string(version);
    if (pick(4) == 0) p["spec"]["nodeName"] = "g1";
    return p;
  };
  PodMirror a, b;
  std::set<std::string> in_a;
  int version = 0;
  for (int step = 0; step < 400; ++step) {
    switch (pick(8)) {
      case 0:
        if (pick(4) == 0) {  // a re-list of some of the pods
          std::vector<json> listed;
          for (int i = 0; i < 12; ++i) {
            if (pick(2)) listed.push_back(pod(i, ++version));
          }
          f.feed->pod_handler().on_replace(listed);
        }
        break;
      case 1:
      case 2:
        f.feed->pod_handler().on_delete(pod(pick(12), ++version));
        break;
      default:
        f.feed->pod_handler().on_upsert(pod(pick(12), ++version));
    }
    if (pick(3) != 0) continue;
    PodMirror& mirror = pick(5) == 0 ? b : a;
    std::set<std::string> before;
    std::map<std::string, std::string> versions_before;
    for (const auto& [key, p] : mirror.pods) {
      before.insert(key);
      versions_before[key] = p.resource_version;
    }
    std::vector<std::string> written;
    std::vector<std::string> gone = f.feed->sync_pods(mirror, &written);
    const std::map<std::string, ObservedPod> full = f.feed->pods();
    // Every pod that is new or changed since the mirror's last sync is among the keys written
    // (what the controller's incremental pass looks at), and each of those is in the mirror.
    const std::set<std::string> written_set(written.begin(), written.end());
    for (const auto& [key, p] : full) {
      auto was = versions_before.find(key);
      if (was == versions_before.end() || was->second != p.resource_version) {
        EXPECT_EQ(1u, written_set.count(key)) << "step " << step << ": " << key << " not reported";
      }
    }
    for (const std::string& key : written) EXPECT_EQ(1u, mirror.pods.count(key)) << key;
    ASSERT_EQ(full.size(), mirror.pods.size()) << "step " << step;
    for (const auto& [key, p] : full) {
      ASSERT_EQ(1u, mirror.pods.count(key)) << key;
      EXPECT_EQ(p.resource_version, mirror.pods.at(key).resource_version) << key;
      EXPECT_EQ(p.node_name, mirror.pods.at(key).node_name) << key;
    }
    std::set<std::string> left;
    for (const std::string& key : before) {
      if (!full.count(key)) left.insert(key);
    }
    EXPECT_EQ(left, std::set<std::string>(gone.begin(), gone.end())) << "step " << step;
    EXPECT_EQ(left.size(), gone.size()) << "a key reported twice";
  }
}

// GPU models as node labels: a node's units are slots of its model's type, a relabelled node is
// read again, and one whose labels give it two types leaves the inventory until fixed.
TEST(ClusterFeedTest, NodeLabelsMakeSlotsOfTheModelAndARelabelIsReadAgain) {
  testing::ScratchDir dir;
  ExtenderConfig config = testing::make_config({}, dir.file("state.db"));
  config.devices.resources = {
      {"nvidia.com/gpu",
       "gpu",
       {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3", "h100"},
        {"cloud.google.com/gke-accelerator", "nvidia-tesla-a100", "a100"}}}};
  Metrics metrics;
  auto planner = Planner::create(config, make_policy("fifo", PolicyOptions{}).value(), metrics);
  ASSERT_TRUE(planner.ok()) << planner.message();
  kube::KubeClient client{{"http://127.0.0.1:1", "", ""}};
  ClusterFeed feed(client, **planner, config, nullptr);
  auto labelled = [](const std::string& name, json labels) {
    json node = testing::make_node(name, "2", "64");
    node["metadata"]["labels"] = std::move(labels);
    return node;
  };
  auto machines = [&](const std::string& node) {
    return (*planner)->read([&](const JobBook& book) {
      std::map<DeviceType, int> out;
      for (const MachineSlot& slot : book.slots()) {
        if (slot.node == node) ++out[slot.device];
      }
      return out;
    });
  };
  feed.node_handler().on_replace(
      {labelled("h", {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}}),
       labelled("t4", {{"nvidia.com/gpu.product", "Tesla-T4"}})});
  EXPECT_EQ((std::map<DeviceType, int>{{"h100", 2}, {"cpu", 2}}), machines("h"));
  EXPECT_EQ((std::map<DeviceType, int>{{"gpu", 2}, {"cpu", 2}}), machines("t4"));

  // Relabelled: the same units, now of the other model.
  feed.node_handler().on_upsert(
      labelled("t4", {{"cloud.google.com/gke-accelerator", "nvidia-tesla-a100"}}));
  EXPECT_EQ((std::map<DeviceType, int>{{"a100", 2}, {"cpu", 2}}), machines("t4"));

  // Two labels giving two types: the node offers nothing rather than half of each.
  feed.node_handler().on_upsert(
      labelled("h", {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                     {"cloud.google.com/gke-accelerator", "nvidia-tesla-a100"}}));
  EXPECT_TRUE(machines("h").empty());
  auto refused =
      node_inventory(labelled("h", {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                                    {"cloud.google.com/gke-accelerator", "nvidia-tesla-a100"}}),
                     config.devices);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(0u, refused.message().rfind("node h: nvidia.com/gpu: labels ", 0)) << refused.message();
}

TEST(ClusterFeedTest, ANodeClaimingMoreMachinesThanAnyNodeHasIsRefusedNamingTheField) {
  testing::ScratchDir dir;
  const ExtenderConfig config = testing::make_config({}, dir.file("state.db"));
  auto refused = node_inventory(testing::make_node("n", "1Ti", "64"), config.devices);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(std::string::npos, refused.message().find("node n: status.allocatable.nvidia.com/gpu"))
      << refused.message();
  refused = node_inventory(testing::make_node("n", "8", "1e15"), config.devices);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(std::string::npos, refused.message().find("status.allocatable.cpu: 1e15"))
      << refused.message();

  // A huge resource that is no device is no machine at all.
  json node = testing::make_node("n", "8", "64");
  node["status"]["allocatable"]["memory"] = "1Ti";
  node["status"]["allocatable"]["ephemeral-storage"] = "1Ei";
  auto inventory = node_inventory(node, config.devices);
  ASSERT_TRUE(inventory.ok()) << inventory.message();
  EXPECT_EQ((std::map<DeviceType, int>{{"gpu", 8}, {"cpu", 2}}), inventory->machines);
  // A count of zero or less is no machine, not an error.
  inventory = node_inventory(testing::make_node("n", "0", "0"), config.devices);
  ASSERT_TRUE(inventory.ok()) << inventory.message();
  EXPECT_TRUE(inventory->machines.empty());
}

// A cordoned node, or one Kubernetes taints as not ready or unreachable, takes no new job: its
// machines leave the book (a job running there keeps running) and come back when it opens; any
// other taint is each pod's business (JobVariant::may_go_to), so such a node stays.
TEST(ClusterFeedTest, ACordonedOrUnreadyNodeOffersNoMachineUntilItOpensAgain) {
  testing::ScratchDir dir;
  const ExtenderConfig config = testing::make_config({}, dir.file("state.db"));
  Metrics metrics;
  auto planner = Planner::create(config, make_policy("fifo", PolicyOptions{}).value(), metrics);
  ASSERT_TRUE(planner.ok()) << planner.message();
  kube::KubeClient client{{"http://127.0.0.1:1", "", ""}};
  ClusterFeed feed(client, **planner, config, nullptr);
  auto machines = [&](const std::string& node) {
    return (*planner)->read([&](const JobBook& book) {
      int out = 0;
      for (const MachineSlot& slot : book.slots()) out += slot.node == node ? 1 : 0;
      return out;
    });
  };
  const json open = testing::make_node("n", "2", "64");
  feed.node_handler().on_replace({open});
  EXPECT_EQ(4, machines("n"));

  json cordoned = open;
  cordoned["spec"]["unschedulable"] = true;
  feed.node_handler().on_upsert(cordoned);
  EXPECT_EQ(0, machines("n"));
  auto inventory = node_inventory(cordoned, config.devices);
  ASSERT_TRUE(inventory.ok()) << inventory.message();
  EXPECT_EQ("cordoned (spec.unschedulable)", inventory->closed);
  EXPECT_TRUE(inventory->facts.unschedulable);

  feed.node_handler().on_upsert(open);
  EXPECT_EQ(4, machines("n"));

  for (const char* effect : {"NoSchedule", "NoExecute"}) {
    json unready = open;
    unready["spec"]["taints"] = json::array(
        {{{"key", "node.kubernetes.io/not-ready"}, {"effect", effect}}});
    feed.node_handler().on_upsert(unready);
    EXPECT_EQ(0, machines("n")) << effect;
    EXPECT_EQ(std::string("tainted node.kubernetes.io/not-ready:") + effect,
              node_inventory(unready, config.devices)->closed);
    feed.node_handler().on_upsert(open);
    EXPECT_EQ(4, machines("n"));
  }

  // PreferNoSchedule only scores; a taint of the owner's is weighed per pod.
  json tainted = open;
  tainted["spec"]["taints"] = json::array(
      {{{"key", "node.kubernetes.io/unreachable"}, {"effect", "PreferNoSchedule"}},
       {{"key", "dedicated"}, {"value", "team-a"}, {"effect", "NoSchedule"}}});
  feed.node_handler().on_upsert(tainted);
  EXPECT_EQ(4, machines("n"));
  (*planner)->read([&](const JobBook& book) {
    const kube::NodeFacts* facts = book.node_facts("n");
    ASSERT_NE(nullptr, facts);
    ASSERT_EQ(2u, facts->taints.size());
    EXPECT_EQ("team-a", facts->taints[1].value);
  });

  // A count that does not read is refused whether or not the node is closed.
  json bad = testing::make_node("n", "1Ti", "64");
  bad["spec"]["unschedulable"] = true;
  EXPECT_FALSE(node_inventory(bad, config.devices).ok());
}

// Everything observe_pod reads of a pod, as one line (a failed test shows what differs).
std::string observed(const ObservedPod& pod) {
  json out = {{"ref", {pod.ref.namespace_name, pod.ref.name, pod.ref.uid}},
              {"read_error", pod.read_error}, {"gates", pod.gates},
              {"room", static_cast<int>(pod.affinity_room)}, {"pinned", pod.pinned_node},
              {"node", pod.node_name}, {"phase", pod.phase}, {"nudge", pod.nudge},
              {"rv", pod.resource_version}, {"deleting", pod.deleting},
              {"turned_away", pod.turned_away}, {"refusal", pod.job_refusal},
              {"awaiting", pod.awaiting_job}};
  if (pod.owner_job) out["owner"] = {pod.owner_job->namespace_name, pod.owner_job->name,
                                     pod.owner_job->uid};
  if (pod.variant) {
    const JobVariant& v = *pod.variant;
    out["variant"] = {{"job", v.job_id}, {"user", v.user}, {"device", v.device},
                      {"devices", v.devices}, {"units", v.units}, {"gang", v.gang},
                      {"hints", v.time_hints}, {"model", v.model},
                      {"iterations", v.iterations ? *v.iterations : -1},
                      {"batch", v.batch_size ? *v.batch_size : -1}};
  }
  return out.dump();
}

// The pod watch keeps only observed_pod_fields() of each event: a pod so cut must observe
// exactly as the whole pod, whatever it holds (each case adds members observe_pod reads, in
// the shapes it reads them, among members it does not).
TEST(ClusterFeedTest, ThePodWatchKeepsEverythingObservePodReads) {
  const ExtenderConfig config = testing::make_config({}, "unused.db");
  json base = testing::make_pod("lab", "a-gpu", "nvidia.com/gpu",
                                {{"allox.io/job", "train"}, {"allox.io/time.gpu", "60"},
                                 {"allox.io/nudge", "3"}, {"allox.io/gang-size", "2"}});
  base["metadata"]["resourceVersion"] = "42";
  base["metadata"]["uid"] = "u-1";
  base["metadata"]["managedFields"] = json::array({{{"manager", "kubectl"}}});
  base["spec"]["volumes"] = json::array({{{"name", "v"}}});
  base["spec"]["containers"][0]["env"] = json::array({{{"name", "A"}, {"value", "1"}}});
  base["status"]["containerStatuses"] = json::array({{{"ready", true}}});
  std::vector<json> pods(9, base);
  pods[1]["spec"]["schedulingGates"] = json::array({{{"name", "allox.io/queue"}}});
  pods[1]["spec"]["affinity"] = json::parse(R"({"nodeAffinity":{
      "requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchFields":[
      {"key":"metadata.name","operator":"In","values":["g1"]}]}]}}})");
  pods[2]["spec"]["nodeName"] = "g1";
  pods[2]["status"]["phase"] = "Running";
  pods[3]["status"]["conditions"] = json::parse(
      R"([{"type":"PodScheduled","status":"False","reason":"Unschedulable"}])");
  pods[3]["spec"]["nodeSelector"] = {{"gpu", "yes"}};
  pods[4]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  pods[4]["metadata"]["ownerReferences"] = json::parse(
      R"([{"apiVersion":"batch/v1","kind":"Job","name":"j","uid":"ju","controller":true}])");
  pods[5]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1.5";  // refused
  pods[6]["spec"]["affinity"] = json::parse(R"({"podAffinity":{}})");
  pods[6]["spec"]["schedulerName"] = "another";
  // Init containers (a sidecar among them) and the runtime's overhead count toward the units.
  pods[7]["spec"]["initContainers"] = json::parse(R"([
      {"name":"proxy","restartPolicy":"Always","image":"p",
       "resources":{"limits":{"nvidia.com/gpu":"1"}}},
      {"name":"warm","image":"w","resources":{"requests":{"nvidia.com/gpu":"4","cpu":"2"}}}])");
  pods[8]["spec"]["overhead"] = {{"nvidia.com/gpu", "2"}, {"cpu", "250m"}};
  const kube::WatchDecoder cut(observed_pod_fields()), whole;
  for (const json& pod : pods) {
    const std::string line = json{{"type", "MODIFIED"}, {"object", pod}}.dump();
    auto kept = cut.decode(line);
    auto all = whole.decode(line);
    ASSERT_TRUE(kept.ok() && all.ok()) << kept.message() << all.message();
    EXPECT_FALSE(kept->object["metadata"].contains("managedFields"));
    EXPECT_FALSE(kept->object["spec"].contains("volumes"));
    EXPECT_EQ(all->object["spec"]["schedulerName"], kept->object["spec"]["schedulerName"]);
    auto from_kept = observe_pod(kept->object, config.devices, config.tenancy);
    auto from_all = observe_pod(all->object, config.devices, config.tenancy);
    ASSERT_TRUE(from_kept.ok() && from_all.ok()) << line;
    EXPECT_EQ(observed(*from_all), observed(*from_kept)) << line;
  }
}

}  // namespace
}  // namespace allox::extender
