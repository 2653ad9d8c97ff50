// kubesim/extender_client.h: the emulated kube-scheduler's extender calls. The oracle
// for the bodies it writes is what a real kube-scheduler v1.28.7 sent
// (data/kube-extender/real-v1.28/), never text allox wrote; answers are read field by field and
// a malformed one is an error naming the field.
#include "kubesim/extender_client.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "alloxd/http/http_server.h"

namespace allox::emulator {
namespace {

using nlohmann::json;
using ordered = nlohmann::ordered_json;

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The recorded /filter and /prioritize requests of one folder.
std::vector<std::filesystem::path> recorded_requests(const char* folder) {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::string(ALLOX_SOURCE_DIR "/data/kube-extender/real-v1.28/") + folder)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with("-filter.json") || name.ends_with("-prioritize.json")) {
      out.push_back(entry.path());
    }
  }
  return out;
}

// An object as the API server stores it: with the kind and apiVersion a Go client leaves out of
// an extender body.
json stored(json object, const char* kind) {
  object["kind"] = kind;
  object["apiVersion"] = "v1";
  return object;
}

std::vector<std::string> top_level_keys(const std::string& body) {
  const ordered object = ordered::parse(body);
  std::vector<std::string> keys;
  for (auto it = object.begin(); it != object.end(); ++it) keys.push_back(it.key());
  return keys;
}

// What kube-scheduler sends a nodeCacheCapable extender: the same JSON value, and the same
// top-level keys in the same order, from the pod and the names alone.
TEST(EmulatorExtenderClientTest, NodeNamesBodiesAreWhatTheRealSchedulerSent) {
  auto requests = recorded_requests("nodecache-true");
  ASSERT_GE(requests.size(), 5u) << "the recorded requests were not found";
  for (const auto& path : requests) {
    SCOPED_TRACE(path.filename().string());
    const std::string recorded = read_file(path);
    const json want = json::parse(recorded);
    const std::vector<std::string> names = want["NodeNames"];
    const std::string body = extender_args_body(stored(want["Pod"], "Pod"), names, nullptr);
    EXPECT_EQ(want, json::parse(body));
    EXPECT_EQ(top_level_keys(recorded), top_level_keys(body));
  }
}

// The node-names body is written without extender::render (no NodeNameList, no pod copy), so
// it is held to render's bytes: names needing every kind of escape, keys and values of the pod
// that need escaping, and kind/apiVersion left out wherever they sort.
TEST(EmulatorExtenderClientTest, NodeNamesBodyIsTheBytesRenderWrites) {
  const json pod = json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p\"1",
      "annotations":{"a\\b":"line\nbreak\u0001","zz":"\u00e9"}},"spec":{"containers":[]},
      "status":{}})");
  const std::vector<std::string> names = {"node-0",    "",         "quo\"te",     "back\\slash",
                                          "tab\there", "nl\nx\ry", "ctl\x01\x1f", "\xc3\xa9"};
  extender::ExtenderArgs args;
  args.pod = wire_object(pod);
  args.node_names.emplace();
  for (const std::string& name : names) args.node_names->push_back(name);
  EXPECT_EQ(extender::render(args), extender_args_body(pod, names, nullptr));
  args.node_names.emplace();
  EXPECT_EQ(extender::render(args), extender_args_body(pod, {}, nullptr));
  // A pod that is not an object (never stored, but the writer must not differ on it either).
  args.pod = json::array({1, "x"});
  EXPECT_EQ(extender::render(args), extender_args_body(json::array({1, "x"}), {}, nullptr));
}

// And a non-nodeCacheCapable one: the nodes' objects as a v1.NodeList, NodeNames null.
TEST(EmulatorExtenderClientTest, NodeListBodiesAreWhatTheRealSchedulerSent) {
  auto requests = recorded_requests("nodecache-false");
  ASSERT_GE(requests.size(), 3u) << "the recorded requests were not found";
  for (const auto& path : requests) {
    SCOPED_TRACE(path.filename().string());
    const json want = json::parse(read_file(path));
    std::vector<std::string> names;
    std::vector<json> nodes;
    for (const json& item : want["Nodes"]["items"]) {
      names.push_back(item["metadata"]["name"]);
      nodes.push_back(stored(item, "Node"));
    }
    std::vector<const json*> objects;
    for (const json& node : nodes) objects.push_back(&node);
    EXPECT_EQ(want, json::parse(extender_args_body(stored(want["Pod"], "Pod"), names, &objects)));
  }
}

// A server on a free port that answers every request with `status` and `body`.
std::unique_ptr<extender::HttpServer> answering(int status, std::string body) {
  extender::HttpHandler handler;
  handler.serve = [status, body](const extender::HttpRequest&) {
    return extender::HttpReply{status, "application/json", body};
  };
  extender::HttpServerOptions options;
  options.port = 0;
  auto server = extender::HttpServer::start(std::move(handler), options);
  EXPECT_TRUE(server.ok()) << server.message();
  return server ? std::move(*server) : nullptr;
}

TEST(EmulatorExtenderClientTest, FilterAnswersAreReadFieldByField) {
  const std::string reply = read_file(ALLOX_SOURCE_DIR
                                      "/data/kube-extender/real-v1.28/alloxd-nodecache-true/"
                                      "009-filter.reply.json");
  const json want = json::parse(reply);
  auto server = answering(200, reply);
  ASSERT_TRUE(server);
  extender::ExtenderClient client(server->url(), "");
  auto answer = post_filter(client, "filter", "{}");
  ASSERT_TRUE(answer.ok()) << answer.message();
  const json& failed = want["FailedNodes"];
  ASSERT_TRUE(failed.is_object() && !failed.empty()) << "a queued pod's answer was recorded";
  EXPECT_EQ(failed.size(), answer->failed_nodes.size());
  for (const auto& [node, why] : failed.items()) EXPECT_EQ(why, answer->failed_nodes.at(node));
  EXPECT_EQ(want["NodeNames"].size(), answer->node_names->size());
  EXPECT_EQ(want["Error"], answer->error);
}

TEST(EmulatorExtenderClientTest, BadAnswersAreErrorsNamingTheCallAndTheField) {
  {
    auto server = answering(200, R"({"NodeNames":["a"],"FailedNodes":{"b":7}})");
    ASSERT_TRUE(server);
    extender::ExtenderClient client(server->url(), "");
    auto answer = post_filter(client, "filter", "{}");
    ASSERT_FALSE(answer.ok());
    EXPECT_EQ("POST /filter: FailedNodes.b: expected a string, got number", answer.message());
  }
  {
    auto server = answering(400, R"({"error":"NodeNames[0]: expected a string"})");
    ASSERT_TRUE(server);
    extender::ExtenderClient client(server->url(), "");
    auto answer = post_filter(client, "filter", "{}");
    ASSERT_FALSE(answer.ok());
    EXPECT_NE(std::string::npos, answer.message().find("POST /filter: HTTP 400"))
        << answer.message();
  }
  {
    auto server = answering(200, R"({"NodeNames":null,"Error":"allox is not ready"})");
    ASSERT_TRUE(server);
    extender::ExtenderClient client(server->url(), "");
    auto answer = post_filter(client, "filter", "{}");
    ASSERT_TRUE(answer.ok()) << answer.message();
    EXPECT_EQ("allox is not ready", answer->error) << "the caller decides what Error means";
  }
}

TEST(EmulatorExtenderClientTest, OnlyNodesThatWereSentAreKeptInTheAnswersOrder) {
  const std::vector<std::string> sent = {"n3", "n1", "n2", "n10", "n4", "n5", "n6", "n7", "n8"};
  EXPECT_EQ((std::vector<std::string>{"n2", "n1"}),
            kept_of_sent(extender::NodeNameList{"n2", "ghost", "n1"}, sent));
  // Many kept nodes take the indexed path: same answer.
  extender::NodeNameList many;
  std::vector<std::string> want;
  for (const char* n : {"n8", "n7", "x", "n6", "n5", "n4", "n10", "n2", "n1", "n3"}) {
    many.push_back(n);
    if (std::string_view(n) != "x") want.push_back(n);
  }
  EXPECT_EQ(want, kept_of_sent(many, sent));
  EXPECT_TRUE(kept_of_sent(extender::NodeNameList{}, sent).empty());
}

TEST(EmulatorExtenderClientTest, TheKeptNodesAreReadAsHttpExtenderFilterReadsThem) {
  const std::vector<std::string> sent = {"n1", "n2", "n3"};
  auto names = [](std::initializer_list<std::string_view> list) {
    extender::FilterResult answer;
    answer.node_names = extender::NodeNameList(list);
    return answer;
  };
  auto objects = [](std::initializer_list<const char*> list) {
    extender::FilterResult answer;
    answer.node_objects.emplace();
    for (const char* name : list) answer.node_objects->push_back({{"metadata", {{"name", name}}}});
    return answer;
  };
  // nodeCacheCapable: NodeNames, in the answer's order; the unnamed n3 is simply not kept.
  auto kept = filter_kept(names({"n2", "n1"}), true, sent, "http://x");
  ASSERT_TRUE(kept.ok()) << kept.message();
  EXPECT_EQ((std::vector<std::string>{"n2", "n1"}), *kept);
  auto ghost = filter_kept(names({"n1", "ghost"}), true, sent, "http://x");
  ASSERT_FALSE(ghost.ok());
  EXPECT_EQ(
      "extender \"http://x\" claims a filtered node \"ghost\" which is not found in the input "
      "node list",
      ghost.message());
  // NodeNames null: Nodes are read even from a nodeCacheCapable extender.
  EXPECT_EQ(std::vector<std::string>{"n3"}, *filter_kept(objects({"n3"}), true, sent, "u"));
  // Not nodeCacheCapable: only Nodes count.
  EXPECT_TRUE(filter_kept(names({"n1"}), false, sent, "u")->empty());
  EXPECT_EQ(std::vector<std::string>{"n2"}, *filter_kept(objects({"n2", "x"}), false, sent, "u"));
  EXPECT_TRUE(filter_kept(extender::FilterResult{}, true, sent, "u")->empty());
}

}  // namespace
}  // namespace allox::emulator
