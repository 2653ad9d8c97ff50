// alloxd/model/pod_placement.h: a pod's constraints on nodes as a variant keeps them, and the
// node side (kube::node_facts, node_inventory) on objects of hostile size. The sizes stay under
// the 3 MB a request to kube-apiserver may carry; each timing is printed (docs/hardening.md),
// and only the answers are asserted.
#include "alloxd/model/pod_placement.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "alloxd/config.h"
#include "alloxd/control/cluster_api.h"
#include "alloxd/model/pod.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

using nlohmann::json;

constexpr std::size_t kApiServerRequestBytes = 3 * 1024 * 1024;

json pod_with(const json& spec) {
  json pod = {{"metadata", {{"name", "p"}, {"namespace", "team-a"}}}, {"spec", spec}};
  pod["spec"]["containers"] = json::array({{{"name", "m"}}});
  return pod;
}

json required_terms(const json& terms) {
  return {{"nodeAffinity",
           {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", terms}}}}}};
}

TEST(PodConstraintsReadTest, KeepsSelectorAffinityAndTolerationsLeavingAlloxdsPinOut) {
  EXPECT_EQ(nullptr, read_pod_constraints(pod_with(json::object())).placement);
  EXPECT_EQ("", read_pod_constraints(pod_with(json::object())).key);
  // Empty lists and maps, nulls, wrong types: no constraint.
  for (const json& spec :
       {json{{"nodeSelector", json::object()}}, json{{"tolerations", json::array()}},
        json{{"tolerations", "all"}}, json{{"nodeSelector", nullptr}},
        json{{"affinity", {{"nodeAffinity", nullptr}}}}}) {
    EXPECT_EQ("", read_pod_constraints(pod_with(spec)).key) << spec.dump();
  }
  for (const json& pod : {json(nullptr), json("pod"), json{{"spec", 1}}, json::array()}) {
    EXPECT_EQ(nullptr, read_pod_constraints(pod).placement) << pod.dump();
  }

  const json pin = json::array(
      {{{"matchFields",
         json::array({{{"key", "metadata.name"}, {"operator", "In"}, {"values", {"gpu-1"}}}})}}});
  const PodConstraints pinned = read_pod_constraints(
      pod_with({{"affinity", required_terms(pin)}, {"nodeSelector", {{"a", "1"}}}}));
  ASSERT_NE(nullptr, pinned.placement);
  EXPECT_EQ(R"({"nodeSelector":{"a":"1"}})", pinned.key) << "alloxd's pin is no constraint";
  kube::NodeFacts other{"gpu-2", {{"a", "1"}}, {}, false};
  EXPECT_FALSE(pinned.placement->refuses(other).has_value());

  // The same pin written with a second value is the owner's: kept.
  json owners = pin;
  owners[0]["matchFields"][0]["values"] = {"gpu-1", "gpu-3"};
  const PodConstraints kept =
      read_pod_constraints(pod_with({{"affinity", required_terms(owners)}}));
  ASSERT_NE(nullptr, kept.placement);
  EXPECT_EQ(kube::kNodeAffinityReason, kept.placement->refuses(other).value_or(""));
  // The key reads back as itself.
  EXPECT_EQ(kept.key, read_pod_constraints(json{{"spec", json::parse(kept.key)}}).key);
}

TEST(PodConstraintsReadTest, AVariantWithoutConstraintsStillMeetsTaintsAndTheCordon) {
  JobVariant variant;
  EXPECT_TRUE(variant.may_go_to({"a", {}, {}, false}));
  EXPECT_FALSE(variant.may_go_to({"a", {}, {}, true}));
  EXPECT_FALSE(variant.may_go_to({"a", {}, {{"k", "v", "NoExecute"}}, false}));
  EXPECT_TRUE(variant.may_go_to({"a", {}, {{"k", "v", "PreferNoSchedule"}}, false}));
  variant.placement =
      read_pod_constraints(pod_with({{"tolerations", {{{"operator", "Exists"}}}}})).placement;
  ASSERT_NE(nullptr, variant.placement);
  EXPECT_TRUE(variant.may_go_to({"a", {}, {{"k", "v", "NoExecute"}}, true}));
}

// A pod alloxd books is checked against many nodes in every plan: more than kMaxPodConstraints
// of one kind of constraint is refused naming the field; the bound itself is read.
TEST(PodConstraintsReadTest, APodOverTheBoundOfOneKindIsRefusedNamingTheField) {
  DeviceMapping mapping;
  mapping.resources = {{"nvidia.com/gpu", "gpu", {}}};
  auto with = [](json pod, const std::string& field, const json& value) {
    pod["spec"][field] = value;
    return pod;
  };
  const json base = testing::make_pod("team-a", "p", "nvidia.com/gpu");
  ASSERT_TRUE(read_job_variant(base, mapping).ok());
  for (std::size_t n : {kMaxPodConstraints, kMaxPodConstraints + 1}) {
    const bool over = n > kMaxPodConstraints;
    json selector = json::object(), tolerations = json::array(), expressions = json::array(),
         empty_terms = json::array();
    for (std::size_t i = 0; i < n; ++i) {
      const std::string key = "example.com/k" + std::to_string(i);
      selector[key] = "v";
      tolerations.push_back({{"key", key}, {"operator", "Exists"}});
      expressions.push_back({{"key", key}, {"operator", "Exists"}});
      empty_terms.push_back(json::object());
    }
    // One term of n requirements, n terms of none, and n split between expressions and fields.
    json split =
        json::array({{{"matchExpressions", json::array()}, {"matchFields", json::array()}}});
    for (std::size_t i = 0; i < n; ++i) {
      split[0][i % 2 == 0 ? "matchExpressions" : "matchFields"].push_back(expressions[i]);
    }
    const std::vector<std::pair<json, std::string>> cases = {
        {with(base, "nodeSelector", selector), "Pod.spec.nodeSelector: "},
        {with(base, "tolerations", tolerations), "Pod.spec.tolerations: "},
        {with(base, "affinity", required_terms(json::array({{{"matchExpressions", expressions}}}))),
         "Pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: "},
        {with(base, "affinity", required_terms(empty_terms)),
         "Pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: "},
        {with(base, "affinity", required_terms(split)),
         "Pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: "},
    };
    for (const auto& [pod, field] : cases) {
      auto variant = read_job_variant(pod, mapping);
      EXPECT_EQ(!over, variant.ok()) << field << n;
      if (over && !variant.ok()) {
        EXPECT_EQ(0u, variant.message().find(field + std::to_string(n) + " ")) << variant.message();
        EXPECT_NE(std::string::npos, variant.message().find("over the 128 alloxd reads"))
            << variant.message();
      }
    }
  }
}

// ---- Hostile sizes --------------------------------------------------------------------------

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void report(const char* what, std::size_t bytes, double ms) {
  std::printf("[ timing ] %-66s %8.2f MB %10.3f ms\n", what, static_cast<double>(bytes) / 1e6, ms);
}

// `n` NoSchedule taints t0..t{n-1} = v, and `labels` labels l0..l{labels-1} = v.
json node_with(const std::string& name, int taints, int labels) {
  json node = {{"metadata", {{"name", name}, {"labels", json::object()}}},
               {"spec", {{"taints", json::array()}}},
               {"status", {{"allocatable", {{"cpu", "64"}, {"nvidia.com/gpu", "8"}}}}}};
  for (int i = 0; i < taints; ++i) {
    node["spec"]["taints"].push_back(
        {{"key", "example.com/t" + std::to_string(i)}, {"value", "v"}, {"effect", "NoSchedule"}});
  }
  for (int i = 0; i < labels; ++i)
    node["metadata"]["labels"]["example.com/l" + std::to_string(i)] = "v";
  return node;
}

TEST(HostileSizesTest, ANodeOf10000TaintsAnd10000Labels) {
  const json node = node_with("big", 10000, 10000);
  const std::size_t bytes = node.dump().size();
  ASSERT_LT(bytes, kApiServerRequestBytes);
  auto start = Clock::now();
  const kube::NodeFacts facts = kube::node_facts(node);
  report("node_facts: 10,000 taints, 10,000 labels", bytes, ms_since(start));
  EXPECT_EQ(10000u, facts.taints.size());
  EXPECT_EQ(10000u, facts.labels.size());
  DeviceMapping devices;
  start = Clock::now();
  auto inventory = node_inventory(node, devices);
  report("node_inventory: the same node", bytes, ms_since(start));
  ASSERT_TRUE(inventory.ok()) << inventory.message();
  EXPECT_EQ(8, inventory->machines.at("gpu"));
  EXPECT_EQ("", inventory->closed) << "other taints leave a node open";
}

TEST(HostileSizesTest, APodOf10000TolerationsAndA1MBNodeSelector) {
  json spec = {{"tolerations", json::array()}, {"nodeSelector", json::object()}};
  for (int i = 0; i < 10000; ++i) {
    spec["tolerations"].push_back({{"key", "example.com/t" + std::to_string(i)},
                                   {"operator", "Equal"},
                                   {"value", "v"},
                                   {"effect", "NoSchedule"}});
  }
  // 1 MB of selector: about 20,000 labels of 50 bytes.
  for (std::size_t i = 0, bytes = 2; bytes < 1000000; ++i) {
    const std::string key = "selector.example.com/label-" + std::to_string(i);
    const std::string value = "value-" + std::to_string(i);
    spec["nodeSelector"][key] = value;
    bytes += key.size() + value.size() + 6;  // "key":"value",
  }
  const json pod = pod_with(spec);
  const std::size_t bytes = pod.dump().size();
  ASSERT_LT(bytes, kApiServerRequestBytes);
  auto start = Clock::now();
  const PodConstraints constraints = read_pod_constraints(pod);
  report("read_pod_constraints: 10,000 tolerations, 1 MB nodeSelector", bytes, ms_since(start));
  ASSERT_NE(nullptr, constraints.placement);
  const kube::PodPlacement& placement = *constraints.placement;
  EXPECT_EQ(10000u, placement.tolerations().size());

  // Every one of the node's 10,000 taints tolerated, each by a different toleration: then the
  // selector, whose first label the node lacks.
  const kube::NodeFacts tainted = kube::node_facts(node_with("big", 10000, 10000));
  start = Clock::now();
  auto why = placement.refuses(tainted);
  report("refuses: those tolerations x 10,000 tainted node", bytes, ms_since(start));
  EXPECT_EQ(kube::kNodeAffinityReason, why.value_or(""));

  // The node lacks a toleration's taint last in its list: refused for that one.
  json node = node_with("big", 10000, 0);
  node["spec"]["taints"].push_back({{"key", "other"}, {"value", "v"}, {"effect", "NoExecute"}});
  const kube::NodeFacts untolerated = kube::node_facts(node);
  start = Clock::now();
  why = placement.refuses(untolerated);
  report("refuses: the same, the node's last taint untolerated", bytes, ms_since(start));
  EXPECT_EQ("node(s) had untolerated taint {other: v}", why.value_or(""));

  // A node with every selector label and no taint: each of the 20,000 entries looked up.
  kube::NodeFacts labelled{"n", {}, {}, false};
  for (const auto& [key, value] : spec["nodeSelector"].items())
    labelled.labels.emplace(key, value.get<std::string>());
  start = Clock::now();
  why = placement.refuses(labelled);
  report("refuses: the 1 MB nodeSelector, every label on the node", bytes, ms_since(start));
  EXPECT_FALSE(why.has_value()) << *why;
}

// Required node affinity whose every requirement is checked on the node: `terms` terms of
// `expressions` requirements each with `values` values, the node passing all but the last
// requirement of each term but the last (so every requirement is evaluated).
struct AffinityShape {
  int terms, expressions, values;
  const char* op;
};

void time_affinity(const AffinityShape& shape, const std::string& label) {
  json terms = json::array();
  for (int t = 0; t < shape.terms; ++t) {
    json expressions = json::array();
    for (int e = 0; e < shape.expressions; ++e) {
      json values = json::array();
      for (int v = 0; v < shape.values; ++v) values.push_back("v" + std::to_string(v));
      // In: the node's value is the list's last; NotIn: it is in no list.
      if (std::string(shape.op) == "In" && t + 1 < shape.terms && e + 1 == shape.expressions)
        values.back() = "absent";
      expressions.push_back(
          {{"key", "k" + std::to_string(e)}, {"operator", shape.op}, {"values", values}});
    }
    if (std::string(shape.op) == "NotIn" && t + 1 < shape.terms)
      expressions.back()["values"].back() = "node";  // this term fails on its last requirement
    terms.push_back({{"matchExpressions", expressions}});
  }
  const json pod = pod_with({{"affinity", required_terms(terms)}});
  const std::size_t bytes = pod.dump().size();
  ASSERT_LT(bytes, kApiServerRequestBytes) << label;
  kube::NodeFacts node{"n", {}, {}, false};
  const std::string value =
      std::string(shape.op) == "In" ? "v" + std::to_string(shape.values - 1) : "node";
  for (int e = 0; e < shape.expressions; ++e) node.labels["k" + std::to_string(e)] = value;

  auto start = Clock::now();
  const PodConstraints constraints = read_pod_constraints(pod);
  report(("read_pod_constraints: " + label).c_str(), bytes, ms_since(start));
  ASSERT_NE(nullptr, constraints.placement);
  start = Clock::now();
  auto why = constraints.placement->refuses(node);
  report(("refuses, every requirement checked: " + label).c_str(), bytes, ms_since(start));
  EXPECT_FALSE(why.has_value()) << label << ": " << *why;
  node.labels["k0"] = "elsewhere";
  why = constraints.placement->refuses(node);
  if (std::string(shape.op) == "In") {
    EXPECT_EQ(kube::kNodeAffinityReason, why.value_or("")) << label;
  }
}

TEST(HostileSizesTest, RequiredAffinityUpTo3MB) {
  // 10,000 terms x 10 requirements x 1,000 values would be 10^8 values, over 500 MB; these are
  // the shapes of that kind that fit in 3 MB.
  time_affinity({5000, 10, 1, "In"}, "5,000 terms x 10 In x 1 value");
  time_affinity({600, 10, 80, "In"}, "600 terms x 10 In x 80 values");
  time_affinity({1, 10, 30000, "In"}, "1 term x 10 In x 30,000 values");
  time_affinity({1, 10, 30000, "NotIn"}, "1 term x 10 NotIn x 30,000 values");
  time_affinity({1, 1, 250000, "NotIn"}, "1 term x 1 NotIn x 250,000 values");
}

}  // namespace
}  // namespace allox::extender
