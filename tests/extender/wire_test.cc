// extender/wire.h: upstream's golden messages round-trip field by field; keys match
// case-insensitively; malformed bodies are errors naming the problem.
#include "extender/wire.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/extender/golden.h"
#include "tests/extender/test_support.h"

namespace allox::extender {
namespace {

using nlohmann::json;
using testing::field_difference;
using testing::golden_messages;
using testing::GoldenKind;

// parse -> render for the message kinds allox renders.
Expected<json> round_trip(GoldenKind kind, const std::string& body) {
  switch (kind) {
    case GoldenKind::kExtenderArgs: {
      auto v = parse_extender_args(body);
      if (!v) return v.error();
      return to_json(*v);
    }
    case GoldenKind::kFilterResult: {
      auto v = parse_filter_result(body);
      if (!v) return v.error();
      return to_json(*v);
    }
    case GoldenKind::kHostPriorities: {
      auto v = parse_host_priorities(body);
      if (!v) return v.error();
      json list = to_json(*v);
      // upstream's golden test serialises a single HostPriority, not a list
      return json::parse(body).is_object() ? list[0] : list;
    }
    case GoldenKind::kBindingArgs: {
      auto v = parse_binding_args(body);
      if (!v) return v.error();
      return to_json(*v);
    }
    case GoldenKind::kBindingResult: {
      auto v = parse_binding_result(body);
      if (!v) return v.error();
      return to_json(*v);
    }
    case GoldenKind::kPreemptionArgs: {
      // allox never sends these; rebuild the message from what it read (the pod it kept and the
      // victims rendered back as meta victims), so every field sent must survive the reading.
      // Full victims cannot be rebuilt from UIDs: each of their nodes must have been read with
      // the UIDs its pods carry and its PDB violations, and only then is the map echoed.
      auto v = parse_preemption_args(body);
      if (!v) return v.error();
      json full = json::parse(body).value("NodeNameToVictims", json());
      if (!full.is_object() && !full.is_null()) return Error{"NodeNameToVictims is not a map"};
      const json& nodes = full.is_null() ? json::object() : full;
      for (const auto& [node, victims] : nodes.items()) {
        auto read = v->victims.find(node);
        if (read == v->victims.end()) return Error{"full victims of " + node + " were not read"};
        if (read->second.num_pdb_violations != victims.value("NumPDBViolations", 0)) {
          return Error{"NumPDBViolations of " + node + " was not read"};
        }
        for (const json& pod : victims["Pods"]) {
          const std::string uid = pod["metadata"].value("uid", "");
          const auto& uids = read->second.pod_uids;
          if (!uid.empty() && std::find(uids.begin(), uids.end(), uid) == uids.end()) {
            return Error{"victim " + uid + " on " + node + " was not read"};
          }
        }
      }
      return json{{"Pod", v->pod},
                  {"NodeNameToVictims", full},
                  {"NodeNameToMetaVictims",
                   to_json(PreemptionResult{v->victims})["NodeNameToMetaVictims"]}};
    }
    case GoldenKind::kPreemptionResult: {
      auto v = parse_preemption_result(body);
      if (!v) return v.error();
      return to_json(*v);
    }
  }
  return Error{"unknown kind"};
}

TEST(WireGoldenTest, EveryGoldenFileIsCovered) {
  std::vector<std::string> unknown;
  auto messages = golden_messages(&unknown);
  EXPECT_TRUE(unknown.empty()) << "golden files without a kind: " << unknown.front();
  EXPECT_GE(messages.size(), 14u);  // 7 files + 7 jsonl lines shipped today
}

TEST(WireGoldenTest, EveryMessageRoundTripsFieldByField) {
  for (const auto& message : golden_messages()) {
    SCOPED_TRACE(message.source + " as " + testing::golden_kind_name(message.kind));
    auto rendered = round_trip(message.kind, message.body);
    ASSERT_TRUE(rendered.ok()) << rendered.message();
    EXPECT_EQ("", field_difference(json::parse(message.body), *rendered));
  }
}

TEST(WireGoldenTest, FilterArgsReadTheCandidateNodesAndThePod) {
  std::string body =
      testing::read_text_file(ALLOX_SOURCE_DIR "/data/kube-extender/filter_args_nodecache.json");
  auto args = parse_extender_args(body);
  ASSERT_TRUE(args.ok()) << args.message();
  EXPECT_EQ((std::vector<std::string>{"gpu-node-1", "gpu-node-2", "cpu-node-1"}),
            args->candidates());
  EXPECT_FALSE(args->node_objects.has_value());
  EXPECT_EQ("resnet-train-0", args->pod["metadata"]["name"]);
}

TEST(WireGoldenTest, FullNodesShapeNamesCandidatesFromTheObjects) {
  auto args = parse_extender_args(
      R"({"Pod":{"metadata":{"name":"p"}},"Nodes":{"items":[{"metadata":{"name":"a"}},)"
      R"({"metadata":{"name":"b"}}]},"NodeNames":null})");
  ASSERT_TRUE(args.ok()) << args.message();
  EXPECT_EQ((std::vector<std::string>{"a", "b"}), args->candidates());
  ASSERT_TRUE(args->node_objects.has_value());
  EXPECT_EQ(2u, args->node_objects->size());
}

TEST(WireTest, KeysMatchCaseInsensitivelyWithExactCaseFirst) {
  auto lower = parse_binding_args(R"({"podname":"p","podnamespace":"ns","poduid":"u","node":"n"})");
  ASSERT_TRUE(lower.ok()) << lower.message();
  EXPECT_EQ("p", lower->pod_name);
  EXPECT_EQ("ns", lower->pod_namespace);
  EXPECT_EQ("u", lower->pod_uid);
  EXPECT_EQ("n", lower->node);

  auto both = parse_binding_args(R"({"node":"folded","Node":"exact","PodName":"p"})");
  ASSERT_TRUE(both.ok()) << both.message();
  EXPECT_EQ("exact", both->node);

  auto args = parse_extender_args(R"({"pod":{"metadata":{"name":"p"}},"nodenames":["x"]})");
  ASSERT_TRUE(args.ok()) << args.message();
  EXPECT_EQ(std::vector<std::string>{"x"}, args->candidates());
}

TEST(WireTest, MalformedBodiesNameTheProblem) {
  struct Case {
    const char* body;
    const char* error;
  };
  const Case cases[] = {
      {"", "malformed JSON"},
      {"{", "malformed JSON"},
      {"[]", "ExtenderArgs: expected an object, got array"},
      {"{}", "Pod: missing"},
      {R"({"Pod":null})", "Pod: missing"},
      {R"({"Pod":"x"})", "Pod: expected an object, got string"},
      {R"({"Pod":{},"NodeNames":"a"})", "NodeNames: expected a list, got string"},
      {R"({"Pod":{},"NodeNames":["a",3]})", "NodeNames[1]: expected a string, got number"},
      {R"({"Pod":{},"Nodes":[]})", "Nodes: expected a NodeList object, got array"},
      {R"({"Pod":{},"Nodes":{"items":[{}]}})", "Nodes.items[0].metadata: missing"},
      {R"({"Pod":{},"Nodes":{"items":[{"metadata":{"name":1}}]}})",
       "Nodes.items[0].metadata.name: expected a string, got number"},
  };
  for (const Case& c : cases) {
    auto args = parse_extender_args(c.body);
    ASSERT_FALSE(args.ok()) << c.body;
    EXPECT_NE(std::string::npos, args.message().find(c.error))
        << c.body << " -> " << args.message();
  }
}

TEST(WireTest, BindingArgsNeedPodNameAndNode) {
  EXPECT_EQ("PodName: missing", parse_binding_args(R"({"Node":"n"})").message());
  EXPECT_EQ("Node: missing", parse_binding_args(R"({"PodName":"p"})").message());
  EXPECT_EQ("PodUID: expected a string, got number",
            parse_binding_args(R"({"PodName":"p","Node":"n","PodUID":7})").message());
}

TEST(WireTest, DeepNestingIsRejectedWithoutRecursingIntoIt) {
  std::string deep(100000, '[');
  auto args = parse_extender_args(deep);
  ASSERT_FALSE(args.ok());
  EXPECT_NE(std::string::npos, args.message().find("nested deeper than"));
}

TEST(WireTest, EmptyFilterResultRendersNullMapsAndAnEmptyList) {
  FilterResult result;
  result.node_names.emplace();
  json out = to_json(result);
  EXPECT_TRUE(out["NodeNames"].is_array());
  EXPECT_TRUE(out["NodeNames"].empty());
  EXPECT_TRUE(out["Nodes"].is_null());
  EXPECT_TRUE(out["FailedNodes"].is_null());
  EXPECT_TRUE(out["FailedAndUnresolvableNodes"].is_null());
  EXPECT_EQ("", out["Error"]);
  EXPECT_TRUE(to_json(PreemptionResult{})["NodeNameToMetaVictims"].is_null());
}

TEST(WireTest, FullVictimsAreReducedToUids) {
  auto args = parse_preemption_args(
      R"({"Pod":{"metadata":{"name":"p"}},"NodeNameToVictims":{"n1":{"Pods":[)"
      R"({"metadata":{"name":"v","uid":"u-1"}}],"NumPDBViolations":2}}})");
  ASSERT_TRUE(args.ok()) << args.message();
  ASSERT_EQ(1u, args->victims.count("n1"));
  EXPECT_EQ(std::vector<std::string>{"u-1"}, args->victims["n1"].pod_uids);
  EXPECT_EQ(2, args->victims["n1"].num_pdb_violations);
}

}  // namespace
}  // namespace allox::extender

namespace allox::extender {
namespace {

// render() writes what Go's encoding/json writes: upstream's field order and nulls, byte for byte
// (the expected texts are upstream's golden messages, data/kube-extender/).
TEST(WireTest, RenderingIsGoTextByteForByte) {
  EXPECT_EQ(
      R"({"PodName":"mypodname","PodNamespace":"mypodnamespace","PodUID":"mypoduid","Node":"mynode"})",
      render(BindingArgs{"mypodname", "mypodnamespace", "mypoduid", "mynode"}));
  EXPECT_EQ(R"({"Error":"myerror"})", render(BindingResult{"myerror"}));
  EXPECT_EQ(R"([{"Host":"myhost","Score":1}])", render(std::vector<HostPriority>{{"myhost", 1}}));
  PreemptionResult preemption;
  preemption.victims["foo"] = MetaVictims{{"myuid"}, 1};
  EXPECT_EQ(R"({"NodeNameToMetaVictims":{"foo":{"Pods":[{"UID":"myuid"}],"NumPDBViolations":1}}})",
            render(preemption));
  EXPECT_EQ(R"({"NodeNameToMetaVictims":null})", render(PreemptionResult{}));

  FilterResult result;
  result.node_names = std::vector<std::string>{"a", "b\"q"};
  result.failed_nodes = {{"d", ""}, {"c", "queued: \"x\" \\ \n\t\x01 é"}};
  result.failed_and_unresolvable_nodes = {{"e", "node has no gpu capacity"}};
  result.error = "boom";
  EXPECT_EQ(
      R"({"Nodes":null,"NodeNames":["a","b\"q"],"FailedNodes":{"c":"queued: \"x\" \\ \n\t\u0001 é","d":""},)"
      R"("FailedAndUnresolvableNodes":{"e":"node has no gpu capacity"},"Error":"boom"})",
      render(result));
  EXPECT_EQ(
      R"({"Nodes":null,"NodeNames":null,"FailedNodes":null,"FailedAndUnresolvableNodes":null,"Error":""})",
      render(FilterResult{}));
  result.node_objects = std::vector<nlohmann::json>{{{"metadata", {{"name", "a"}}}}};
  EXPECT_EQ(0u, render(result).rfind(
                    R"({"Nodes":{"metadata":{},"items":[{"metadata":{"name":"a"}}]},)", 0))
      << render(result);
}

}  // namespace
}  // namespace allox::extender
