// kube/pods.h: the patches allox sends, and how answers are judged.
#include "kube/pods.h"

#include <gtest/gtest.h>

#include "tests/kube/scripted_server.h"

namespace allox::kube {
namespace {

using nlohmann::json;
using testing::ScriptedApi;
using testing::ScriptedReply;
using testing::ScriptedRequest;

TEST(PodsTest, RemoveGatePatchTestsTheIndexItRemoves) {
  auto patch = remove_gate_patch({"example.com/other", "allox.io/queue"}, kQueueGate);
  ASSERT_TRUE(patch.ok());
  EXPECT_EQ(
      json::parse(R"([{"op":"test","path":"/spec/schedulingGates/1/name","value":"allox.io/queue"},
                           {"op":"remove","path":"/spec/schedulingGates/1"}])"),
      *patch);
  EXPECT_FALSE(remove_gate_patch({"example.com/other"}, kQueueGate).ok());
}

// The pin rides in the gate's patch, after the `test`: one PATCH, refused whole when the gate
// moved. Each `add` creates only what the pod lacked; a pod with required node affinity of its
// own keeps it and is not pinned.
TEST(PodsTest, RemoveGatePatchPinsToTheNodeWhereTheAffinityHasRoom) {
  const json pin_terms = json::parse(
      R"({"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["node-7"]}]}]})");
  auto patch =
      remove_gate_patch({"allox.io/queue"}, kQueueGate, {"node-7", AffinityRoom::kNoAffinity});
  ASSERT_TRUE(patch.ok());
  ASSERT_EQ(4u, patch->size());
  EXPECT_EQ("test", (*patch)[0]["op"]);
  EXPECT_EQ("/spec/schedulingGates/0", (*patch)[1]["path"]);
  // The add is guarded: refused whole if the owner wrote affinity after alloxd looked.
  EXPECT_EQ(json::parse(R"({"op":"test","path":"/spec/affinity","value":null})"), (*patch)[2]);
  EXPECT_EQ(
      json({{"op", "add"},
            {"path", "/spec/affinity"},
            {"value",
             {{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", pin_terms}}}}}}),
      (*patch)[3]);
  patch =
      remove_gate_patch({"allox.io/queue"}, kQueueGate, {"node-7", AffinityRoom::kNoNodeAffinity});
  ASSERT_TRUE(patch.ok());
  EXPECT_EQ(json({{"op", "add"},
                  {"path", "/spec/affinity/nodeAffinity"},
                  {"value", {{"requiredDuringSchedulingIgnoredDuringExecution", pin_terms}}}}),
            (*patch)[3]);
  EXPECT_EQ(json::parse(R"({"op":"test","path":"/spec/affinity/nodeAffinity","value":null})"),
            (*patch)[2]);
  patch = remove_gate_patch({"allox.io/queue"}, kQueueGate, {"node-7", AffinityRoom::kNoRequired});
  ASSERT_TRUE(patch.ok());
  EXPECT_EQ((*patch)[3]["path"], (*patch)[2]["path"]);
  EXPECT_EQ("test", (*patch)[2]["op"]);
  EXPECT_EQ(
      json({{"op", "add"},
            {"path", "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"},
            {"value", pin_terms}}),
      (*patch)[3]);
  // Its own required terms, or no node: only the gate's removal.
  EXPECT_EQ(2u,
            remove_gate_patch({"allox.io/queue"}, kQueueGate, {"node-7", AffinityRoom::kRequired})
                ->size());
  EXPECT_EQ(
      2u,
      remove_gate_patch({"allox.io/queue"}, kQueueGate, {"", AffinityRoom::kNoAffinity})->size());
  EXPECT_FALSE(remove_gate_patch({}, kQueueGate, {"node-7", AffinityRoom::kNoAffinity}).ok());
}

TEST(PodsTest, AffinityRoomReadsWhatThePodHas) {
  EXPECT_EQ(AffinityRoom::kNoAffinity, affinity_room(json::parse(R"({"spec":{}})")));
  EXPECT_EQ(AffinityRoom::kNoAffinity, affinity_room(json::parse(R"({"spec":{"affinity":null}})")));
  EXPECT_EQ(AffinityRoom::kNoNodeAffinity,
            affinity_room(json::parse(R"({"spec":{"affinity":{"podAffinity":{}}}})")));
  EXPECT_EQ(
      AffinityRoom::kNoRequired,
      affinity_room(json::parse(
          R"({"spec":{"affinity":{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[]}}}})")));
  EXPECT_EQ(
      AffinityRoom::kRequired,
      affinity_room(json::parse(
          R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[]}}}}})")));
}

// The pin remove_gate_patch adds reads back as its node; anything else the owner may have
// written reads as no pin.
TEST(PodsTest, PinnedNodeReadsOnlyThePinsShape) {
  json pinned = {{"spec", json::object()}};
  auto patch =
      remove_gate_patch({"allox.io/queue"}, kQueueGate, {"node-7", AffinityRoom::kNoAffinity});
  ASSERT_TRUE(patch.ok());
  pinned["spec"]["affinity"] = (*patch)[3]["value"];
  EXPECT_EQ("node-7", pinned_node(pinned));
  const char* not_pins[] = {
      R"({"spec":{}})",
      R"({"spec":{"affinity":null}})",
      R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[]}}}}})",
      // Two nodes, another key or operator, another term beside it, an expression beside it.
      R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["a","b"]}]}]}}}}})",
      R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.uid","operator":"In","values":["a"]}]}]}}}}})",
      R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"NotIn","values":["a"]}]}]}}}}})",
      R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["a"]}]},{"matchFields":[]}]}}}}})",
      R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["a"]}],"matchExpressions":[]}]}}}}})",
      R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":[7]}]}]}}}}})",
  };
  for (const char* pod : not_pins) EXPECT_EQ("", pinned_node(json::parse(pod))) << pod;
}

TEST(PodsTest, AddGatePatchCreatesOrAppendsAndIsEmptyWhenPresent) {
  json bare = {{"spec", {{"schedulerName", "allox-scheduler"}}}};
  EXPECT_EQ(
      json::parse(
          R"([{"op":"add","path":"/spec/schedulingGates","value":[{"name":"allox.io/queue"}]}])"),
      add_gate_patch(bare, kQueueGate));
  json other = {{"spec", {{"schedulingGates", {{{"name", "x"}}}}}}};
  EXPECT_EQ(
      json::parse(
          R"([{"op":"add","path":"/spec/schedulingGates/-","value":{"name":"allox.io/queue"}}])"),
      add_gate_patch(other, kQueueGate));
  json gated = {{"spec", {{"schedulingGates", {{{"name", "allox.io/queue"}}}}}}};
  EXPECT_EQ(json::array(), add_gate_patch(gated, kQueueGate));
  EXPECT_EQ((std::vector<std::string>{"allox.io/queue"}), scheduling_gates(gated));
}

TEST(PodsTest, CallsGoToThePodsOwnNamespaceWithTheRightContentTypes) {
  int status = 200;
  ScriptedApi api([&](const ScriptedRequest&) { return ScriptedReply{status, "{}", nullptr}; });
  ObjectRef pod{"team-a", "train-cpu", "u-7"};
  ASSERT_TRUE(remove_gate(api.client, pod, {"allox.io/queue"}, kQueueGate).ok());
  ASSERT_TRUE(nudge(api.client, pod, "42").ok());
  auto deleted = delete_pod(api.client, pod);
  ASSERT_TRUE(deleted.ok()) << deleted.message();
  EXPECT_EQ(DeleteOutcome::kDeleted, *deleted);
  auto r = api.server.requests();
  ASSERT_EQ(3u, r.size());
  for (const auto& request : r)
    EXPECT_EQ("/api/v1/namespaces/team-a/pods/train-cpu", request.target);
  EXPECT_EQ("application/json-patch+json", r[0].content_type);
  EXPECT_EQ("application/merge-patch+json", r[1].content_type);
  EXPECT_EQ("42", json::parse(r[1].body)["metadata"]["annotations"]["allox.io/nudge"]);
  EXPECT_EQ("DELETE", r[2].method);
  EXPECT_EQ("u-7", json::parse(r[2].body)["preconditions"]["uid"]);
  // Already gone, and refused by a precondition, are outcomes; any other answer is an error
  // naming the pod.
  status = 404;
  EXPECT_EQ(DeleteOutcome::kGone, delete_pod(api.client, pod).value());
  status = 409;
  EXPECT_EQ(DeleteOutcome::kRefused, delete_pod(api.client, pod, "41").value());
  EXPECT_EQ("41",
            json::parse(api.server.requests().back().body)["preconditions"]["resourceVersion"]);
  status = 403;
  auto refused = delete_pod(api.client, pod);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(std::string::npos, refused.message().find("team-a/train-cpu"));
  // No gate to remove: nothing is sent.
  EXPECT_TRUE(remove_gate(api.client, pod, {}, kQueueGate).ok());
  EXPECT_EQ(6u, api.server.requests().size());
}

// A 422 (the gates changed since they were seen) is settled by reading the pod once: a gate an
// earlier ungate already removed is done; a gate that moved is removed at its new index.
TEST(PodsTest, RemoveGateAfterA422ReadsThePodOnce) {
  std::string gates_now = "[]";
  ScriptedApi api([&](const ScriptedRequest& request) {
    if (request.method == "GET") {
      return ScriptedReply{200, R"({"spec":{"schedulingGates":)" + gates_now + "}}", nullptr};
    }
    auto patch = json::parse(request.body);
    const bool stale = patch[0]["path"] == "/spec/schedulingGates/0/name" && gates_now != "[]";
    return ScriptedReply{stale || gates_now == "[]" ? 422 : 200, "{}", nullptr};
  });
  ObjectRef pod{"team-a", "train-gpu", "u-1"};
  // Already removed by an earlier call: PATCH 422, GET shows no gate, done.
  ASSERT_TRUE(remove_gate(api.client, pod, {"allox.io/queue"}, kQueueGate).ok());
  auto r = api.server.requests();
  ASSERT_EQ(2u, r.size());
  EXPECT_EQ("PATCH", r[0].method);
  EXPECT_EQ("GET", r[1].method);
  // Another gate was added in front: PATCH 422, GET, PATCH at index 1.
  gates_now = R"([{"name":"example.com/other"},{"name":"allox.io/queue"}])";
  ASSERT_TRUE(remove_gate(api.client, pod, {"allox.io/queue"}, kQueueGate).ok());
  r = api.server.requests();
  ASSERT_EQ(5u, r.size());
  EXPECT_EQ("GET", r[3].method);
  EXPECT_EQ("/spec/schedulingGates/1/name", json::parse(r[4].body)[0]["path"]);
}

// The retry after a 422 keeps the pin, with the room read from the pod as it is now: a pod that
// gained required node affinity of its own meanwhile keeps it and is only ungated.
TEST(PodsTest, RemoveGateRetryKeepsThePinAndRereadsTheRoom) {
  std::string pod_now =
      R"({"spec":{"schedulingGates":[{"name":"example.com/other"},{"name":"allox.io/queue"}],
                  "affinity":{"podAntiAffinity":{}}}})";
  ScriptedApi api([&](const ScriptedRequest& request) {
    if (request.method == "GET") return ScriptedReply{200, pod_now, nullptr};
    auto patch = json::parse(request.body);
    const bool stale = patch[0]["path"] == "/spec/schedulingGates/0/name";
    return ScriptedReply{stale ? 422 : 200, "{}", nullptr};
  });
  ObjectRef pod{"team-a", "train-gpu", "u-1"};
  ASSERT_TRUE(remove_gate(api.client, pod, {"allox.io/queue"}, kQueueGate,
                          {"node-3", AffinityRoom::kNoAffinity})
                  .ok());
  auto r = api.server.requests();
  ASSERT_EQ(3u, r.size());
  EXPECT_EQ("/spec/affinity", json::parse(r[0].body)[2]["path"]);
  auto retry = json::parse(r[2].body);
  ASSERT_EQ(4u, retry.size());
  EXPECT_EQ("/spec/schedulingGates/1/name", retry[0]["path"]);
  EXPECT_EQ("/spec/affinity/nodeAffinity", retry[3]["path"]);
  EXPECT_EQ("node-3", retry[3]["value"]["requiredDuringSchedulingIgnoredDuringExecution"]
                           ["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]);
  pod_now = R"({"spec":{"schedulingGates":[{"name":"example.com/other"},{"name":"allox.io/queue"}],
                 "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
                   {"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}}}})";
  ASSERT_TRUE(remove_gate(api.client, pod, {"allox.io/queue"}, kQueueGate,
                          {"node-3", AffinityRoom::kNoAffinity})
                  .ok());
  r = api.server.requests();
  ASSERT_EQ(6u, r.size());
  EXPECT_EQ(2u, json::parse(r[5].body).size());
}

}  // namespace
}  // namespace allox::kube
