// kubesim/fake_api_server.h over real HTTP: the Kubernetes REST shapes alloxd's
// informer and controller meet in a real cluster (lists with resourceVersion, newline-delimited
// watch events, 410 for a compacted resourceVersion, field selectors, patches, the binding
// subresource, events, leases), the bearer token, fault injection and the admission webhook.
#include "kubesim/fake_api_server.h"

#include <gtest/gtest.h>

#include <boost/beast/core/detail/base64.hpp>
// cpprestsdk defines a U() macro that breaks Boost headers included after it.
#define _TURN_OFF_PLATFORM_STRING
#include <cpprest/http_listener.h>

#include "alloxd/http/http_server.h"
#include "tests/kubesim/http_client.h"

namespace allox::emulator {
namespace {

using nlohmann::json;
using testing::request;
using testing::WatchReader;

const char* kToken = "sa-token";

FakeApiServerOptions with_token(std::optional<AdmissionWebhook> webhook = std::nullopt) {
  FakeApiServerOptions options;
  options.token = kToken;
  options.webhook = std::move(webhook);
  return options;
}

json pod(const std::string& name, const std::string& scheduler = "allox-scheduler",
         bool gated = false) {
  json spec = {
      {"schedulerName", scheduler},
      {"containers", json::array({{{"name", "main"},
                                   {"image", "train:1"},
                                   {"resources", {{"requests", {{"nvidia.com/gpu", "1"}}}}}}})}};
  if (gated) spec["schedulingGates"] = json::array({{{"name", "allox.io/queue"}}});
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"annotations", {{"allox.io/user", "alice"}}}}},
          {"spec", spec}};
}

class FakeApiServerTest : public ::testing::Test {
 protected:
  FakeApiServer api{with_token()};

  testing::Reply call(const std::string& method, const std::string& target,
                      const json& body = nullptr, const std::string& type = "application/json") {
    return request(api.url(), method, target, body.is_null() ? "" : body.dump(), kToken, type);
  }
  json create(const json& object, const std::string& ns = "lab") {
    auto reply = call("POST", "/api/v1/namespaces/" + ns + "/pods", object);
    EXPECT_EQ(201, reply.status) << reply.body;
    return json::parse(reply.body);
  }
};

TEST_F(FakeApiServerTest, ListCarriesResourceVersionAndWatchStreamsEveryLaterChange) {
  create(pod("a"));
  auto list = call("GET", "/api/v1/namespaces/lab/pods");
  ASSERT_EQ(200, list.status);
  json body = json::parse(list.body);
  EXPECT_EQ("PodList", body["kind"]);
  ASSERT_EQ(1u, body["items"].size());
  EXPECT_FALSE(body["items"][0].contains("kind"));  // items of a typed list carry no kind
  EXPECT_EQ("Pending", body["items"][0]["status"]["phase"]);
  const std::string rv = body["metadata"]["resourceVersion"];

  WatchReader watch(api.url(), "/api/v1/pods?watch=1&resourceVersion=" + rv, kToken);
  ASSERT_EQ(200, watch.status());
  create(pod("b"));
  auto patched = call("PATCH", "/api/v1/namespaces/lab/pods/a",
                      json{{"metadata", {{"annotations", {{"allox.io/nudge", "1"}}}}}},
                      "application/merge-patch+json");
  ASSERT_EQ(200, patched.status) << patched.body;
  ASSERT_EQ(200, call("DELETE", "/api/v1/namespaces/lab/pods/b").status);

  std::vector<std::pair<std::string, std::string>> seen;
  std::uint64_t last_rv = std::stoull(rv);
  for (int i = 0; i < 3; ++i) {
    auto line = watch.next_line();
    ASSERT_TRUE(line.has_value()) << "event " << i;
    json event = json::parse(*line);
    seen.emplace_back(event["type"], event["object"]["metadata"]["name"]);
    EXPECT_EQ("Pod", event["object"]["kind"]);
    std::uint64_t event_rv =
        std::stoull(event["object"]["metadata"]["resourceVersion"].get<std::string>());
    EXPECT_GT(event_rv, last_rv) << *line;
    last_rv = event_rv;
  }
  std::vector<std::pair<std::string, std::string>> want = {
      {"ADDED", "b"}, {"MODIFIED", "a"}, {"DELETED", "b"}};
  EXPECT_EQ(want, seen);
}

TEST_F(FakeApiServerTest, WatchWithoutResourceVersionStartsWithTheCurrentObjects) {
  create(pod("a"));
  create(pod("d", "default-scheduler"));
  WatchReader watch(api.url(),
                    "/api/v1/pods?watch=true&fieldSelector=spec.schedulerName%3Dallox-scheduler",
                    kToken);
  auto line = watch.next_line();
  ASSERT_TRUE(line);
  json event = json::parse(*line);
  EXPECT_EQ("ADDED", event["type"]);
  EXPECT_EQ("a", event["object"]["metadata"]["name"]);
  // The default-scheduler pod is not selected.
  EXPECT_FALSE(watch.next_line(std::chrono::milliseconds(300)));
}

TEST_F(FakeApiServerTest, WatchFromACompactedResourceVersionIsExpired410) {
  create(pod("a"));
  const std::string old_rv =
      json::parse(call("GET", "/api/v1/pods").body)["metadata"]["resourceVersion"];
  create(pod("b"));
  api.objects().compact();
  WatchReader watch(api.url(), "/api/v1/pods?watch=1&resourceVersion=" + old_rv, kToken);
  ASSERT_EQ(200, watch.status());
  auto line = watch.next_line();
  ASSERT_TRUE(line);
  json event = json::parse(*line);
  EXPECT_EQ("ERROR", event["type"]);
  EXPECT_EQ(410, event["object"]["code"]);
  EXPECT_EQ("Expired", event["object"]["reason"]);
  EXPECT_FALSE(watch.next_line());
  EXPECT_TRUE(watch.ended_cleanly());
  // A fresh list gives a resourceVersion that can be watched again.
  const std::string rv =
      json::parse(call("GET", "/api/v1/pods").body)["metadata"]["resourceVersion"];
  WatchReader again(api.url(), "/api/v1/pods?watch=1&resourceVersion=" + rv, kToken);
  create(pod("c"));
  auto added = again.next_line();
  ASSERT_TRUE(added);
  EXPECT_EQ("ADDED", json::parse(*added)["type"]);
}

TEST_F(FakeApiServerTest, FieldSelectorsFilterAndUnsupportedFieldsAre400) {
  create(pod("a"));
  create(pod("d", "default-scheduler"));
  auto ours = call("GET", "/api/v1/pods?fieldSelector=spec.schedulerName%3Dallox-scheduler");
  ASSERT_EQ(200, ours.status);
  ASSERT_EQ(1u, json::parse(ours.body)["items"].size());
  auto unbound = call(
      "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3D%2Cspec.schedulerName!%3Dallox-scheduler");
  ASSERT_EQ(200, unbound.status);
  EXPECT_EQ("d", json::parse(unbound.body)["items"][0]["metadata"]["name"]);
  auto bad = call("GET", "/api/v1/pods?fieldSelector=spec.containers%3Dx");
  EXPECT_EQ(400, bad.status);
  EXPECT_NE(std::string::npos, bad.body.find("field label not supported: spec.containers"));
}

TEST_F(FakeApiServerTest, BindingIs201OnceAndConflictWhenGatedOrAlreadyBound) {
  json created = create(pod("g", "allox-scheduler", /*gated=*/true));
  json binding = {{"apiVersion", "v1"},
                  {"kind", "Binding"},
                  {"metadata", {{"name", "g"}, {"uid", created["metadata"]["uid"]}}},
                  {"target", {{"kind", "Node"}, {"name", "node-a"}}}};
  auto gated = call("POST", "/api/v1/namespaces/lab/pods/g/binding", binding);
  EXPECT_EQ(409, gated.status);
  EXPECT_NE(std::string::npos, gated.body.find("non-empty .spec.schedulingGates")) << gated.body;

  // Removing the gate with a strategic merge patch ($patch: delete by merge key name).
  auto ungated = call("PATCH", "/api/v1/namespaces/lab/pods/g",
                      json{{"spec",
                            {{"schedulingGates",
                              json::array({{{"name", "allox.io/queue"}, {"$patch", "delete"}}})}}}},
                      "application/strategic-merge-patch+json");
  ASSERT_EQ(200, ungated.status) << ungated.body;
  EXPECT_FALSE(json::parse(ungated.body)["spec"].contains("schedulingGates"));

  json wrong_uid = binding;
  wrong_uid["metadata"]["uid"] = "someone-else";
  EXPECT_EQ(409, call("POST", "/api/v1/namespaces/lab/pods/g/binding", wrong_uid).status);

  auto bound = call("POST", "/api/v1/namespaces/lab/pods/g/binding", binding);
  ASSERT_EQ(201, bound.status) << bound.body;
  EXPECT_EQ("Success", json::parse(bound.body)["status"]);
  json stored = json::parse(call("GET", "/api/v1/namespaces/lab/pods/g").body);
  EXPECT_EQ("node-a", stored["spec"]["nodeName"]);

  auto again = call("POST", "/api/v1/namespaces/lab/pods/g/binding", binding);
  EXPECT_EQ(409, again.status);
  EXPECT_NE(std::string::npos, again.body.find("already assigned to node \\\"node-a\\\""))
      << again.body;
  json other = binding;
  other["metadata"] = {{"name", "nope"}};
  EXPECT_EQ(404, call("POST", "/api/v1/namespaces/lab/pods/nope/binding", other).status);
  // A Binding naming another pod than the URL is a bad request, as kube-apiserver answers.
  EXPECT_EQ(400, call("POST", "/api/v1/namespaces/lab/pods/nope/binding", binding).status);
}

TEST_F(FakeApiServerTest, PodSpecIsImmutableExceptRemovingGates) {
  create(pod("g", "allox-scheduler", /*gated=*/true));
  auto add_gate = call("PATCH", "/api/v1/namespaces/lab/pods/g",
                       json::array({{{"op", "add"},
                                     {"path", "/spec/schedulingGates/-"},
                                     {"value", {{"name", "other.io/gate"}}}}}),
                       "application/json-patch+json");
  EXPECT_EQ(422, add_gate.status);
  EXPECT_NE(std::string::npos, add_gate.body.find("only deletion is allowed")) << add_gate.body;
  auto scheduler = call("PATCH", "/api/v1/namespaces/lab/pods/g",
                        json{{"spec", {{"schedulerName", "x"}}}}, "application/merge-patch+json");
  EXPECT_EQ(422, scheduler.status);
  auto remove = call("PATCH", "/api/v1/namespaces/lab/pods/g",
                     json::array({{{"op", "remove"}, {"path", "/spec/schedulingGates"}}}),
                     "application/json-patch+json");
  EXPECT_EQ(200, remove.status) << remove.body;
  // Status changes through the main resource are dropped; through /status they stick.
  call("PATCH", "/api/v1/namespaces/lab/pods/g", json{{"status", {{"phase", "Running"}}}},
       "application/merge-patch+json");
  EXPECT_EQ("Pending",
            json::parse(call("GET", "/api/v1/namespaces/lab/pods/g").body)["status"]["phase"]);
  call("PATCH", "/api/v1/namespaces/lab/pods/g/status", json{{"status", {{"phase", "Running"}}}},
       "application/merge-patch+json");
  EXPECT_EQ("Running",
            json::parse(call("GET", "/api/v1/namespaces/lab/pods/g").body)["status"]["phase"]);
  EXPECT_EQ(415, call("PATCH", "/api/v1/namespaces/lab/pods/g", json::object(),
                      "application/apply-patch+yaml")
                     .status);
  // A stale resourceVersion in a patch is a conflict.
  auto stale = call("PATCH", "/api/v1/namespaces/lab/pods/g",
                    json{{"metadata", {{"resourceVersion", "1"}, {"labels", {{"a", "b"}}}}}},
                    "application/merge-patch+json");
  EXPECT_EQ(409, stale.status);
}

TEST_F(FakeApiServerTest, LeasesConflictOnAStaleResourceVersion) {
  const std::string base = "/apis/coordination.k8s.io/v1/namespaces/allox-system/leases";
  EXPECT_EQ(404, call("GET", base + "/alloxd").status);
  json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", "alloxd"}}},
                {"spec", {{"holderIdentity", "replica-a"}, {"leaseDurationSeconds", 15}}}};
  auto created = call("POST", base, lease);
  ASSERT_EQ(201, created.status) << created.body;
  EXPECT_EQ(409, call("POST", base, lease).status);  // AlreadyExists
  json mine = json::parse(created.body);
  json theirs = mine;
  mine["spec"]["holderIdentity"] = "replica-a";
  mine["spec"]["renewTime"] = "2026-11-22T21:00:00.000000Z";
  ASSERT_EQ(200, call("PUT", base + "/alloxd", mine).status);
  theirs["spec"]["holderIdentity"] = "replica-b";
  auto conflict = call("PUT", base + "/alloxd", theirs);
  EXPECT_EQ(409, conflict.status);
  EXPECT_EQ("Conflict", json::parse(conflict.body)["reason"]);
  EXPECT_EQ("replica-a", json::parse(call("GET", base + "/alloxd").body)["spec"]["holderIdentity"]);
}

TEST_F(FakeApiServerTest, EventsAreCreatedListedAndPatched) {
  json event = {{"metadata", {{"name", "g.17a"}, {"namespace", "lab"}}},
                {"involvedObject", {{"kind", "Pod"}, {"name", "g"}, {"namespace", "lab"}}},
                {"reason", "Queued"},
                {"message", "position 3 of 12 for gpu"},
                {"count", 1},
                {"type", "Normal"}};
  ASSERT_EQ(201, call("POST", "/api/v1/namespaces/lab/events", event).status);
  auto patched = call("PATCH", "/api/v1/namespaces/lab/events/g.17a",
                      json{{"count", 2}, {"message", "position 2 of 12 for gpu"}},
                      "application/strategic-merge-patch+json");
  ASSERT_EQ(200, patched.status) << patched.body;
  auto list = json::parse(
      call("GET", "/api/v1/namespaces/lab/events?fieldSelector=involvedObject.name%3Dg").body);
  ASSERT_EQ(1u, list["items"].size());
  EXPECT_EQ(2, list["items"][0]["count"]);
  EXPECT_EQ(201, call("POST", "/apis/events.k8s.io/v1/namespaces/lab/events",
                      json{{"metadata", {{"generateName", "g."}}}, {"note", "x"}})
                     .status);
}

TEST_F(FakeApiServerTest, BearerTokenIsRequired) {
  auto anonymous = request(api.url(), "GET", "/api/v1/nodes");
  EXPECT_EQ(401, anonymous.status);
  EXPECT_EQ("Unauthorized", json::parse(anonymous.body)["reason"]);
  EXPECT_EQ(401, request(api.url(), "GET", "/api/v1/nodes", "", "wrong").status);
  EXPECT_EQ(2, api.unauthorized_requests());
  EXPECT_EQ(200, call("GET", "/api/v1/nodes").status);
}

TEST_F(FakeApiServerTest, InjectedFailuresBrokenStreamsAndGarbage) {
  api.fail_requests({"GET", "/api/v1/nodes", 500, 2});
  EXPECT_EQ(500, call("GET", "/api/v1/nodes").status);
  EXPECT_EQ(500, call("GET", "/api/v1/nodes").status);
  EXPECT_EQ(200, call("GET", "/api/v1/nodes").status);

  WatchReader garbage(api.url(), "/api/v1/pods?watch=1&resourceVersion=1", kToken);
  ASSERT_EQ(200, garbage.status());
  // The server opens the watch on its store before it sends the 200 header that status()
  // waited for: the stream is there for the garbage.
  ASSERT_EQ(1, api.open_watches());
  api.send_watch_garbage("{\"type\":\"ADDED\",\"object\":");
  auto line = garbage.next_line();
  ASSERT_TRUE(line);
  EXPECT_TRUE(json::parse(*line, nullptr, false).is_discarded());

  WatchReader broken(api.url(), "/api/v1/nodes?watch=1", kToken);
  ASSERT_EQ(200, broken.status());
  ASSERT_EQ(2, api.open_watches());
  api.break_watches();
  EXPECT_FALSE(broken.next_line());
  EXPECT_TRUE(broken.ended());
  EXPECT_FALSE(broken.ended_cleanly());  // no terminating chunk: the client sees an error
}

TEST_F(FakeApiServerTest, WatchTimeoutSecondsEndsTheStreamCleanly) {
  WatchReader watch(api.url(), "/api/v1/pods?watch=1&timeoutSeconds=0.3", kToken);
  ASSERT_EQ(200, watch.status());
  EXPECT_FALSE(watch.next_line(std::chrono::seconds(5)));
  EXPECT_TRUE(watch.ended_cleanly());
}

TEST_F(FakeApiServerTest, DeletingABoundRunningPodMarksItThenRemovesIt) {
  json created = create(pod("r"));
  json binding = {{"target", {{"name", "node-a"}}}};
  ASSERT_EQ(201, call("POST", "/api/v1/namespaces/lab/pods/r/binding", binding).status);
  const std::string rv =
      json::parse(call("GET", "/api/v1/pods").body)["metadata"]["resourceVersion"];
  WatchReader watch(api.url(), "/api/v1/pods?watch=1&resourceVersion=" + rv, kToken);
  auto precondition = call("DELETE", "/api/v1/namespaces/lab/pods/r",
                           json{{"preconditions", {{"uid", "not-its-uid"}}}});
  EXPECT_EQ(409, precondition.status);
  ASSERT_EQ(200, call("DELETE", "/api/v1/namespaces/lab/pods/r").status);
  auto first = watch.next_line();
  auto second = watch.next_line();
  ASSERT_TRUE(first && second);
  EXPECT_EQ("MODIFIED", json::parse(*first)["type"]);
  EXPECT_TRUE(json::parse(*first)["object"]["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ("DELETED", json::parse(*second)["type"]);
  EXPECT_EQ(404, call("GET", "/api/v1/namespaces/lab/pods/r").status);
}

// A mutating webhook as alloxd serves it: adds the allox.io/queue gate with a JSONPatch.
class GateWebhook {
 public:
  explicit GateWebhook(bool allow = true) {
    auto port = extender::pick_free_port("127.0.0.1");
    url_ = "http://127.0.0.1:" + std::to_string(*port) + "/mutate";
    listener_ = std::make_unique<web::http::experimental::listener::http_listener>(url_);
    listener_->support([this, allow](web::http::http_request request) {
      json review = json::parse(request.extract_utf8string(true).get());
      ++calls_;
      last_ = review;
      std::string patch =
          R"([{"op":"add","path":"/spec/schedulingGates","value":[{"name":"allox.io/queue"}]}])";
      std::string encoded(boost::beast::detail::base64::encoded_size(patch.size()), '\0');
      encoded.resize(
          boost::beast::detail::base64::encode(encoded.data(), patch.data(), patch.size()));
      json response = {{"uid", review["request"]["uid"]}, {"allowed", allow}};
      if (allow) {
        response["patchType"] = "JSONPatch";
        response["patch"] = encoded;
      } else {
        response["status"] = {{"code", 403}, {"message", "no quota"}};
      }
      request.reply(200,
                    json{{"apiVersion", "admission.k8s.io/v1"},
                         {"kind", "AdmissionReview"},
                         {"response", response}}
                        .dump(),
                    "application/json");
    });
    listener_->open().wait();
  }
  ~GateWebhook() { listener_->close().wait(); }
  const std::string& url() const { return url_; }
  int calls() const { return calls_; }
  const json& last() const { return last_; }

 private:
  std::string url_;
  std::unique_ptr<web::http::experimental::listener::http_listener> listener_;
  std::atomic<int> calls_{0};
  json last_;
};

TEST(FakeApiServerWebhookTest, PodCreateGoesThroughTheMutatingWebhook) {
  GateWebhook webhook;
  AdmissionWebhook hook;
  hook.url = webhook.url();
  hook.scheduler_names = {"allox-scheduler"};
  FakeApiServer api(with_token(hook));
  auto created = request(api.url(), "POST", "/api/v1/namespaces/lab/pods", pod("w").dump(), kToken);
  ASSERT_EQ(201, created.status) << created.body;
  EXPECT_EQ("allox.io/queue", json::parse(created.body)["spec"]["schedulingGates"][0]["name"]);
  EXPECT_EQ("AdmissionReview", webhook.last()["kind"]);
  EXPECT_EQ("CREATE", webhook.last()["request"]["operation"]);
  EXPECT_EQ("w", webhook.last()["request"]["object"]["metadata"]["name"]);
  // Pods of another scheduler are not sent (objectSelector stand-in).
  ASSERT_EQ(201, request(api.url(), "POST", "/api/v1/namespaces/lab/pods",
                         pod("d", "default-scheduler").dump(), kToken)
                     .status);
  EXPECT_EQ(1, webhook.calls());
}

TEST(FakeApiServerWebhookTest, DenialsAndFailuresFollowFailurePolicy) {
  GateWebhook deny(/*allow=*/false);
  AdmissionWebhook hook;
  hook.url = deny.url();
  {
    FakeApiServer api(with_token(hook));
    auto denied =
        request(api.url(), "POST", "/api/v1/namespaces/lab/pods", pod("x").dump(), kToken);
    EXPECT_EQ(403, denied.status);
    EXPECT_NE(std::string::npos, denied.body.find("denied the request: no quota")) << denied.body;
  }
  auto port = extender::pick_free_port("127.0.0.1");
  hook.url = "http://127.0.0.1:" + std::to_string(*port) + "/nobody-listens";
  hook.timeout = std::chrono::milliseconds(2000);
  {
    FakeApiServer api(with_token(hook));
    auto failed =
        request(api.url(), "POST", "/api/v1/namespaces/lab/pods", pod("x").dump(), kToken);
    EXPECT_EQ(500, failed.status);
    EXPECT_NE(std::string::npos, failed.body.find("failed calling webhook")) << failed.body;
    EXPECT_EQ(1, api.webhook_failures());
  }
  hook.fail_closed = false;  // failurePolicy: Ignore
  {
    FakeApiServer api(with_token(hook));
    auto created =
        request(api.url(), "POST", "/api/v1/namespaces/lab/pods", pod("x").dump(), kToken);
    EXPECT_EQ(201, created.status);
    EXPECT_FALSE(json::parse(created.body)["spec"].contains("schedulingGates"));
  }
}

}  // namespace
}  // namespace allox::emulator
