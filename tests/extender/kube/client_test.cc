// extender/kube/client.h: one-shot calls and streamed lines against a scripted server.
#include "extender/kube/client.h"

#include <gtest/gtest.h>

#include <future>

#include "tests/extender/kube/scripted_server.h"

namespace allox::kube {
namespace {

using testing::LineChannel;
using testing::ScriptedApi;
using testing::ScriptedReply;
using testing::ScriptedRequest;
using testing::ScriptedServer;

TEST(KubeClientTest, CallSendsTokenBodyAndContentTypeAndReturnsAnyStatus) {
  ScriptedServer server([](const ScriptedRequest& r) {
    return ScriptedReply{r.method == "PATCH" ? 200 : 404,
                         "{\"echo\":" + std::to_string(r.body.size()) + "}", nullptr};
  });
  KubeClient client({server.url(), "secret", ""});
  auto patched = client.call("PATCH", "/api/v1/namespaces/a/pods/b", "{\"x\":1}",
                             "application/merge-patch+json");
  ASSERT_TRUE(patched.ok()) << patched.message();
  EXPECT_EQ(200, patched->status);
  EXPECT_EQ("{\"echo\":7}", patched->body);
  auto missing = client.call("GET", "/api/v1/namespaces/a/pods/none");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(404, missing->status);
  auto requests = server.requests();
  ASSERT_EQ(2u, requests.size());
  EXPECT_EQ("Bearer secret", requests[0].authorization);
  EXPECT_EQ("application/merge-patch+json", requests[0].content_type);
  EXPECT_EQ("/api/v1/namespaces/a/pods/b", requests[0].target);
}

TEST(KubeClientTest, UnreachableServerIsAnError) {
  std::string url;
  {
    ScriptedServer gone([](const ScriptedRequest&) { return ScriptedReply{}; });
    url = gone.url();
  }
  KubeClient client({url, "", ""});
  auto reply = client.call("GET", "/api/v1/nodes");
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(std::string::npos, reply.message().find("GET /api/v1/nodes")) << reply.message();
}

TEST(KubeClientTest, StreamHandsOverEachLineAsItArrives) {
  auto channel = std::make_shared<LineChannel>();
  ScriptedApi api([&](const ScriptedRequest&) { return ScriptedReply{200, "", channel}; });
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> seen;
  auto done = std::async(std::launch::async, [&] {
    return api.client.stream("/w", std::chrono::seconds(10), [&](std::string_view line) {
      std::lock_guard lock(mu);
      seen.emplace_back(line);
      cv.notify_all();
      return true;
    });
  });
  // Each line must arrive before the next is even sent: the body is not buffered to its end.
  for (int i = 0; i < 3; ++i) {
    channel->push("line " + std::to_string(i));
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return seen.size() == i + 1u; }))
        << "line " << i << " did not arrive on its own";
  }
  channel->close();
  auto reply = done.get();
  ASSERT_TRUE(reply.ok()) << reply.message();
  EXPECT_EQ(200, reply->status);
  EXPECT_EQ((std::vector<std::string>{"line 0", "line 1", "line 2"}), seen);
}

TEST(KubeClientTest, BrokenStreamIsAnErrorNotACleanEnd) {
  auto channel = std::make_shared<LineChannel>();
  ScriptedApi api([&](const ScriptedRequest&) { return ScriptedReply{200, "", channel}; });
  channel->push("{}");
  channel->break_connection();
  auto reply =
      api.client.stream("/w", std::chrono::seconds(10), [](std::string_view) { return true; });
  EXPECT_FALSE(reply.ok());
}

TEST(KubeClientTest, OverlongLineEndsTheStreamWithAnError) {
  auto channel = std::make_shared<LineChannel>();
  ScriptedServer server([&](const ScriptedRequest&) { return ScriptedReply{200, "", channel}; });
  KubeClientOptions options{server.url(), "", ""};
  options.max_line_bytes = 1000;
  KubeClient client(options);
  channel->push(std::string(5000, 'x'));
  auto reply = client.stream("/w", std::chrono::seconds(10), [](std::string_view) { return true; });
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(std::string::npos, reply.message().find("longer than 1000")) << reply.message();
  channel->close();
}

TEST(KubeClientTest, NonOkStreamAnswerComesBackWithItsBody) {
  ScriptedApi api([](const ScriptedRequest&) {
    return ScriptedReply{410, R"({"kind":"Status","code":410,"reason":"Expired"})", nullptr};
  });
  bool called = false;
  auto reply = api.client.stream("/w", std::chrono::seconds(10), [&](std::string_view) {
    called = true;
    return true;
  });
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(410, reply->status);
  EXPECT_FALSE(called);
}

TEST(KubeClientTest, StopEndsAStreamInFlightAndLaterCallsFailAtOnce) {
  auto channel = std::make_shared<LineChannel>();
  ScriptedApi api([&](const ScriptedRequest&) { return ScriptedReply{200, "", channel}; });
  std::promise<void> first_line;
  auto done = std::async(std::launch::async, [&] {
    bool once = false;
    return api.client.stream("/w", std::chrono::seconds(60), [&](std::string_view) {
      if (!once) first_line.set_value();
      once = true;
      return true;
    });
  });
  channel->push("{}");
  first_line.get_future().wait();
  auto begin = std::chrono::steady_clock::now();
  api.client.stop();
  ASSERT_EQ(std::future_status::ready, done.wait_for(std::chrono::seconds(5)));
  EXPECT_FALSE(done.get().ok());
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(5));
  EXPECT_FALSE(api.client.call("GET", "/x").ok());
  channel->close();
}

TEST(KubeClientTest, EscapeEncodesReservedCharacters) {
  EXPECT_EQ("spec.schedulerName%3Dallox%20x", escape("spec.schedulerName=allox x"));
}

}  // namespace
}  // namespace allox::kube
