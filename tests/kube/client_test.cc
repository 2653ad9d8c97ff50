// kube/client.h: one-shot calls and streamed lines against a scripted server.
#include "kube/client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <set>
#include <thread>

#include "tests/kube/scripted_server.h"

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

// An answer longer than max_answer_bytes (a 2 GB LIST) is an Error as soon as that is known:
// at its Content-Length, or once a chunked body passes the limit, while the server still sends
// (the stream below never ends): never read to its end, never held whole.
TEST(KubeClientTest, AnAnswerOverMaxAnswerBytesIsRefusedAsSoonAsItIsKnown) {
  auto endless = std::make_shared<LineChannel>();
  ScriptedServer server([&](const ScriptedRequest& r) {
    if (r.target == "/announced") {
      return ScriptedReply{200, "", nullptr,
                           std::string("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                       "Content-Length: 2147483648\r\n\r\n{\"items\":[")};
    }
    return ScriptedReply{200, "", endless};
  });
  KubeClientOptions options{server.url(), "", ""};
  options.max_answer_bytes = 1 << 20;
  KubeClient client(options);
  auto announced = client.call("GET", "/announced");
  ASSERT_FALSE(announced.ok());
  EXPECT_NE(std::string::npos, announced.message().find("larger than 1048576 bytes"))
      << announced.message();
  for (int i = 0; i < 40; ++i) endless->push(std::string(64 << 10, 'x'));  // 2.5 MB, no end
  auto chunked = client.call("GET", "/chunked");
  ASSERT_FALSE(chunked.ok());
  EXPECT_NE(std::string::npos, chunked.message().find("larger than 1048576 bytes"))
      << chunked.message();
  endless->close();
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
  ASSERT_TRUE(reply.ok()) << reply.message();
  EXPECT_EQ(410, reply->status);
  EXPECT_EQ(R"({"kind":"Status","code":410,"reason":"Expired"})", reply->body);
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

TEST(KubeClientTest, EscapeEncodesAllButTheUnreservedCharacters) {
  EXPECT_EQ("spec.schedulerName%3Dallox%20x", escape("spec.schedulerName=allox x"));
  EXPECT_EQ("AZaz09-._~", escape("AZaz09-._~"));
  EXPECT_EQ("a%2Fb%3Fc%26d%25e%2Bf%2C", escape("a/b?c&d%e+f,"));
  EXPECT_EQ("%C3%A9%00", escape(std::string_view("\xC3\xA9\0", 3)));
}

// A handler that blocks until the test lets it go (released before the server is destroyed).
struct Gate {
  std::promise<void> open;
  std::shared_future<void> opened = open.get_future().share();
  void wait() const { opened.wait(); }
};

std::set<int> connections_of(const std::vector<ScriptedRequest>& requests) {
  std::set<int> seen;
  for (const auto& r : requests) seen.insert(r.connection);
  return seen;
}

TEST(KubeClientTest, SequentialCallsShareOneKeptAliveConnection) {
  ScriptedApi api([](const ScriptedRequest& r) { return ScriptedReply{200, r.target, nullptr}; });
  for (int i = 0; i < 5; ++i) {
    auto reply = api.client.call(i % 2 == 0 ? "GET" : "POST", "/n/" + std::to_string(i), "{}");
    ASSERT_TRUE(reply.ok()) << reply.message();
    EXPECT_EQ("/n/" + std::to_string(i), reply->body);
  }
  auto requests = api.server.requests();
  ASSERT_EQ(5u, requests.size());
  EXPECT_EQ(1u, connections_of(requests).size());
}

TEST(KubeClientTest, AGetWhoseKeptAliveConnectionWasDroppedIsSentAgainOnAFreshOne) {
  std::atomic<int> n{0};
  ScriptedApi api([&](const ScriptedRequest&) {
    ScriptedReply reply{200, "{}", nullptr};
    if (n++ == 1) reply.raw_then_drop = "";  // the second request: gone without a byte
    return reply;
  });
  ASSERT_TRUE(api.client.call("GET", "/a").ok());
  auto reply = api.client.call("GET", "/b");
  ASSERT_TRUE(reply.ok()) << reply.message();
  EXPECT_EQ(200, reply->status);
  auto requests = api.server.requests();
  ASSERT_EQ(3u, requests.size());
  EXPECT_EQ(requests[0].connection, requests[1].connection);
  EXPECT_NE(requests[1].connection, requests[2].connection);
  EXPECT_EQ("/b", requests[2].target);
}

TEST(KubeClientTest, APostWhoseKeptAliveConnectionWasDroppedIsNotSentAgain) {
  std::atomic<int> n{0};
  ScriptedApi api([&](const ScriptedRequest&) {
    ScriptedReply reply{201, "{}", nullptr};
    if (n++ == 1) reply.raw_then_drop = "";  // it may have been done: the client cannot know
    return reply;
  });
  ASSERT_TRUE(api.client.call("POST", "/a", "{}").ok());
  auto reply = api.client.call("POST", "/b", "{}");
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(std::string::npos, reply.message().find("POST /b")) << reply.message();
  EXPECT_EQ(2u, api.server.requests().size());
}

TEST(KubeClientTest, AGetWhoseAnswerBrokeOffIsNotSentAgain) {
  std::atomic<int> n{0};
  ScriptedApi api([&](const ScriptedRequest&) {
    ScriptedReply reply{200, "{}", nullptr};
    if (n++ == 1) reply.raw_then_drop = "HTTP/1.1 200 OK\r\nContent-Le";
    return reply;
  });
  ASSERT_TRUE(api.client.call("GET", "/a").ok());
  auto reply = api.client.call("GET", "/b");
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(2u, api.server.requests().size());
  // The broken connection is not pooled: the next call works on a fresh one.
  ASSERT_TRUE(api.client.call("GET", "/c").ok());
  EXPECT_EQ(2u, connections_of(api.server.requests()).size());
}

TEST(KubeClientTest, AConnectionTheServerClosedWhileIdleIsNotUsedAgain) {
  std::atomic<int> n{0};
  ScriptedApi api([&](const ScriptedRequest&) {
    ScriptedReply reply{200, "{}", nullptr};
    reply.close_after = n++ == 0;
    return reply;
  });
  ASSERT_TRUE(api.client.call("GET", "/a").ok());
  auto reply = api.client.call("GET", "/b");
  ASSERT_TRUE(reply.ok()) << reply.message();
  auto requests = api.server.requests();
  ASSERT_GE(requests.size(), 2u);
  EXPECT_NE(requests.front().connection, requests.back().connection);
}

TEST(KubeClientTest, CallTimeoutBoundsAServerThatNeverAnswers) {
  Gate gate;
  ScriptedServer server([&](const ScriptedRequest&) {
    gate.wait();
    return ScriptedReply{200, "{}", nullptr};
  });
  KubeClientOptions options{server.url(), "", ""};
  options.call_timeout = std::chrono::milliseconds(300);
  KubeClient client(options);
  auto begin = std::chrono::steady_clock::now();
  auto reply = client.call("GET", "/never");
  auto took = std::chrono::steady_clock::now() - begin;
  gate.open.set_value();
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(std::string::npos, reply.message().find("300 ms")) << reply.message();
  EXPECT_GE(took, std::chrono::milliseconds(290));
  EXPECT_LT(took, std::chrono::seconds(10));
}

TEST(KubeClientTest, StopFromAnotherThreadEndsABlockedCallAndABlockedStream) {
  Gate gate;
  ScriptedServer server([&](const ScriptedRequest&) {
    gate.wait();
    return ScriptedReply{200, "{}", nullptr};
  });
  KubeClientOptions options{server.url(), "", ""};
  options.call_timeout = std::chrono::minutes(5);
  KubeClient client(options);
  auto call = std::async(std::launch::async, [&] { return client.call("GET", "/blocked"); });
  auto stream = std::async(std::launch::async, [&] {
    return client.stream("/watch", std::chrono::minutes(5), [](std::string_view) { return true; });
  });
  ASSERT_TRUE(server.wait_for([](const auto& r) { return r.size() == 2; }));
  auto begin = std::chrono::steady_clock::now();
  client.stop();
  // Five minutes of timeout left on both: only stop() can end them this soon.
  ASSERT_EQ(std::future_status::ready, call.wait_for(std::chrono::seconds(10)));
  ASSERT_EQ(std::future_status::ready, stream.wait_for(std::chrono::seconds(10)));
  auto took = std::chrono::steady_clock::now() - begin;
  gate.open.set_value();
  auto called = call.get();
  auto streamed = stream.get();
  ASSERT_FALSE(called.ok());
  ASSERT_FALSE(streamed.ok());
  EXPECT_NE(std::string::npos, called.message().find("stopped")) << called.message();
  EXPECT_NE(std::string::npos, streamed.message().find("stopped")) << streamed.message();
  EXPECT_LT(took, std::chrono::seconds(10));
}

TEST(KubeClientTest, ConcurrentCallersGrowThePoolAndEachGetsItsOwnAnswer) {
  constexpr int kCallers = 4, kCalls = 10;
  std::mutex mu;
  std::condition_variable all_in;
  int waiting = 0;
  ScriptedApi api([&](const ScriptedRequest& r) {
    std::unique_lock lock(mu);
    if (++waiting <= kCallers) {  // the first calls wait for one another: all in flight at once
      all_in.notify_all();
      all_in.wait_for(lock, std::chrono::seconds(20), [&] { return waiting >= kCallers; });
    }
    return ScriptedReply{200, r.target, nullptr};
  });
  std::vector<std::future<std::vector<std::string>>> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.push_back(std::async(std::launch::async, [&api, c] {
      std::vector<std::string> wrong;
      for (int i = 0; i < kCalls; ++i) {
        std::string path = "/c/" + std::to_string(c) + "/" + std::to_string(i);
        auto reply = api.client.call("GET", path);
        if (!reply.ok() || reply->body != path) {
          wrong.push_back(path + ": " + (reply.ok() ? reply->body : reply.message()));
        }
      }
      return wrong;
    }));
  }
  for (auto& caller : callers) EXPECT_EQ(std::vector<std::string>{}, caller.get());
  auto requests = api.server.requests();
  EXPECT_EQ(std::size_t{kCallers * kCalls}, requests.size());
  // Four callers at once needed four connections, and never more: each is given back.
  EXPECT_EQ(std::size_t{kCallers}, connections_of(requests).size());
}

}  // namespace
}  // namespace allox::kube
