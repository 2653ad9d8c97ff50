// kubesim/api_objects.h in process: what the store's sharing and its writes outside
// the lock must keep. A stored version is never changed by a later write (what a GET or a watch
// event handed out stays as it was), concurrent patches of one object are applied one at a
// time each to the latest version (none lost, resourceVersions in order), a watch event's line
// is the bytes of the whole event dumped as one JSON value, and a burst of events sent in one
// write over HTTP still reads as one event per line.
#include "kubesim/api_objects.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "kubesim/fake_api_server.h"
#include "tests/kubesim/http_client.h"

namespace allox::emulator {
namespace {

using nlohmann::json;

json gated_pod(const std::string& name) {
  return {{"metadata", {{"name", name}, {"labels", {{"app", "x"}}}}},
          {"spec",
           {{"schedulerName", "allox-scheduler"},
            {"schedulingGates", json::array({{{"name", "allox.io/queue"}}})},
            {"containers", json::array({{{"name", "main"}, {"image", "train:1"}}})}}}};
}

ObjectPtr stored(const ApiResult<ObjectPtr>& result) {
  EXPECT_TRUE(std::holds_alternative<ObjectPtr>(result)) << std::get<ApiError>(result).message;
  return std::holds_alternative<ObjectPtr>(result) ? std::get<ObjectPtr>(result) : nullptr;
}

TEST(ApiObjectsTest, AWriteNeverChangesAVersionAlreadyHandedOut) {
  ApiObjects objects;
  stored(objects.create(pods_resource(), "lab", gated_pod("p")));
  ObjectPtr before = stored(objects.get(pods_resource(), "lab", "p"));
  const std::string before_text = before->dump();
  auto watch = std::get<std::shared_ptr<WatchStream>>(
      objects.watch({&pods_resource(), "", {}, std::to_string(objects.resource_version()), false}));

  // Every kind of write a pod meets in a run: a status patch, the gate removal, the binding.
  stored(objects.patch(pods_resource(), "lab", "p", PatchType::kMerge,
                       R"({"status":{"phase":"Pending","message":"one"}})", true));
  WatchEvent first;
  ASSERT_EQ(WatchStream::Next::kEvent, watch->next(first, std::chrono::seconds(1)));
  const std::string first_text = first.object->dump();
  const std::string first_line = first.line();
  stored(objects.patch(pods_resource(), "lab", "p", PatchType::kStrategicMerge,
                       R"({"spec":{"schedulingGates":[{"name":"allox.io/queue","$patch":"delete"}]},
                           "metadata":{"labels":{"app":"y"}}})",
                       false));
  auto bound = objects.bind("lab", "p", {{"target", {{"name", "node-a"}}}});
  ASSERT_TRUE(std::holds_alternative<json>(bound));

  EXPECT_EQ(before_text, before->dump());
  EXPECT_EQ(first_text, first.object->dump());
  EXPECT_EQ(first_line, first.line());
  EXPECT_EQ("one", (*first.object)["status"]["message"]);
  EXPECT_TRUE((*first.object)["spec"].contains("schedulingGates"));
  ObjectPtr now = stored(objects.get(pods_resource(), "lab", "p"));
  EXPECT_EQ("node-a", (*now)["spec"]["nodeName"]);
  EXPECT_EQ("y", (*now)["metadata"]["labels"]["app"]);
  EXPECT_EQ("one", (*now)["status"]["message"]);  // the main resource's patch kept the status
}

// kube-apiserver's PrepareForCreate (applySchedulingGatedCondition): the store, not the scheduler,
// marks a gated pod; an ungated pod and a pod that brings its own PodScheduled condition are left.
TEST(ApiObjectsTest, AGatedPodIsStoredWithTheSchedulingGatedCondition) {
  ApiObjects objects;
  ObjectPtr gated = stored(objects.create(pods_resource(), "lab", gated_pod("g")));
  ASSERT_TRUE(gated);
  const json& conditions = (*gated)["status"]["conditions"];
  ASSERT_EQ(1u, conditions.size());
  EXPECT_EQ("PodScheduled", conditions[0]["type"]);
  EXPECT_EQ("False", conditions[0]["status"]);
  EXPECT_EQ("SchedulingGated", conditions[0]["reason"]);
  EXPECT_EQ("Scheduling is blocked due to non-empty scheduling gates", conditions[0]["message"]);
  EXPECT_EQ("Pending", (*gated)["status"]["phase"]);

  json open = gated_pod("o");
  open["spec"].erase("schedulingGates");
  ObjectPtr ungated = stored(objects.create(pods_resource(), "lab", open));
  ASSERT_TRUE(ungated);
  EXPECT_FALSE((*ungated)["status"].contains("conditions"));

  json own = gated_pod("c");
  own["status"]["conditions"] = json::array({{{"type", "PodScheduled"}, {"status", "True"}}});
  ObjectPtr kept = stored(objects.create(pods_resource(), "lab", own));
  ASSERT_TRUE(kept);
  ASSERT_EQ(1u, (*kept)["status"]["conditions"].size());
  EXPECT_EQ("True", (*kept)["status"]["conditions"][0]["status"]);
}

// v1.28 with its default gates: SidecarContainers is off, so the API server drops an init
// container's restartPolicy and keeps the rest of it.
TEST(ApiObjectsTest, AnInitContainersRestartPolicyIsDroppedAsV128Does) {
  ApiObjects objects;
  json pod = gated_pod("s");
  pod["spec"]["initContainers"] = json::array(
      {{{"name", "proxy"}, {"image", "p:1"}, {"restartPolicy", "Always"}}, "not an object"});
  ObjectPtr created = stored(objects.create(pods_resource(), "lab", pod));
  ASSERT_TRUE(created);
  const json& inits = (*created)["spec"]["initContainers"];
  ASSERT_EQ(2u, inits.size());
  EXPECT_FALSE(inits[0].contains("restartPolicy"));
  EXPECT_EQ("p:1", inits[0]["image"]);
  EXPECT_EQ("not an object", inits[1]);
}

std::string patch_error(ApiObjects& objects, const std::string& name, const std::string& patch) {
  auto result = objects.patch(pods_resource(), "lab", name, PatchType::kJson, patch, false);
  auto* error = std::get_if<ApiError>(&result);
  if (error == nullptr) return "";
  EXPECT_EQ(422, error->code);
  return error->message;
}

// kube-apiserver 1.28's mutable scheduling directives: a pod gated before the update may gain
// nodeSelector keys and required node affinity (set when it had none, narrowed when it had
// some), in the same write that removes its last gate; anything else in the spec stays frozen.
TEST(ApiObjectsTest, AGatedPodMayNarrowItsNodeSelectorAndNodeAffinityOnly) {
  ApiObjects objects;
  stored(objects.create(pods_resource(), "lab", gated_pod("pin")));
  const std::string pin =
      R"({"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":
          [{"matchFields":[{"key":"metadata.name","operator":"In","values":["node-a"]}]}]}}})";
  ObjectPtr released = stored(objects.patch(
      pods_resource(), "lab", "pin", PatchType::kJson,
      R"([{"op":"test","path":"/spec/schedulingGates/0/name","value":"allox.io/queue"},
          {"op":"remove","path":"/spec/schedulingGates/0"},
          {"op":"add","path":"/spec/affinity","value":)" +
          pin + "}]",
      false));
  ASSERT_TRUE(released);
  EXPECT_FALSE((*released)["spec"].contains("schedulingGates"));
  EXPECT_EQ(json::parse(pin), (*released)["spec"]["affinity"]);
  // Ungated now: nothing more may be added.
  EXPECT_NE(std::string::npos,
            patch_error(objects, "pin",
                        R"([{"op":"add","path":"/spec/nodeSelector","value":{"zone":"a"}}])")
                .find("spec: Forbidden: pod updates may not change fields other than"));

  json labelled = gated_pod("sel");
  labelled["spec"]["nodeSelector"] = {{"zone", "a"}};
  stored(objects.create(pods_resource(), "lab", labelled));
  stored(objects.patch(pods_resource(), "lab", "sel", PatchType::kJson,
                       R"([{"op":"add","path":"/spec/nodeSelector/rack","value":"r1"}])", false));
  EXPECT_EQ(
      "Pod \"sel\" is invalid: spec.nodeSelector: Invalid value: {\"rack\":\"r1\",\"zone\":\"b\"}: "
      "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
      patch_error(objects, "sel",
                  R"([{"op":"replace","path":"/spec/nodeSelector/zone","value":"b"}])"));
  // Pod affinity is not a scheduling directive a gated pod may change.
  EXPECT_NE(std::string::npos,
            patch_error(objects, "sel",
                        R"([{"op":"add","path":"/spec/affinity","value":{"podAffinity":{}}}])")
                .find("spec: Forbidden"));

  json own = gated_pod("own");
  own["spec"]["affinity"] = json::parse(
      R"({"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":
          [{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}})");
  stored(objects.create(pods_resource(), "lab", own));
  const std::string terms =
      "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/"
      "nodeSelectorTerms";
  EXPECT_NE(std::string::npos,
            patch_error(objects, "own",
                        R"([{"op":"replace","path":")" + terms + R"(","value":[{"matchFields":
                            [{"key":"metadata.name","operator":"In","values":["node-a"]}]}]}])")
                .find("nodeSelectorTerms[0]: Invalid value: {\"matchFields\""));
  EXPECT_NE(std::string::npos,
            patch_error(objects, "own",
                        R"([{"op":"add","path":")" + terms + R"(/-","value":{"matchFields":
                            [{"key":"metadata.name","operator":"In","values":["node-a"]}]}}])")
                .find("nodeSelectorTerms: Invalid value: ["));
  EXPECT_NE(std::string::npos,
            patch_error(objects, "own",
                        R"([{"op":"add","path":")" + terms + R"(/-","value":{"matchFields":
                            [{"key":"metadata.name","operator":"In","values":["node-a"]}]}}])")
                .find("no additions/deletions to non-empty NodeSelectorTerms list are allowed"));
  // Narrowing a term (a requirement added to it) is allowed, as are preferred terms.
  stored(objects.patch(pods_resource(), "lab", "own", PatchType::kJson,
                       R"([{"op":"add","path":")" + terms + R"(/0/matchFields","value":
                           [{"key":"metadata.name","operator":"In","values":["node-a"]}]},
                           {"op":"add","path":"/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution",
                            "value":[]}])",
                       false));
}

TEST(ApiObjectsTest, AStatusWriteKeepsEverythingButTheStatus) {
  ApiObjects objects;
  ObjectPtr created = stored(objects.create(pods_resource(), "lab", gated_pod("p")));
  // Through /status, a change of anything but .status is dropped, as kube-apiserver does.
  ObjectPtr after = stored(objects.patch(
      pods_resource(), "lab", "p", PatchType::kMerge,
      R"({"metadata":{"labels":{"app":"y"},"annotations":{"a":"b"}},"spec":{"priority":5},
          "extra":1,"status":{"phase":"Running"}})",
      true));
  json want = *created;
  want["status"]["phase"] = "Running";  // a merge patch: the gated condition stays
  want["metadata"]["resourceVersion"] = (*after)["metadata"]["resourceVersion"];
  EXPECT_EQ(want, *after);
  // A status update without a status leaves an empty one.
  json bare = *after;
  bare.erase("status");
  ObjectPtr emptied = stored(objects.update(pods_resource(), "lab", "p", bare, true));
  EXPECT_EQ(json::object(), (*emptied)["status"]);
}

TEST(ApiObjectsTest, ConcurrentPatchesOfOneObjectAreAppliedOneAtATime) {
  ApiObjects objects;
  stored(objects.create(pods_resource(), "lab", gated_pod("p")));
  const std::uint64_t start = objects.resource_version();
  auto watch = std::get<std::shared_ptr<WatchStream>>(
      objects.watch({&pods_resource(), "", {}, std::to_string(start), false}));
  constexpr int kThreads = 4, kEach = 50;
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&objects, t] {
      for (int i = 0; i < kEach; ++i) {
        const std::string key = "w" + std::to_string(t) + "-" + std::to_string(i);
        stored(objects.patch(pods_resource(), "lab", "p", PatchType::kMerge,
                             json{{"metadata", {{"annotations", {{key, "1"}}}}}}.dump(), false));
      }
    });
  }
  for (std::thread& writer : writers) writer.join();
  EXPECT_EQ(start + kThreads * kEach, objects.resource_version());
  ObjectPtr last = stored(objects.get(pods_resource(), "lab", "p"));
  EXPECT_EQ(static_cast<std::size_t>(kThreads * kEach), (*last)["metadata"]["annotations"].size());
  // Each version is the one before plus one annotation, at the next resourceVersion.
  for (int n = 1; n <= kThreads * kEach; ++n) {
    WatchEvent event;
    ASSERT_EQ(WatchStream::Next::kEvent, watch->next(event, std::chrono::seconds(1))) << n;
    EXPECT_EQ("MODIFIED", event.type);
    EXPECT_EQ(std::to_string(start + n), (*event.object)["metadata"]["resourceVersion"]);
    EXPECT_EQ(static_cast<std::size_t>(n), (*event.object)["metadata"]["annotations"].size());
  }
  WatchEvent none;
  EXPECT_EQ(WatchStream::Next::kTimeout, watch->next(none, std::chrono::milliseconds(0)));
}

TEST(ApiObjectsTest, AnEventLineIsTheWholeEventDumped) {
  const json objects[] = {
      {{"metadata", {{"name", "p\"q\\\n\u00e9"}}}, {"spec", {{"priority", -3}}}, {"z", 1.5}},
      json::object(),
  };
  for (const json& object : objects) {
    for (const std::string type : {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"}) {
      WatchEvent event{type, std::make_shared<const json>(object), ""};
      EXPECT_EQ(json({{"type", type}, {"object", object}}).dump() + "\n", event.line());
    }
  }
  EXPECT_EQ(R"({"object":null,"type":"ADDED"})"
            "\n",
            (WatchEvent{"ADDED", nullptr, ""}.line()));
  EXPECT_EQ("{not json\n", (WatchEvent{"", nullptr, "{not json"}.line()));
}

TEST(ApiObjectsTest, ABurstOfEventsOverHttpReadsAsOneEventPerLine) {
  FakeApiServer api;
  stored(api.objects().create(pods_resource(), "lab", gated_pod("p")));
  const std::uint64_t start = api.objects().resource_version();
  testing::WatchReader watch(api.url(),
                             "/api/v1/pods?watch=1&resourceVersion=" + std::to_string(start), "");
  ASSERT_EQ(200, watch.status());
  constexpr int kEvents = 300;  // written faster than one write each: sent together
  for (int i = 0; i < kEvents; ++i) {
    stored(api.objects().patch(pods_resource(), "lab", "p", PatchType::kMerge,
                               json{{"metadata", {{"labels", {{"n", std::to_string(i)}}}}}}.dump(),
                               false));
  }
  for (int i = 0; i < kEvents; ++i) {
    auto line = watch.next_line();
    ASSERT_TRUE(line.has_value()) << i;
    json event = json::parse(*line);
    EXPECT_EQ("MODIFIED", event["type"]);
    EXPECT_EQ(std::to_string(i), event["object"]["metadata"]["labels"]["n"]);
    EXPECT_EQ(std::to_string(start + i + 1), event["object"]["metadata"]["resourceVersion"]);
  }
}

}  // namespace
}  // namespace allox::emulator
