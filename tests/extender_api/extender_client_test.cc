// extender_api/extender_client.h: one kept-alive connection, a new one when the server has closed
// it, big answers read whole, and every fault an error naming the call.
#include "extender_api/extender_client.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "alloxd/http/http_server.h"

namespace allox::extender {
namespace {

std::unique_ptr<HttpServer> serving(HttpHandler handler, int port = 0) {
  HttpServerOptions options;
  options.port = port;
  auto server = HttpServer::start(std::move(handler), options);
  EXPECT_TRUE(server.ok()) << server.message();
  return server ? std::move(*server) : nullptr;
}

HttpHandler echo() {
  HttpHandler handler;
  handler.serve = [](const HttpRequest& request) {
    return HttpReply{200, "application/json",
                     nlohmann::json{{"path", request.path}, {"bytes", request.body.size()}}.dump()};
  };
  return handler;
}

TEST(ExtenderClientTest, AServerThatClosedTheKeptConnectionIsAskedAgainOnANewOne) {
  auto server = serving(echo());
  ASSERT_TRUE(server);
  const int port = server->port();
  ExtenderClient client(server->url() + "/prefix/", "");
  auto first = client.post_text("/filter", std::string(100000, 'x'));
  ASSERT_TRUE(first.ok()) << first.message();
  EXPECT_EQ(R"({"bytes":100000,"path":"/prefix/filter"})", *first);
  server.reset();  // closes the kept-alive connection
  server = serving(echo(), port);
  ASSERT_TRUE(server);
  auto second = client.get("/readyz");
  ASSERT_TRUE(second.ok()) << second.message();
  EXPECT_EQ("/prefix/readyz", (*second)["path"]);
}

TEST(ExtenderClientTest, BigAnswersAreReadWhole) {
  HttpHandler handler;
  const std::string big(5 << 20, 'a');
  handler.serve = [&big](const HttpRequest&) { return HttpReply{200, "text/plain", big}; };
  auto server = serving(handler);
  ASSERT_TRUE(server);
  ExtenderClient client(server->url(), "");
  for (int i = 0; i < 3; ++i) {
    auto text = client.get_text("/metrics");
    ASSERT_TRUE(text.ok()) << text.message();
    EXPECT_EQ(big, *text);
  }
}

TEST(ExtenderClientTest, FaultsAreErrorsNamingTheCall) {
  {
    // A server too slow for the client: it answers only once the client has given up.
    std::mutex mu;
    std::condition_variable cv;
    bool gave_up = false;
    HttpHandler handler;
    handler.serve = [&](const HttpRequest&) {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return gave_up; });
      return HttpReply{200, "application/json", "{}"};
    };
    auto server = serving(handler);
    ASSERT_TRUE(server);
    ExtenderClient client(server->url(), "", std::chrono::milliseconds(50));
    auto answer = client.post_text("/filter", "{}");
    {
      std::lock_guard lock(mu);
      gave_up = true;
    }
    cv.notify_all();
    ASSERT_FALSE(answer.ok());
    EXPECT_EQ("POST /filter: timed out after 50 ms", answer.message());
  }
  {
    HttpHandler handler;
    handler.serve = [](const HttpRequest&) { return HttpReply{503, "text/plain", "not ready"}; };
    auto server = serving(handler);
    ASSERT_TRUE(server);
    ExtenderClient client(server->url(), "");
    EXPECT_EQ("GET /readyz: HTTP 503: not ready", client.get_text("/readyz").message());
    EXPECT_NE(std::string::npos, client.get("/readyz").message().find("HTTP 503"));
  }
  auto port = pick_free_port("127.0.0.1");
  ASSERT_TRUE(port.ok());
  ExtenderClient refused("http://127.0.0.1:" + std::to_string(*port), "");
  EXPECT_EQ(0u, refused.get("/healthz").message().rfind("GET /healthz: cannot connect", 0))
      << refused.get("/healthz").message();
  ExtenderClient https("https://127.0.0.1:1", "");
  EXPECT_NE(std::string::npos, https.get("/x").message().find("not an http:// URL"));
}

TEST(ExtenderClientTest, PathSegmentsArePercentEncoded) {
  EXPECT_EQ("team%2Fjob-1.a_b~c%20d", path_segment("team/job-1.a_b~c d"));
}

}  // namespace
}  // namespace allox::extender
