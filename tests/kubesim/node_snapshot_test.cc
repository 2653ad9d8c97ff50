// kubesim/node_snapshot.h: NodeUnschedulable, TaintToleration, NodeAffinity and
// NodeResourcesFit on integer amounts, the rotation kube-scheduler's percentageOfNodesToScore
// walks, nominated pods, and the reasons counted for the FitError. The pod's side of the first
// three (kube/node_fit.h) has its own tests in tests/kube/node_fit_test.cc.
#include "kubesim/node_snapshot.h"

#include <gtest/gtest.h>

#include <random>

namespace allox::emulator {
namespace {

using Quantities = std::map<std::string, double>;

class NodeSnapshotTest : public ::testing::Test {
 protected:
  NodeSnapshot nodes{{"example.com/ignored"}};
  void add(const std::string& name, const Quantities& allocatable, bool unschedulable = false) {
    nodes.upsert(name, nullptr, allocatable, unschedulable);
  }
  ResourceAmounts pod(const Quantities& requests) { return nodes.amounts(requests); }
  bool fits(const std::string& node, const ResourceAmounts& requests) {
    return nodes.fits(nodes.index_of(node), requests);
  }
};

TEST_F(NodeSnapshotTest, AFitIsExactInMilliUnits) {
  add("a", {{"cpu", 0.3}, {"pods", 110}});
  nodes.add_pod("a", "ns/x", 0, pod({{"cpu", 0.1}, {"pods", 1}}));
  nodes.add_pod("a", "ns/y", 0, pod({{"cpu", 0.1}, {"pods", 1}}));
  // 0.1 + 0.1 + 0.1 > 0.3 in doubles; 100 + 100 + 100 == 300 in millicores.
  EXPECT_TRUE(fits("a", pod({{"cpu", 0.1}, {"pods", 1}})));
  EXPECT_FALSE(fits("a", pod({{"cpu", 0.101}, {"pods", 1}})));
  nodes.remove_pod("a", "ns/y", pod({{"cpu", 0.1}, {"pods", 1}}));
  nodes.remove_pod("a", "ns/y", pod({{"cpu", 0.1}, {"pods", 1}}));  // not held: a no-op
  EXPECT_TRUE(fits("a", pod({{"cpu", 0.2}, {"pods", 1}})));
  EXPECT_FALSE(fits("a", pod({{"cpu", 0.201}, {"pods", 1}})));
}

TEST_F(NodeSnapshotTest, APodAskingForTwoGpusTakesTwo) {
  add("a", {{"cpu", 64}, {"nvidia.com/gpu", 2}});
  const ResourceAmounts one = pod({{"nvidia.com/gpu", 1}});
  const ResourceAmounts two = pod({{"nvidia.com/gpu", 2}});
  const ResourceAmounts three = pod({{"nvidia.com/gpu", 3}});
  EXPECT_TRUE(fits("a", two));
  EXPECT_FALSE(fits("a", three)) << "more GPUs than the node has never fit";
  nodes.add_pod("a", "ns/one", 0, one);
  EXPECT_FALSE(fits("a", two)) << "one of the two GPUs is taken";
  EXPECT_TRUE(fits("a", one));
  nodes.add_pod("a", "ns/other", 0, one);
  EXPECT_FALSE(fits("a", one));
  nodes.remove_pod("a", "ns/one", one);
  nodes.remove_pod("a", "ns/other", one);
  nodes.add_pod("a", "ns/two", 0, two);
  EXPECT_FALSE(fits("a", one)) << "a 2-GPU pod holds both";
}

TEST_F(NodeSnapshotTest, PodsCountOnlyWhereDeclaredAndIgnoredResourcesNever) {
  add("declares", {{"cpu", 8}, {"pods", 1}});
  add("silent", {{"cpu", 8}});
  nodes.add_pod("declares", "ns/x", 0, pod({{"cpu", 1}, {"pods", 1}}));
  nodes.add_pod("silent", "ns/x", 0, pod({{"cpu", 1}, {"pods", 1}}));
  const ResourceAmounts next = pod({{"cpu", 1}, {"pods", 1}, {"example.com/ignored", 4}});
  EXPECT_FALSE(fits("declares", next));
  EXPECT_TRUE(fits("silent", next));
  EXPECT_FALSE(fits("silent", pod({{"cpu", 1}, {"example.com/other", 1}})));
  EXPECT_TRUE(fits("silent", pod({{"cpu", 1}, {"example.com/other", 0}})));
}

TEST_F(NodeSnapshotTest, FindFitRotatesStopsAtWantAndCountsEveryReason) {
  // Names in byte order: n0 n1 n2 n3 n4; n1 is cordoned, n3 lacks both cpu and GPUs.
  for (const char* name : {"n3", "n0", "n4", "n2", "n1"}) {
    add(name, {{"cpu", 4}, {"nvidia.com/gpu", 1}}, std::string(name) == "n1");
  }
  nodes.add_pod("n3", "ns/busy", 0, pod({{"cpu", 4}, {"nvidia.com/gpu", 1}}));
  ASSERT_EQ("n0", nodes[0].name);
  ASSERT_EQ("n4", nodes[4].name);
  const ResourceAmounts gpu = pod({{"cpu", 1}, {"nvidia.com/gpu", 1}});
  std::vector<std::string> feasible;
  Diagnosis d;
  // From n3 (index 3): n3 fails, n4 fits, n0 fits: stop at 2 found, 3 processed.
  EXPECT_EQ(3u, nodes.find_fit(gpu, 3, 2, feasible, d));
  EXPECT_EQ((std::vector<std::string>{"n4", "n0"}), feasible);
  EXPECT_EQ("0/5 nodes are available: 1 Insufficient cpu, 1 Insufficient nvidia.com/gpu.",
            d.message(5));
  EXPECT_EQ((std::set<std::string>{"NodeResourcesFit"}), d.plugins);
  // Everything, from a start past the end (nodes were removed since): wraps.
  feasible.clear();
  Diagnosis all;
  EXPECT_EQ(5u, nodes.find_fit(gpu, 7, 5, feasible, all));
  EXPECT_EQ((std::vector<std::string>{"n2", "n4", "n0"}), feasible);
  EXPECT_EQ(
      "0/5 nodes are available: 1 Insufficient cpu, 1 Insufficient nvidia.com/gpu, 1 node(s) "
      "were unschedulable.",
      all.message(5));
  EXPECT_EQ((std::set<std::string>{"NodeResourcesFit", "NodeUnschedulable"}), all.plugins);
}

nlohmann::json labelled(const std::string& name, const nlohmann::json& labels) {
  return {{"metadata", {{"name", name}, {"labels", labels}}}};
}

// A pod pinned by name is evaluated on its node alone; every other node counts under
// NodeAffinity's reason, as does a pinned node that is gone.
TEST_F(NodeSnapshotTest, APinnedPodIsEvaluatedOnItsNodeAlone) {
  for (const char* name : {"n0", "n1", "n2", "n3"}) add(name, {{"cpu", 4}, {"nvidia.com/gpu", 1}});
  const ResourceAmounts gpu = pod({{"cpu", 1}, {"nvidia.com/gpu", 1}});
  auto pin = [](const std::string& node) {
    return kube::PodPlacement(nlohmann::json::parse(
        R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In",
            "values":[")" +
        node + R"("]}]}]}}}}})"));
  };
  const kube::PodPlacement on_n2 = pin("n2");
  std::vector<std::string> feasible;
  Diagnosis d;
  EXPECT_EQ(0u, nodes.find_fit(gpu, 1, 100, feasible, d, &on_n2));
  EXPECT_EQ((std::vector<std::string>{"n2"}), feasible);
  // Full: the node's own reason, the others NodeAffinity's.
  nodes.add_pod("n2", "ns/busy", 0, pod({{"cpu", 1}, {"nvidia.com/gpu", 1}}));
  feasible.clear();
  Diagnosis full;
  nodes.find_fit(gpu, 0, 100, feasible, full, &on_n2);
  EXPECT_TRUE(feasible.empty());
  EXPECT_EQ(
      "0/4 nodes are available: 1 Insufficient nvidia.com/gpu, 3 node(s) didn't match Pod's node "
      "affinity/selector.",
      full.message(4));
  EXPECT_EQ((std::set<std::string>{"NodeAffinity", "NodeResourcesFit"}), full.plugins);
  // Gone: nothing to evaluate.
  const kube::PodPlacement on_gone = pin("n9");
  Diagnosis gone;
  nodes.find_fit(gpu, 0, 100, feasible, gone, &on_gone);
  EXPECT_TRUE(feasible.empty());
  EXPECT_EQ("0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector.",
            gone.message(4));
}

// A node selector filters in the rotation, after NodeUnschedulable and before the resources.
TEST_F(NodeSnapshotTest, ANodeSelectorFiltersBeforeTheResources) {
  nodes.upsert("a", std::make_shared<const nlohmann::json>(labelled("a", {{"zone", "z1"}})),
               {{"cpu", 4}}, false);
  nodes.upsert("b", std::make_shared<const nlohmann::json>(labelled("b", {{"zone", "z2"}})),
               {{"cpu", 4}}, false);
  nodes.upsert("c", std::make_shared<const nlohmann::json>(labelled("c", {{"zone", "z1"}})),
               {{"cpu", 4}}, true);
  const kube::PodPlacement z1(nlohmann::json::parse(R"({"spec":{"nodeSelector":{"zone":"z1"}}})"));
  std::vector<std::string> feasible;
  Diagnosis d;
  EXPECT_EQ(3u, nodes.find_fit(pod({{"cpu", 8}}), 0, 3, feasible, d, &z1));
  EXPECT_TRUE(feasible.empty());
  EXPECT_EQ(
      "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node "
      "affinity/selector, 1 node(s) were unschedulable.",
      d.message(3));
  EXPECT_EQ(3u, nodes.find_fit(pod({{"cpu", 1}}), 0, 3, feasible, d, &z1));
  EXPECT_EQ((std::vector<std::string>{"a"}), feasible);
}

TEST_F(NodeSnapshotTest, NominatedPodsTakeTheirRequestsUntilReplaced) {
  add("a", {{"nvidia.com/gpu", 2}});
  add("b", {{"nvidia.com/gpu", 2}});
  const ResourceAmounts one = pod({{"nvidia.com/gpu", 1}});
  const ResourceAmounts two = pod({{"nvidia.com/gpu", 2}});
  nodes.set_nominated({{"a", &one}, {"a", &one}, {"gone", &two}});
  EXPECT_FALSE(fits("a", one));
  EXPECT_TRUE(fits("b", two));
  nodes.set_nominated({{"b", &one}});
  EXPECT_TRUE(fits("a", two));
  EXPECT_FALSE(fits("b", two));
  EXPECT_TRUE(fits("b", one));
  // Preemption's dry run: pods taken off a full node.
  nodes.set_nominated({});
  nodes.add_pod("a", "ns/low", -1, two);
  EXPECT_FALSE(fits("a", one));
  EXPECT_TRUE(nodes.fits_without(nodes.index_of("a"), one, {&two}));
  EXPECT_EQ(-1, nodes.find("a")->priorities.begin()->first);
}

TEST_F(NodeSnapshotTest, FindFitAgreesWithTheFilterOfEachNodeOnRandomClusters) {
  // find_fit reads a flat copy of every node's free amounts; fits() reads the node itself.
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    NodeSnapshot snapshot({"example.com/ignored"});
    const int count = 1 + static_cast<int>(rng() % 40);
    std::vector<std::string> names;
    for (int n = 0; n < count; ++n) {
      names.push_back("n" + std::to_string(rng() % 1000));
      Quantities allocatable = {{"cpu", static_cast<double>(rng() % 9)}};
      if (rng() % 2) allocatable["nvidia.com/gpu"] = static_cast<double>(rng() % 3);
      if (rng() % 2) allocatable["pods"] = static_cast<double>(rng() % 3);
      std::vector<kube::Taint> taints;
      if (rng() % 4 == 0) taints.push_back({"t" + std::to_string(rng() % 3), "", "NoSchedule"});
      if (rng() % 8 == 0) taints.push_back({"soft", "", "PreferNoSchedule"});
      snapshot.upsert(names.back(), nullptr, allocatable, rng() % 7 == 0, std::move(taints));
    }
    for (int p = 0; p < count * 2; ++p) {
      Quantities requests = {{"cpu", 0.5 * static_cast<double>(rng() % 4)}, {"pods", 1}};
      if (rng() % 2) requests["nvidia.com/gpu"] = 1;
      snapshot.add_pod(names[rng() % names.size()], "ns/p" + std::to_string(p), 0,
                       snapshot.amounts(requests));
    }
    if (rng() % 3 == 0) snapshot.remove(names[rng() % names.size()]);
    Quantities asked = {{"cpu", static_cast<double>(rng() % 3)}, {"pods", 1}};
    if (rng() % 2) asked["nvidia.com/gpu"] = 1;
    if (rng() % 2) asked["example.com/ignored"] = 5;
    if (rng() % 5 == 0) asked["example.com/new"] = 1;
    const ResourceAmounts pod = snapshot.amounts(asked);
    const ResourceAmounts nominee = snapshot.amounts({{"cpu", 1}});
    if (rng() % 3 == 0) snapshot.set_nominated({{names[rng() % names.size()], &nominee}});
    const std::size_t start = rng() % 50, want = 1 + rng() % 40;
    nlohmann::json tolerations = nlohmann::json::array();
    if (rng() % 2) tolerations.push_back({{"key", "t0"}, {"operator", "Exists"}});
    if (rng() % 4 == 0)
      tolerations.push_back({{"key", "node.kubernetes.io/unschedulable"}, {"operator", "Exists"}});
    const kube::PodPlacement placement(nlohmann::json{{"spec", {{"tolerations", tolerations}}}});

    std::vector<std::string> feasible;
    Diagnosis d;
    const std::size_t processed = snapshot.find_fit(pod, start, want, feasible, d, &placement);
    std::vector<std::string> expected;
    NodeSnapshot::Failures failures;
    std::size_t walked = 0;
    for (std::size_t k = 0; k < snapshot.size() && expected.size() < want; ++k, ++walked) {
      const std::size_t i = (start + k) % snapshot.size();
      if (snapshot.fits(i, pod, &failures, &placement)) expected.push_back(snapshot[i].name);
    }
    Diagnosis e;
    failures.flush(snapshot, e);
    ASSERT_EQ(expected, feasible) << "round " << round;
    ASSERT_EQ(walked, processed) << "round " << round;
    ASSERT_EQ(e.message(snapshot.size()), d.message(snapshot.size())) << "round " << round;
  }
}

// TaintToleration between NodeUnschedulable and NodeAffinity, each node counted under the first
// filter that refuses it; a blocking taint's reason names it, a PreferNoSchedule one never
// refuses.
TEST_F(NodeSnapshotTest, TaintsRefuseUntoleratingPodsInKubeSchedulersOrder) {
  using nlohmann::json;
  auto node = [&](const std::string& name, const std::string& zone, bool cordoned,
                  std::vector<kube::Taint> taints) {
    nodes.upsert(name, std::make_shared<const json>(labelled(name, {{"zone", zone}})), {{"cpu", 4}},
                 cordoned, std::move(taints));
  };
  node("a", "z1", false, {{"dedicated", "ml", "NoSchedule"}});
  node("b", "z1", false, {{"soft", "", "PreferNoSchedule"}, {"evict", "", "NoExecute"}});
  node("c", "z2", false, {{"dedicated", "ml", "NoSchedule"}});  // tainted and unlabelled
  node("d", "z1", true, {{"dedicated", "ml", "NoSchedule"}});   // cordoned and tainted
  node("e", "z1", false, {{"soft", "", "PreferNoSchedule"}});
  const ResourceAmounts one = pod({{"cpu", 1}});
  auto run = [&](const kube::PodPlacement* placement, std::vector<std::string>& feasible) {
    feasible.clear();
    Diagnosis d;
    nodes.find_fit(one, 0, 5, feasible, d, placement);
    return d;
  };
  std::vector<std::string> feasible;
  Diagnosis plain = run(nullptr, feasible);
  EXPECT_EQ((std::vector<std::string>{"e"}), feasible);
  EXPECT_EQ(
      "0/5 nodes are available: 1 node(s) had untolerated taint {evict: }, 1 node(s) were "
      "unschedulable, 2 node(s) had untolerated taint {dedicated: ml}.",
      plain.message(5));
  EXPECT_EQ((std::set<std::string>{"NodeUnschedulable", "TaintToleration"}), plain.plugins);
  EXPECT_TRUE(nodes.unresolvable(nodes.index_of("a"), kube::PodPlacement()));
  EXPECT_FALSE(nodes.unresolvable(nodes.index_of("e"), kube::PodPlacement()));

  // Tolerating dedicated=ml and the cordon, with a zone: c is NodeAffinity's, b keeps its taint.
  const kube::PodPlacement ml(json::parse(R"({"spec":{"nodeSelector":{"zone":"z1"},"tolerations":[
      {"key":"dedicated","operator":"Equal","value":"ml","effect":"NoSchedule"},
      {"key":"node.kubernetes.io/unschedulable","operator":"Exists","effect":"NoSchedule"}]}})"));
  Diagnosis tolerated = run(&ml, feasible);
  EXPECT_EQ((std::vector<std::string>{"a", "d", "e"}), feasible);
  EXPECT_EQ(
      "0/5 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) "
      "had untolerated taint {evict: }.",
      tolerated.message(5));
  EXPECT_EQ((std::set<std::string>{"NodeAffinity", "TaintToleration"}), tolerated.plugins);
  // fits() filters alike, one node at a time.
  EXPECT_TRUE(nodes.fits(nodes.index_of("d"), one, nullptr, &ml));
  EXPECT_FALSE(nodes.fits(nodes.index_of("d"), one));
  EXPECT_FALSE(nodes.fits(nodes.index_of("b"), one, nullptr, &ml));

  // Without the zone, c's taint is tolerated too; a taint removed frees its node.
  const kube::PodPlacement everything(
      json::parse(R"({"spec":{"tolerations":[{"operator":"Exists"}]}})"));
  run(&everything, feasible);
  EXPECT_EQ((std::vector<std::string>{"a", "b", "c", "d", "e"}), feasible);
  EXPECT_TRUE(nodes.upsert("a", nodes.find("a")->object, {{"cpu", 4}}, false, {}));
  run(nullptr, feasible);
  EXPECT_EQ((std::vector<std::string>{"a", "e"}), feasible);
}

TEST_F(NodeSnapshotTest, UpsertReportsWhatTheFiltersRead) {
  EXPECT_TRUE(nodes.upsert("a", nullptr, {{"cpu", 4}}, false));
  EXPECT_FALSE(nodes.upsert("a", nullptr, {{"cpu", 4}}, false));
  EXPECT_TRUE(nodes.upsert("a", nullptr, {{"cpu", 4}, {"nvidia.com/gpu", 0}}, false));
  EXPECT_TRUE(nodes.upsert("a", nullptr, {{"cpu", 4}, {"nvidia.com/gpu", 0}}, true));
  EXPECT_TRUE(nodes.find("a")->unschedulable);
  const std::vector<kube::Taint> taint = {{"k", "v", "NoSchedule"}};
  EXPECT_TRUE(nodes.upsert("a", nullptr, {{"cpu", 4}, {"nvidia.com/gpu", 0}}, true, taint));
  EXPECT_FALSE(nodes.upsert("a", nullptr, {{"cpu", 4}, {"nvidia.com/gpu", 0}}, true, taint));
  EXPECT_EQ(taint, nodes.find("a")->taints);
  EXPECT_TRUE(nodes.upsert("a", nullptr, {{"cpu", 4}, {"nvidia.com/gpu", 0}}, true,
                           {{"k", "v", "NoExecute"}}));
  EXPECT_TRUE(nodes.upsert("a", nullptr, {{"cpu", 4}, {"nvidia.com/gpu", 0}}, true));
  EXPECT_TRUE(nodes.find("a")->taints.empty());
  nodes.remove("a");
  EXPECT_EQ(nullptr, nodes.find("a"));
  EXPECT_EQ(0u, nodes.size());
}

}  // namespace
}  // namespace allox::emulator
