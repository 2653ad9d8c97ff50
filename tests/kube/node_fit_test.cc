// kube/node_fit.h: kube-scheduler v1.28's NodeUnschedulable, TaintToleration and NodeAffinity
// filters, with their reasons, on any JSON.
#include "kube/node_fit.h"

#include <gtest/gtest.h>

namespace allox::kube {
namespace {

using nlohmann::json;

json labelled(const std::string& name, const json& labels) {
  return {{"metadata", {{"name", name}, {"labels", labels}}}};
}

json with_tolerations(const json& tolerations) {
  return {{"spec", {{"tolerations", tolerations}}}};
}

NodeAffinity required(const std::string& terms) {
  return NodeAffinity(json::parse(
      R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
          {"nodeSelectorTerms":)" +
      terms + "}}}}}"));
}

NodeAffinity expression(const std::string& key, const std::string& op, const json& values) {
  json requirement = {{"key", key}, {"operator", op}};
  if (!values.is_null()) requirement["values"] = values;
  return required(json::array({{{"matchExpressions", json::array({requirement})}}}).dump());
}

// core/v1 Toleration.ToleratesTaint, every operator, effect and key combination.
TEST(TolerationTest, ToleratesTaintAsCoreV1Does) {
  const Taint gpu{"gpu", "a100", "NoSchedule"};
  struct Case {
    Toleration toleration;
    bool expected;
  };
  const Case cases[] = {
      // Equal (also the empty operator): key, value and effect.
      {{"gpu", "Equal", "a100", "NoSchedule"}, true},
      {{"gpu", "", "a100", "NoSchedule"}, true},
      {{"gpu", "Equal", "h100", "NoSchedule"}, false},
      {{"gpu", "Equal", "", "NoSchedule"}, false},
      {{"gpu", "Equal", "a100", ""}, true},  // empty effect: every effect
      {{"gpu", "Equal", "a100", "NoExecute"}, false},
      {{"gpu", "Equal", "a100", "PreferNoSchedule"}, false},
      {{"other", "Equal", "a100", "NoSchedule"}, false},
      // Exists: any value.
      {{"gpu", "Exists", "", "NoSchedule"}, true},
      {{"gpu", "Exists", "ignored", ""}, true},
      {{"gpu", "Exists", "", "NoExecute"}, false},
      {{"other", "Exists", "", ""}, false},
      // Empty key with Exists: every taint (of the effect, when set).
      {{"", "Exists", "", ""}, true},
      {{"", "Exists", "", "NoSchedule"}, true},
      {{"", "Exists", "", "NoExecute"}, false},
      // Empty key with Equal (API validation refuses it): any key, the value must match.
      {{"", "Equal", "a100", ""}, true},
      {{"", "", "h100", ""}, false},
      // Other operators match nothing (Gt and Lt are not toleration operators in v1.28).
      {{"gpu", "Gt", "a100", "NoSchedule"}, false},
      {{"gpu", "exists", "", "NoSchedule"}, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.expected, tolerates(c.toleration, gpu))
        << c.toleration.key << " " << c.toleration.op << " " << c.toleration.value << " "
        << c.toleration.effect;
  }
  // An empty taint value meets an Equal toleration with an empty value.
  EXPECT_TRUE(tolerates({"dedicated", "Equal", "", "NoSchedule"}, {"dedicated", "", "NoSchedule"}));
}

TEST(NodeFactsTest, ReadsNameLabelsTaintsAndCordon) {
  const json node = json::parse(R"({
    "metadata": {"name": "n1", "labels": {"zone": "z1", "count": 3, "gpu": "a100"}},
    "spec": {"unschedulable": true, "taints": [
      {"key": "a", "value": "1", "effect": "NoSchedule", "timeAdded": "2024-01-01T00:00:00Z"},
      {"key": "b", "effect": "PreferNoSchedule"},
      {"key": "c", "value": null, "effect": "NoExecute"},
      "not an object",
      {"key": 5, "effect": "NoSchedule"},
      {"key": "d", "value": 7, "effect": "NoSchedule"},
      {"key": "e", "value": "x"},
      {"value": "x", "effect": "NoSchedule"}
    ]}
  })");
  const NodeFacts facts = node_facts(node);
  EXPECT_EQ("n1", facts.name);
  EXPECT_EQ((std::map<std::string, std::string>{{"zone", "z1"}, {"gpu", "a100"}}), facts.labels);
  EXPECT_TRUE(facts.unschedulable);
  EXPECT_EQ((std::vector<Taint>{
                {"a", "1", "NoSchedule"}, {"b", "", "PreferNoSchedule"}, {"c", "", "NoExecute"}}),
            facts.taints);
}

TEST(NodeFactsTest, AnyJsonReadsWithoutThrowing) {
  const json hostile[] = {
      json(),
      json(5),
      json("node"),
      json::array({1, 2, 3}),
      json::parse(R"({"metadata": 5, "spec": []})"),
      json::parse(R"({"metadata": {"name": 5, "labels": [1, 2]}, "spec": {"taints": {}}})"),
      json::parse(R"({"metadata": {"labels": null}, "spec": {"unschedulable": "true"}})"),
      json::parse(R"({"spec": {"unschedulable": 1, "taints": [null, [], {"key": null}]}})"),
      json::parse(R"({"spec": null, "metadata": null})"),
  };
  for (const json& node : hostile) {
    NodeFacts facts;
    EXPECT_NO_THROW(facts = node_facts(node)) << node.dump();
    EXPECT_EQ(NodeFacts{}, facts) << node.dump();
  }
  // A huge list: every well-formed entry kept, in order.
  json taints = json::array();
  for (int i = 0; i < 100000; ++i) {
    taints.push_back(i % 2 == 0 ? json{{"key", "k" + std::to_string(i)}, {"effect", "NoSchedule"}}
                                : json(i));
  }
  const NodeFacts facts = node_facts({{"spec", {{"taints", taints}}}});
  ASSERT_EQ(50000u, facts.taints.size());
  EXPECT_EQ("k99998", facts.taints.back().key);
}

// NodeAffinity's filter: the node selector and the required terms (ORed; each term's
// requirements ANDed), on labels and on the node's name.
TEST(NodeAffinityTest, SelectorAndRequiredTermsMatchAsKubeSchedulerDoes) {
  const json a = labelled("a", {{"zone", "z1"}, {"gpu", "a100"}});
  const json b = labelled("b", {{"zone", "z2"}});
  EXPECT_FALSE(NodeAffinity(json::parse(R"({"spec":{}})")).any());
  EXPECT_TRUE(NodeAffinity(json::parse(R"({"spec":{}})")).matches(&a, "a"));
  EXPECT_FALSE(NodeAffinity().any());

  NodeAffinity selector(json::parse(R"({"spec":{"nodeSelector":{"zone":"z1"}}})"));
  EXPECT_TRUE(selector.any());
  EXPECT_TRUE(selector.matches(&a, "a"));
  EXPECT_FALSE(selector.matches(&b, "b"));
  EXPECT_FALSE(selector.matches(nullptr, "c"));
  EXPECT_FALSE(selector.names());
  // The labels overload agrees.
  EXPECT_TRUE(selector.matches(node_facts(a).labels, "a"));
  EXPECT_FALSE(selector.matches(node_facts(b).labels, "b"));
  EXPECT_FALSE(selector.matches(std::map<std::string, std::string>{}, "c"));
  // A selector value of "" still needs the label.
  NodeAffinity empty_value(json::parse(R"({"spec":{"nodeSelector":{"gpu":""}}})"));
  EXPECT_FALSE(empty_value.matches(&b, "b"));
  EXPECT_TRUE(empty_value.matches({{"gpu", ""}}, "b"));

  NodeAffinity expressions = required(
      R"([{"matchExpressions":[{"key":"gpu","operator":"Exists"},
                               {"key":"zone","operator":"NotIn","values":["z2"]}]},
          {"matchExpressions":[{"key":"gpu","operator":"DoesNotExist"},
                               {"key":"zone","operator":"In","values":["z2","z3"]}]}])");
  EXPECT_TRUE(expressions.matches(&a, "a"));  // first term
  EXPECT_TRUE(expressions.matches(&b, "b"));  // second term
  EXPECT_FALSE(expressions.matches(nullptr, "c"));
  EXPECT_TRUE(expressions.matches(node_facts(a).labels, "a"));
  EXPECT_TRUE(expressions.matches(node_facts(b).labels, "b"));
  EXPECT_FALSE(expressions.names());
  // NotIn passes a node without the label.
  EXPECT_TRUE(expression("gpu", "NotIn", {"h100"}).matches(&b, "b"));

  NodeAffinity pinned =
      required(R"([{"matchFields":[{"key":"metadata.name","operator":"In","values":["b"]}]}])");
  EXPECT_FALSE(pinned.matches(&a, "a"));
  EXPECT_TRUE(pinned.matches(&b, "b"));
  EXPECT_TRUE(pinned.matches(std::map<std::string, std::string>{}, "b"));
  ASSERT_TRUE(pinned.names());
  EXPECT_EQ((std::vector<std::string>{"b"}), *pinned.names());
  NodeAffinity not_b =
      required(R"([{"matchFields":[{"key":"metadata.name","operator":"NotIn","values":["b"]}]}])");
  EXPECT_TRUE(not_b.matches(&a, "a"));
  EXPECT_FALSE(not_b.matches(&b, "b"));
  EXPECT_FALSE(not_b.names());
  // A term naming nodes beside one that does not: every node is a candidate.
  EXPECT_FALSE(
      required(R"([{"matchFields":[{"key":"metadata.name","operator":"In","values":["b"]}]},
                   {"matchExpressions":[{"key":"gpu","operator":"Exists"}]}])")
          .names());
  // Terms that each name nodes: the union of each term's intersection.
  NodeAffinity two = required(
      R"([{"matchFields":[{"key":"metadata.name","operator":"In","values":["a","b"]},
                          {"key":"metadata.name","operator":"In","values":["b","c"]}]},
          {"matchFields":[{"key":"metadata.name","operator":"In","values":["d"]}]}])");
  ASSERT_TRUE(two.names());
  EXPECT_EQ((std::vector<std::string>{"b", "d"}), *two.names());
  // An empty term, or required affinity without terms, matches no node.
  EXPECT_FALSE(required(R"([{}])").matches(&a, "a"));
  EXPECT_FALSE(required(R"([])").matches(&a, "a"));
  EXPECT_TRUE(required(R"([])").any());
}

// Requirements parse as labels.NewRequirement and the field selector parse them: one that does
// not makes its term match nothing, while the other terms still count.
TEST(NodeAffinityTest, ARequirementThatDoesNotParseVoidsItsTerm) {
  const json a = labelled("a", {{"zone", "z1"}});
  EXPECT_FALSE(expression("zone", "In", json::array()).matches(&a, "a"));
  EXPECT_FALSE(expression("zone", "NotIn", json::array()).matches(&a, "a"));
  EXPECT_FALSE(expression("other", "NotIn", json::array()).matches(&a, "a"));
  EXPECT_FALSE(expression("zone", "Exists", {"z1"}).matches(&a, "a"));
  EXPECT_FALSE(expression("other", "DoesNotExist", {"x"}).matches(&a, "a"));
  EXPECT_FALSE(expression("zone", "Equals", {"z1"}).matches(&a, "a"));
  EXPECT_FALSE(expression("", "DoesNotExist", nullptr).matches(&a, "a"));  // invalid key
  EXPECT_FALSE(expression("a/b/c", "DoesNotExist", nullptr).matches(&a, "a"));
  EXPECT_FALSE(expression("other", "NotIn", {"not valid"}).matches(&a, "a"));  // invalid value
  EXPECT_TRUE(expression("example.com/other", "NotIn", {"x", ""}).matches(&a, "a"));
  // Wrong-typed members make the requirement unparsable, not absent.
  EXPECT_FALSE(required(R"([{"matchExpressions":[{"key":"zone","operator":"In","values":[1]}]}])")
                   .matches(&a, "a"));
  EXPECT_FALSE(
      required(R"([{"matchExpressions":{"key":"zone","operator":"Exists"}}])").matches(&a, "a"));
  EXPECT_FALSE(required(R"([{"matchExpressions":[5]}])").matches(&a, "a"));
  // matchFields: In or NotIn with exactly one value.
  EXPECT_FALSE(
      required(R"([{"matchFields":[{"key":"metadata.name","operator":"In","values":["a","b"]}]}])")
          .matches(&a, "a"));
  EXPECT_FALSE(required(R"([{"matchFields":[{"key":"metadata.name","operator":"Exists"}]}])")
                   .matches(&a, "a"));
  // Another field reads as "".
  EXPECT_TRUE(required(R"([{"matchFields":[{"key":"spec.x","operator":"In","values":[""]}]}])")
                  .matches(&a, "a"));
  // A void term beside a good one: the good one decides.
  EXPECT_TRUE(required(R"([{"matchExpressions":[{"key":"zone","operator":"In","values":[]}]},
                           {"matchExpressions":[{"key":"zone","operator":"In","values":["z1"]}]}])")
                  .matches(&a, "a"));
}

// Gt and Lt: the label and the one value as base-10 int64; a label that is no integer fails.
TEST(NodeAffinityTest, GtAndLtCompareIntegers) {
  // On the node object and on its labels alike.
  auto matches = [](const NodeAffinity& affinity, const std::string& cores) {
    const json node = labelled("n", {{"cores", cores}});
    const bool on_object = affinity.matches(&node, "n");
    EXPECT_EQ(on_object, affinity.matches(node_facts(node).labels, "n")) << cores;
    return on_object;
  };
  const NodeAffinity gt = expression("cores", "Gt", {"8"});
  const NodeAffinity lt = expression("cores", "Lt", {"8"});
  EXPECT_TRUE(matches(gt, "16"));
  EXPECT_FALSE(matches(gt, "8"));
  EXPECT_FALSE(matches(gt, "4"));
  EXPECT_TRUE(matches(lt, "4"));
  EXPECT_TRUE(matches(lt, "-3"));
  EXPECT_TRUE(matches(lt, "+3"));
  EXPECT_FALSE(matches(lt, "8"));
  EXPECT_TRUE(matches(gt, "0009"));  // decimal, leading zeros allowed
  for (const char* bad : {"", "eight", "8.5", "1e3", " 9", "9 ", "0x10", "+", "-",
                          "99999999999999999999", "9223372036854775808"}) {
    EXPECT_FALSE(matches(gt, bad)) << bad;
    EXPECT_FALSE(matches(lt, bad)) << bad;
  }
  EXPECT_TRUE(matches(gt, "9223372036854775807"));
  EXPECT_TRUE(matches(lt, "-9223372036854775808"));
  const json unlabelled = labelled("n", {{"other", "16"}});
  EXPECT_FALSE(gt.matches(&unlabelled, "n"));
  // The value: exactly one integer that is also a valid label value.
  EXPECT_FALSE(matches(expression("cores", "Gt", {"8", "9"}), "16"));
  EXPECT_FALSE(matches(expression("cores", "Gt", json::array()), "16"));
  EXPECT_FALSE(matches(expression("cores", "Gt", {"eight"}), "16"));
  EXPECT_FALSE(matches(expression("cores", "Lt", {"-1"}), "-5"));
}

TEST(NodeAffinityTest, AnyPodJsonBuildsWithoutThrowing) {
  const json hostile[] = {
      json(),
      json(1),
      json::array(),
      json::parse(R"({"spec": 5})"),
      json::parse(R"({"spec": {"nodeSelector": [1], "affinity": 3}})"),
      json::parse(R"({"spec": {"affinity": {"nodeAffinity": []}}})"),
      json::parse(R"({"spec": {"affinity": {"nodeAffinity":
          {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": 7}}}}})"),
      json::parse(R"({"spec": {"affinity": {"nodeAffinity":
          {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms":
            [null, 1, [], {"matchExpressions": [{"key": null, "operator": {}}]},
             {"matchFields": [{"key": "metadata.name", "operator": "In", "values": "a"}]}]}}}}})"),
      json::parse(R"({"spec": {"tolerations": {"key": "a"}}})"),
      json::parse(R"({"spec": {"tolerations": [null, 1, "x", {"key": 1}, {"operator": []}]}})"),
  };
  const json node = labelled("a", {{"zone", "z1"}});
  for (const json& pod : hostile) {
    EXPECT_NO_THROW({
      const PodPlacement placement(pod);
      (void)placement.refuses(node_facts(node));
      (void)placement.affinity().matches(&node, "a");
      (void)placement.affinity().matches(&pod, "a");
    }) << pod.dump();
    EXPECT_TRUE(PodPlacement(pod).tolerations().empty()) << pod.dump();
  }
}

// PodPlacement::refuses: kube-scheduler's reasons, in its filter order.
TEST(PodPlacementTest, RefusesWithKubeSchedulersReasonsInItsOrder) {
  NodeFacts plain{"plain", {{"zone", "z1"}}, {}, false};
  NodeFacts cordoned{"cordoned", {{"zone", "z1"}}, {}, true};
  NodeFacts tainted{"tainted",
                    {{"zone", "z1"}},
                    {{"soft", "x", "PreferNoSchedule"},
                     {"dedicated", "ml", "NoSchedule"},
                     {"evict", "", "NoExecute"}},
                    false};
  NodeFacts elsewhere{"elsewhere", {{"zone", "z2"}}, {{"dedicated", "ml", "NoSchedule"}}, true};

  const PodPlacement nothing;
  EXPECT_FALSE(nothing.constrained());
  EXPECT_EQ(std::nullopt, nothing.refuses(plain));
  EXPECT_EQ("node(s) were unschedulable", nothing.refuses(cordoned));
  EXPECT_EQ("node(s) had untolerated taint {dedicated: ml}", nothing.refuses(tainted));
  // NodeUnschedulable comes first.
  EXPECT_EQ("node(s) were unschedulable", nothing.refuses(elsewhere));
  // A pod built from JSON without placement states nothing either.
  EXPECT_FALSE(PodPlacement(json::parse(R"({"spec":{"containers":[]}})")).constrained());

  // Tolerating the first blocking taint: the next one is named, with its empty value.
  const PodPlacement dedicated(with_tolerations(json::parse(
      R"([{"key":"dedicated","operator":"Equal","value":"ml","effect":"NoSchedule"}])")));
  EXPECT_TRUE(dedicated.constrained());
  EXPECT_EQ("node(s) had untolerated taint {evict: }", dedicated.refuses(tainted));
  const PodPlacement both(with_tolerations(json::parse(
      R"([{"key":"dedicated","operator":"Exists"},{"key":"evict","operator":"Exists","effect":"NoExecute"}])")));
  EXPECT_EQ(std::nullopt, both.refuses(tainted));  // PreferNoSchedule never refuses
  EXPECT_EQ(
      std::nullopt,
      PodPlacement(with_tolerations(json::parse(R"([{"operator":"Exists"}])"))).refuses(tainted));

  // The cordon: only the unschedulable taint's toleration passes it.
  const PodPlacement cordon_ok(with_tolerations(json::parse(
      R"([{"key":"node.kubernetes.io/unschedulable","operator":"Exists","effect":"NoSchedule"}])")));
  EXPECT_TRUE(cordon_ok.tolerates_unschedulable());
  EXPECT_EQ(std::nullopt, cordon_ok.refuses(cordoned));
  EXPECT_FALSE(dedicated.tolerates_unschedulable());
  EXPECT_EQ("node(s) were unschedulable", dedicated.refuses(cordoned));
  EXPECT_FALSE(PodPlacement(with_tolerations(json::parse(
                                R"([{"key":"node.kubernetes.io/unschedulable","effect":"NoExecute",
                                     "operator":"Exists"}])")))
                   .tolerates_unschedulable());
  // Past the cordon, the taint decides before the affinity (TaintToleration runs first).
  json pod = with_tolerations(
      json::parse(R"([{"key":"node.kubernetes.io/unschedulable","operator":"Exists"}])"));
  pod["spec"]["nodeSelector"] = {{"zone", "z1"}};
  const PodPlacement selector_and_cordon(pod);
  EXPECT_EQ("node(s) had untolerated taint {dedicated: ml}",
            selector_and_cordon.refuses(elsewhere));
  elsewhere.taints.clear();
  EXPECT_EQ("node(s) didn't match Pod's node affinity/selector",
            selector_and_cordon.refuses(elsewhere));
  EXPECT_EQ(std::nullopt, selector_and_cordon.refuses(cordoned));

  // Required affinity, by label and by name.
  json affine = json::parse(
      R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
          {"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["z2"]}]},
                                {"matchFields":[{"key":"metadata.name","operator":"In","values":["plain"]}]}]}}}}})");
  const PodPlacement affinity(affine);
  EXPECT_TRUE(affinity.constrained());
  EXPECT_EQ(std::nullopt, affinity.refuses(plain));  // by name
  EXPECT_EQ(std::nullopt, affinity.refuses(NodeFacts{"x", {{"zone", "z2"}}, {}, false}));
  EXPECT_EQ("node(s) didn't match Pod's node affinity/selector",
            affinity.refuses(NodeFacts{"x", {{"zone", "z1"}}, {}, false}));
}

TEST(PodPlacementTest, ReadsTolerationsSkippingMalformedEntries) {
  const PodPlacement placement(with_tolerations(json::parse(R"([
    {"key": "a", "operator": "Equal", "value": "1", "effect": "NoSchedule", "tolerationSeconds": 5},
    {"key": "b"},
    {"key": "c", "value": 3},
    7,
    {"operator": "Exists"}
  ])")));
  ASSERT_EQ(3u, placement.tolerations().size());
  EXPECT_EQ("a", placement.tolerations()[0].key);
  EXPECT_EQ("Equal", placement.tolerations()[0].op);
  EXPECT_EQ("1", placement.tolerations()[0].value);
  EXPECT_EQ("NoSchedule", placement.tolerations()[0].effect);
  EXPECT_EQ("b", placement.tolerations()[1].key);
  EXPECT_EQ("", placement.tolerations()[1].op);
  EXPECT_EQ("Exists", placement.tolerations()[2].op);
  EXPECT_TRUE(placement.tolerates_unschedulable());  // the empty key with Exists
}

}  // namespace
}  // namespace allox::kube
