// extender_api/wire.h: upstream's golden messages round-trip field by field; keys match
// case-insensitively; malformed bodies are errors naming the problem.
#include "extender_api/wire.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "tests/alloxd/testing/golden.h"
#include "tests/alloxd/testing/test_support.h"

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
      return json::parse(render(*v));
    }
    case GoldenKind::kFilterResult: {
      auto v = parse_filter_result(body);
      if (!v) return v.error();
      return json::parse(render(*v));
    }
    case GoldenKind::kHostPriorities: {
      auto v = parse_host_priorities(body);
      if (!v) return v.error();
      json list = json::parse(render(*v));
      // upstream's golden test serialises a single HostPriority, not a list
      return json::parse(body).is_object() ? list[0] : list;
    }
    case GoldenKind::kBindingArgs: {
      auto v = parse_binding_args(body);
      if (!v) return v.error();
      return json::parse(render(*v));
    }
    case GoldenKind::kBindingResult: {
      auto v = parse_binding_result(body);
      if (!v) return v.error();
      return json::parse(render(*v));
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
                   json::parse(render(PreemptionResult{v->victims}))["NodeNameToMetaVictims"]}};
    }
    case GoldenKind::kPreemptionResult: {
      auto v = parse_preemption_result(body);
      if (!v) return v.error();
      return json::parse(render(*v));
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
            args->candidates().strings());
  EXPECT_FALSE(args->node_objects.has_value());
  EXPECT_EQ("resnet-train-0", args->pod["metadata"]["name"]);
}

TEST(WireGoldenTest, FullNodesShapeNamesCandidatesFromTheObjects) {
  auto args = parse_extender_args(
      R"({"Pod":{"metadata":{"name":"p"}},"Nodes":{"items":[{"metadata":{"name":"a"}},)"
      R"({"metadata":{"name":"b"}}]},"NodeNames":null})");
  ASSERT_TRUE(args.ok()) << args.message();
  EXPECT_EQ((std::vector<std::string>{"a", "b"}), args->candidates().strings());
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
  EXPECT_EQ(std::vector<std::string>{"x"}, args->candidates().strings());
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
  json out = json::parse(render(result));
  EXPECT_TRUE(out["NodeNames"].is_array());
  EXPECT_TRUE(out["NodeNames"].empty());
  EXPECT_TRUE(out["Nodes"].is_null());
  EXPECT_TRUE(out["FailedNodes"].is_null());
  EXPECT_TRUE(out["FailedAndUnresolvableNodes"].is_null());
  EXPECT_EQ("", out["Error"]);
  EXPECT_TRUE(json::parse(render(PreemptionResult{}))["NodeNameToMetaVictims"].is_null());
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
  result.node_names = NodeNameList{"a", "b\"q"};
  result.failed_nodes = {{"d", ""}, {"c", "queued: \"x\" \\ \n\t\x01 é"}, {"d", "last wins"}};
  result.failed_and_unresolvable_nodes = {{"e", "node has no gpu capacity"}};
  result.error = "boom";
  EXPECT_EQ(
      R"({"Nodes":null,"NodeNames":["a","b\"q"],"FailedNodes":{"c":"queued: \"x\" \\ \n\t\u0001 é","d":"last wins"},)"
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

namespace allox::extender {
namespace {

using ordered = nlohmann::ordered_json;

// Where `got` does not keep `want`'s key order: every key of a `want` object must appear in the
// `got` object at that place, in the same relative order (keys upstream's older structs lack
// may sit between them), recursively. Embedded Kubernetes objects (`Pod`, the NodeList's
// `items`) are not wire types and are skipped. "" when the order is kept.
std::string key_order_difference(const ordered& want, const ordered& got, const std::string& at) {
  if (want.is_object() && got.is_object()) {
    std::vector<std::string> wanted, kept;
    for (const auto& [key, value] : want.items()) wanted.push_back(key);
    for (const auto& [key, value] : got.items()) {
      if (want.contains(key)) kept.push_back(key);
    }
    if (wanted != kept) {
      return at + ": keys " + ordered(kept).dump() + ", upstream's order " + ordered(wanted).dump();
    }
    for (const auto& [key, value] : want.items()) {
      if (key == "Pod" || key == "items") continue;
      std::string diff = key_order_difference(value, got[key], at + "." + key);
      if (!diff.empty()) return diff;
    }
  } else if (want.is_array() && got.is_array()) {
    for (std::size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
      std::string diff = key_order_difference(want[i], got[i], at + "[" + std::to_string(i) + "]");
      if (!diff.empty()) return diff;
    }
  }
  return "";
}

// allox's rendering of what it read from `body`, for every message kind it renders.
std::optional<std::string> rendered_as_allox(testing::GoldenKind kind, const std::string& body) {
  using testing::GoldenKind;
  switch (kind) {
    case GoldenKind::kExtenderArgs:
      return render(*parse_extender_args(body));
    case GoldenKind::kFilterResult:
      return render(*parse_filter_result(body));
    case GoldenKind::kHostPriorities:
      return render(*parse_host_priorities(body));
    case GoldenKind::kBindingArgs:
      return render(*parse_binding_args(body));
    case GoldenKind::kBindingResult:
      return render(*parse_binding_result(body));
    case GoldenKind::kPreemptionResult:
      return render(*parse_preemption_result(body));
    case GoldenKind::kPreemptionArgs:
      return std::nullopt;  // allox never sends these
  }
  return std::nullopt;
}

// The order of the keys allox writes is upstream's: the oracle is text Go wrote (upstream's golden
// types test, and the bodies a real kube-scheduler v1.28.7 sent), never text allox wrote.
TEST(WireTest, RenderedKeysFollowUpstreamsOrder) {
  struct Source {
    std::string name;
    testing::GoldenKind kind;
    std::string body;
  };
  std::vector<Source> sources;
  for (const auto& m : golden_messages()) {
    if (m.source.rfind("upstream_golden_types_test.jsonl", 0) == 0) {
      sources.push_back({m.source, m.kind, m.body});
    }
  }
  ASSERT_EQ(7u, sources.size()) << "one line per upstream type";
  const std::string real = ALLOX_SOURCE_DIR "/data/kube-extender/real-v1.28";
  for (const char* folder : {"nodecache-true", "nodecache-false"}) {
    for (const auto& entry : std::filesystem::directory_iterator(real + "/" + folder)) {
      const std::string name = entry.path().filename().string();
      std::optional<testing::GoldenKind> kind;
      if (name.ends_with("-filter.json") || name.ends_with("-prioritize.json")) {
        kind = testing::GoldenKind::kExtenderArgs;
      } else if (name.ends_with("-bind.json")) {
        kind = testing::GoldenKind::kBindingArgs;
      }
      if (kind) {
        sources.push_back({std::string(folder) + "/" + name, *kind,
                           testing::read_text_file(entry.path().string())});
      }
    }
  }
  ASSERT_GE(sources.size(), 7u + 20u) << "the real kube-scheduler's bodies were not found";
  for (const Source& source : sources) {
    SCOPED_TRACE(source.name);
    auto rendered = rendered_as_allox(source.kind, source.body);
    if (!rendered) continue;
    ordered want = ordered::parse(source.body);
    ordered got = ordered::parse(*rendered);
    if (source.kind == testing::GoldenKind::kHostPriorities && want.is_object()) {
      ASSERT_TRUE(got.is_array() && got.size() == 1) << *rendered;
      got = ordered(got[0]);
    }
    EXPECT_EQ("", key_order_difference(want, got, "$")) << *rendered;
  }
}

// The request path reads the pod's scheduling fields only; everything else allox reads from the
// body is the same as a whole read, and bodies are refused with the same message.
TEST(WireTest, ReadingOnlyThePodsFieldsKeepsWhatThePodReaderNeeds) {
  const std::string body = testing::read_text_file(
      ALLOX_SOURCE_DIR "/data/kube-extender/real-v1.28/nodecache-true/001-filter.json");
  auto whole = parse_extender_args(body);
  auto read = parse_extender_args(body, PodFields::kRead);
  ASSERT_TRUE(whole.ok()) << whole.message();
  ASSERT_TRUE(read.ok()) << read.message();
  EXPECT_EQ(whole->candidates(), read->candidates());
  EXPECT_TRUE(whole->pod["metadata"].contains("managedFields"));
  EXPECT_FALSE(read->pod["metadata"].contains("managedFields"));
  EXPECT_FALSE(read->pod.contains("status"));
  for (const char* path :
       {"/metadata/name", "/metadata/namespace", "/metadata/uid", "/metadata/labels",
        "/metadata/annotations", "/spec/schedulerName", "/spec/containers/0/resources"}) {
    const json::json_pointer pointer(path);
    ASSERT_TRUE(whole->pod.contains(pointer)) << path << " is in the recorded pod";
    EXPECT_EQ(whole->pod[pointer], read->pod[pointer]) << path;
  }
  EXPECT_FALSE(read->pod.contains(json::json_pointer("/spec/containers/0/image")));

  for (const char* bad : {R"({"Pod":{"metadata":{"managedFields":[1,2}}})",
                          R"({"Pod":{"spec":{"containers":[{"resources":{}}]}},"NodeNames":[1]})",
                          R"({"pod":{},"NODENAMES":{}})"}) {
    auto a = parse_extender_args(bad);
    auto b = parse_extender_args(bad, PodFields::kRead);
    ASSERT_FALSE(a.ok()) << bad;
    EXPECT_EQ(a.message(), b.message()) << bad;
  }
}

TEST(WireTest, SyntaxErrorsWinOverTypeErrorsAndRepeatedKeysKeepTheLast) {
  // A type error early and a syntax error later: the body is malformed JSON, as a DOM parse says.
  auto broken = parse_extender_args(R"({"Pod":{},"NodeNames":[1],"x":})");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(0u, broken.message().rfind("malformed JSON", 0)) << broken.message();

  auto repeated = parse_extender_args(
      R"({"Pod":{"metadata":{"name":"a"}},"NodeNames":[7],"NodeNames":["n1","n2"],)"
      R"("Pod":{"metadata":{"name":"b"}},"nodenames":["folded"]})");
  ASSERT_TRUE(repeated.ok()) << repeated.message();
  EXPECT_EQ("b", repeated->pod["metadata"]["name"]);
  EXPECT_EQ((std::vector<std::string>{"n1", "n2"}), repeated->candidates().strings())
      << "the exact-case key wins over a folded one, wherever it comes";

  auto nested = parse_extender_args(R"({"Pod":{},"NodeNames":["a",["b"],"c"]})");
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ("NodeNames[1]: expected a string, got array", nested.message());
}

TEST(WireTest, NodeReasonsRenderAsGoMapsWithOneReasonSharedByManyNodes) {
  FilterResult result;
  result.node_names.emplace();
  auto queued = result.failed_nodes.reason("queued: position 2 of 9");
  for (std::string_view node : {"n3", "n1", "n2"}) result.failed_nodes.add(node, queued);
  result.failed_nodes.add("n0", "node n0 is not in allox's inventory");
  EXPECT_EQ(4u, result.failed_nodes.size());
  EXPECT_EQ("queued: position 2 of 9", result.failed_nodes.at("n2"));
  EXPECT_FALSE(result.failed_nodes.contains("n9"));
  EXPECT_THROW((void)result.failed_nodes.at("n9"), std::out_of_range);
  const std::string text = render(result);
  EXPECT_NE(std::string::npos,
            text.find(R"("FailedNodes":{"n0":"node n0 is not in allox's inventory",)"
                      R"("n1":"queued: position 2 of 9","n2":"queued: position 2 of 9",)"
                      R"("n3":"queued: position 2 of 9"})"))
      << text;
  auto back = parse_filter_result(text);
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(text, render(*back));
}

}  // namespace
}  // namespace allox::extender

namespace allox::extender {
namespace {

// parse_filter_result reads an ExtenderFilterResult in one pass (the emulated kube-scheduler
// reads 5,000-node answers with it): every filter answer recorded on the wire, from the real
// stand-in extender and from alloxd, reads back field by field. The stand-in (not Go) sends an
// empty map as {}; a reader cannot tell it from Go's nil map (`null`, what render() writes) and
// kube-scheduler does not either, so the two compare equal.
TEST(WireTest, RecordedFilterAnswersRoundTripFieldByField) {
  const std::string real = ALLOX_SOURCE_DIR "/data/kube-extender/real-v1.28";
  int answers = 0;
  for (const char* folder :
       {"nodecache-true", "nodecache-false", "alloxd-nodecache-true", "alloxd-nodecache-false"}) {
    for (const auto& entry : std::filesystem::directory_iterator(real + "/" + folder)) {
      const std::string name = entry.path().filename().string();
      if (!name.ends_with("-filter.reply.json")) continue;
      SCOPED_TRACE(std::string(folder) + "/" + name);
      const std::string body = testing::read_text_file(entry.path().string());
      auto read = parse_filter_result(body);
      ASSERT_TRUE(read.ok()) << read.message();
      json want = json::parse(body);
      for (const char* map : {"FailedNodes", "FailedAndUnresolvableNodes"}) {
        if (want[map].is_object() && want[map].empty()) want[map] = nullptr;
      }
      EXPECT_EQ("", field_difference(want, json::parse(render(*read))));
      ++answers;
    }
  }
  EXPECT_GE(answers, 20) << "the recorded filter answers were not found";
}

TEST(WireTest, FilterAnswersReadNamesReasonsAndErrorWithFoldedKeys) {
  auto read = parse_filter_result(
      R"({"nodenames":["a","b"],"failednodes":{"c":"full","d":"full","e":"queued"},)"
      R"("FAILEDANDUNRESOLVABLENODES":{"f":"no gpu"},"error":"","Extra":{"x":[1]}})");
  ASSERT_TRUE(read.ok()) << read.message();
  EXPECT_EQ((std::vector<std::string>{"a", "b"}), read->node_names->strings());
  EXPECT_EQ(3u, read->failed_nodes.size());
  EXPECT_EQ(2u, read->failed_nodes.reason_count()) << "a run of one reason is stored once";
  EXPECT_EQ("queued", read->failed_nodes.at("e"));
  EXPECT_EQ("no gpu", read->failed_and_unresolvable_nodes.at("f"));
  EXPECT_FALSE(read->node_objects.has_value());

  auto nulls = parse_filter_result(
      R"({"Nodes":null,"NodeNames":null,"FailedNodes":null,"FailedAndUnresolvableNodes":null,"Error":null})");
  ASSERT_TRUE(nulls.ok()) << nulls.message();
  EXPECT_FALSE(nulls->node_names.has_value());
  EXPECT_TRUE(nulls->failed_nodes.empty());
  EXPECT_EQ("", nulls->error);

  auto repeated = parse_filter_result(
      R"({"NodeNames":["x"],"nodenames":["folded"],"Error":"first","Error":"last",)"
      R"("FailedNodes":{"old":"r"},"FailedNodes":{"new":"r"}})");
  ASSERT_TRUE(repeated.ok()) << repeated.message();
  EXPECT_EQ(std::vector<std::string>{"x"}, repeated->node_names->strings())
      << "the exact-case key wins over a folded one";
  EXPECT_EQ("last", repeated->error);
  EXPECT_FALSE(repeated->failed_nodes.contains("old")) << "a repeated key replaces the value";
  EXPECT_TRUE(repeated->failed_nodes.contains("new"));

  auto full = parse_filter_result(
      R"({"Nodes":{"metadata":{},"items":[{"metadata":{"name":"a","labels":{"k":"v"}}}]}})");
  ASSERT_TRUE(full.ok()) << full.message();
  ASSERT_EQ(1u, full->node_objects->size());
  EXPECT_EQ("v", (*full->node_objects)[0]["metadata"]["labels"]["k"]);
}

TEST(WireTest, MalformedFilterAnswersNameTheField) {
  struct Case {
    const char* body;
    const char* error;
  };
  const Case cases[] = {
      {"", "malformed JSON"},
      {R"({"NodeNames":["a"])", "malformed JSON"},
      {R"({"NodeNames":[1],"x":})", "malformed JSON"},  // a syntax error wins
      {"[]", "ExtenderFilterResult: expected an object, got array"},
      {"7", "ExtenderFilterResult: expected an object, got number"},
      {R"({"NodeNames":"a"})", "NodeNames: expected a list, got string"},
      {R"({"NodeNames":{"a":1}})", "NodeNames: expected a list, got object"},
      {R"({"NodeNames":["a",3]})", "NodeNames[1]: expected a string, got number"},
      {R"({"NodeNames":["a",["b"],7]})", "NodeNames[1]: expected a string, got array"},
      {R"({"FailedNodes":["a"]})", "FailedNodes: expected an object, got array"},
      {R"({"FailedNodes":{"n1":"ok","n2":false}})",
       "FailedNodes.n2: expected a string, got boolean"},
      {R"({"FailedAndUnresolvableNodes":{"n1":{"why":"x"}}})",
       "FailedAndUnresolvableNodes.n1: expected a string, got object"},
      {R"({"Error":5})", "Error: expected a string, got number"},
      {R"({"Error":["x"]})", "Error: expected a string, got array"},
      {R"({"Nodes":[]})", "Nodes: expected a NodeList object, got array"},
      {R"({"Nodes":{"items":{}}})", "Nodes.items: expected a list, got object"},
      {R"({"Nodes":{"items":[{}]}})", "Nodes.items[0].metadata: missing"},
      {R"({"Nodes":{"items":[{"metadata":{"name":1}}]}})",
       "Nodes.items[0].metadata.name: expected a string, got number"},
      // Errors come in the fields' order, whatever the keys' order in the body.
      {R"({"Error":1,"NodeNames":"a"})", "NodeNames: expected a list, got string"},
  };
  for (const Case& c : cases) {
    auto read = parse_filter_result(c.body);
    ASSERT_FALSE(read.ok()) << c.body;
    EXPECT_EQ(0u, read.message().rfind(c.error, 0)) << c.body << " -> " << read.message();
  }
  auto deep = parse_filter_result(R"({"FailedNodes":)" + std::string(100000, '['));
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(std::string::npos, deep.message().find("nested deeper than")) << deep.message();
}

// The one-pass readers (RapidJSON underneath, core/json_sax.h) accept exactly the JSON that
// nlohmann's strict DOM parse accepts, and read every value as it does: numbers at their edges,
// escapes, UTF-8 (no overlong forms, surrogates or code points past U+10FFFF), NUL bytes,
// trailing text. Each value sits in a whole-kept Pod and is compared with the DOM's reading.
TEST(WireTest, TheOnePassReadersAcceptWhatTheDomParserAcceptsAndReadTheSameValues) {
  const std::string values[] = {"0",
                                "-0",
                                "7",
                                "-7",
                                "0.1",
                                "-0.0",
                                "1.5e300",
                                "1E+2",
                                "4.9e-324",
                                "1e-999",
                                "1e999",
                                "-1e999",
                                "2147483648",
                                "-2147483649",
                                "9223372036854775807",
                                "-9223372036854775808",
                                "18446744073709551615",
                                "18446744073709551616",
                                "-9223372036854775809",
                                // A zero significand with a large exponent, which RapidJSON's
                                // own conversion misreads; doubles at and past their edges.
                                "0e55",
                                "-0e55",
                                "0.0e55",
                                "0e-55",
                                "0.000e-999",
                                "123456789012345678901234567890",
                                "1.7976931348623157e308",
                                "1.8e308",
                                "2.2250738585072014e-308",
                                "1e-400",
                                "100e-402",
                                "0.00001e313",
                                "01",
                                "1.",
                                ".5",
                                "-",
                                "+1",
                                "NaN",
                                "Infinity",
                                "true",
                                "tru",
                                "null",
                                "nul",
                                "[]",
                                "[1,]",
                                "[1 2]",
                                "{}",
                                R"({"a":1,})",
                                R"({"a"})",
                                R"({1:2})",
                                R"("plain")",
                                R"("a\u0000b")",
                                R"("\u00e9\n\t\/")",
                                R"("\uD83D\uDE00")",
                                R"("\uDC00")",
                                R"("\uD800")",
                                R"("\uD800x")",
                                R"("\uD800\u0041")",
                                R"("\x")",
                                R"("\u12G4")",
                                "\"\xC3\xA9\"",
                                "\"\xE2\x82\xAC\"",
                                "\"\xF0\x9F\x98\x80\"",
                                "\"\xC0\xAF\"",
                                "\"\xE0\x80\xAF\"",
                                "\"\xED\xA0\x80\"",
                                "\"\xF4\x90\x80\x80\"",
                                "\"\xFF\"",
                                "\"\xC3\"",
                                "\"\x80\"",
                                "\"a\tb\"",
                                "\"a\x01\"",
                                "\"unterminated",
                                std::string("\"a\0b\"", 5),
                                std::string("1\0", 2)};
  for (const std::string& value : values) {
    for (const std::string& body :
         {R"({"Pod":{"x":)" + value + "}}", R"({"Pod":{"x":)" + value + "}}  \n",
          R"({"Pod":{"x":)" + value + "}} x"}) {
      auto dom = parse_json_body(body);
      auto read = parse_extender_args(body);
      auto said = [](const auto& parsed) { return parsed ? "accepted" : parsed.message(); };
      ASSERT_EQ(dom.ok(), read.ok())
          << json(body).dump() << ": DOM " << said(dom) << ", one pass " << said(read);
      if (!dom) {
        EXPECT_EQ(0u, read.message().rfind("malformed JSON", 0)) << read.message();
        continue;
      }
      EXPECT_EQ((*dom)["Pod"]["x"], read->pod["x"]) << json(body).dump();
      // The answer's reader too: the same value as a node's reason.
      auto answer = parse_filter_result(R"({"FailedNodes":{"n":)" + value + "}}");
      EXPECT_EQ((*dom)["Pod"]["x"].is_string(), answer.ok()) << json(body).dump();
      if (answer && (*dom)["Pod"]["x"].is_string()) {
        EXPECT_EQ((*dom)["Pod"]["x"].get<std::string>(), answer->failed_nodes.at("n"));
      }
    }
  }
  // A number beyond double's range is named, as the DOM parse names it.
  auto overflow = parse_filter_result(R"({"Nodes":{"items":[],"x":-1e999}})");
  ASSERT_FALSE(overflow.ok());
  EXPECT_NE(std::string::npos, overflow.message().find("number overflow parsing '-1e999'"))
      << overflow.message();
  // The one difference: an exponent past double's range is refused before its significand is
  // seen, so even a zero one (which the DOM reads as 0) is named as an overflow.
  auto zero = parse_filter_result(R"({"Nodes":{"items":[],"x":0e400}})");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(std::string::npos, zero.message().find("number overflow parsing '0e400'"))
      << zero.message();
  // A byte order mark before the body is skipped, as the DOM parse does.
  auto marked = parse_filter_result("\xEF\xBB\xBF{\"NodeNames\":[\"a\"]}");
  ASSERT_TRUE(marked.ok()) << marked.message();
  EXPECT_EQ(std::vector<std::string>{"a"}, marked->node_names->strings());
}

// Node names and reasons outside ASCII, and keys longer than a short string, read back as sent.
TEST(WireTest, FilterAnswersReadLongAndNonAsciiNamesAsSent) {
  FilterResult sent;
  sent.node_names.emplace();
  const std::string long_name = "ip-10-0-12-34.eu-west-1.compute.internal";
  sent.node_names->push_back(long_name);
  const auto reason = sent.failed_nodes.reason("queued: position 1 of 2 \xE2\x80\x94 wait");
  for (int i = 0; i < 50; ++i) {
    sent.failed_nodes.add(long_name + "-" + std::to_string(i) + "-\xC3\xA9", reason);
  }
  auto read = parse_filter_result(render(sent));
  ASSERT_TRUE(read.ok()) << read.message();
  EXPECT_EQ(sent.node_names, read->node_names);
  EXPECT_EQ(sent.failed_nodes, read->failed_nodes);
  EXPECT_EQ(1u, read->failed_nodes.reason_count()) << "one reason, shared by the 50 nodes";
}

}  // namespace
}  // namespace allox::extender
