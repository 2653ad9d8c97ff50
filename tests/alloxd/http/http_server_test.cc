// alloxd/http/http_server.h + routes.h over real loopback HTTP: operations endpoints, status codes,
// the admin token, body limits, and clients that stall or hang up.
#include "alloxd/http/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "alloxd/http/routes.h"
#include "alloxd/web/metrics.h"
#include "tests/alloxd/testing/server_fixture.h"

namespace allox::extender {
namespace {

using nlohmann::json;
using testing::make_pod;
using testing::ServerFixture;

constexpr const char* kAdmin = "Bearer test-token";

// A raw TCP connection, for clients that misbehave.
int connect_to(const std::string& url) {
  int port = std::stoi(url.substr(url.rfind(':') + 1));
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// The I/O threads keep only kube-scheduler's cycle (answered from memory) and the probes; /bind
// and everything an operator or a tenant asks for run on the blocking pool.
TEST(HttpServerTest, OnlyTheSchedulingCycleAndTheProbesAreAnsweredOnTheIoThreads) {
  auto request = [](const std::string& method, const std::string& path) {
    HttpRequest r;
    r.method = method;
    r.path = path;
    return r;
  };
  for (const char* path : {"/filter", "/prioritize", "/preempt", "/healthz", "/readyz"}) {
    EXPECT_FALSE(may_block(request("POST", path))) << path;
  }
  for (const char* path : {"/bind", "/metrics", "/v1/fairness", "/v1/jobs", "/v1/jobs/a%2Fb", "/",
                           "/status", "/nonexistent"}) {
    EXPECT_TRUE(may_block(request("GET", path))) << path;
  }
}

TEST(HttpServerTest, OperationsEndpoints) {
  ServerFixture server({{"g", {{"gpu", 2}}}});
  EXPECT_EQ(200, server.get("/healthz").status);
  EXPECT_EQ(200, server.get("/readyz").status);
  auto filter =
      server.post("/filter", testing::filter_body(make_pod("lab", "p", "nvidia.com/gpu"), {"g"}));
  ASSERT_EQ(200, filter.status);
  EXPECT_EQ(json::array({"g"}), json::parse(filter.body)["NodeNames"]);

  auto metrics = server.get("/metrics");
  ASSERT_EQ(200, metrics.status);
  EXPECT_NE(std::string::npos, metrics.content_type.find("text/plain"));
  for (const char* series : {"allox_requests_total{verb=\"filter\",code=\"200\"} 1",
                             "allox_request_duration_seconds_count{verb=\"filter\"} 1",
                             "allox_queue_length 1", "allox_solve_duration_seconds_count",
                             "allox_bind_failures_total 0", "allox_user_share{user=\"lab\"} 0"}) {
    EXPECT_NE(std::string::npos, metrics.body.find(series)) << series << "\n" << metrics.body;
  }
  // The filter registered the job with a synced write: the store's histogram counts it.
  const auto synced =
      read_histogram(metrics.body, "allox_store_write_duration_seconds", "durability=\"synced\"");
  ASSERT_FALSE(synced.empty()) << metrics.body;
  EXPECT_GE(synced.back().cumulative, 1u);
  auto queue = server.get("/v1/queue");
  ASSERT_EQ(200, queue.status);
  EXPECT_EQ("lab/p", json::parse(queue.body)["queued"][0]["id"]);
  auto fairness = server.get("/v1/fairness");
  ASSERT_EQ(200, fairness.status);
  EXPECT_EQ("lab", json::parse(fairness.body)["users"][0]["user"]);
  auto page = server.get("/");
  ASSERT_EQ(200, page.status);
  EXPECT_NE(std::string::npos, page.content_type.find("text/html"));
  EXPECT_NE(std::string::npos, page.body.find("lab/p"));
}

TEST(HttpServerTest, JobsAreAddressedWithEncodedOrPlainSlashes) {
  ServerFixture server({{"g", {{"gpu", 1}}}});
  server.post("/filter", testing::filter_body(make_pod("lab", "p", "nvidia.com/gpu"), {"g"}));
  EXPECT_EQ(200, server.get("/v1/jobs/lab%2Fp").status);
  EXPECT_EQ(200, server.get("/v1/jobs/lab/p").status);
  EXPECT_EQ(404, server.get("/v1/jobs/lab/none").status);
  auto bind = server.post("/bind", R"({"PodName":"p","PodNamespace":"lab","Node":"g"})");
  ASSERT_EQ(200, bind.status);
  EXPECT_EQ("", json::parse(bind.body)["Error"]);
  auto first = server.post("/v1/jobs/lab/p/done", "", kAdmin);
  ASSERT_EQ(200, first.status);
  EXPECT_EQ(false, json::parse(first.body)["already_recorded"]);
  EXPECT_EQ("done", json::parse(server.get("/v1/jobs/lab/p").body)["phase"]);
  // A repeat (the watch saw the pod succeed first, or a retry) is answered, not refused.
  auto repeat = server.post("/v1/jobs/lab/p/done", "", kAdmin);
  ASSERT_EQ(200, repeat.status);
  EXPECT_EQ(true, json::parse(repeat.body)["already_recorded"]);
}

TEST(HttpServerTest, ACompletionReportForAJobThatNeverRanConflicts) {
  ServerFixture server({{"g", {{"gpu", 1}}}});
  server.post("/filter", testing::filter_body(make_pod("lab", "q", "nvidia.com/gpu"), {"g"}));
  auto queued = server.post("/v1/jobs/lab/q/done", "", kAdmin);
  EXPECT_EQ(409, queued.status);
  EXPECT_NE(std::string::npos, queued.body.find("not running")) << queued.body;
  EXPECT_EQ("queued", json::parse(server.get("/v1/jobs/lab/q").body)["phase"]);
}

TEST(HttpServerTest, StatusCodesForBadRequests) {
  ServerFixture server({{"g", {{"gpu", 1}}}}, /*max_body_bytes=*/4096);
  struct Case {
    const char* method;
    const char* path;
    std::string body;
    const char* authorization;
    int status;
  };
  const Case cases[] = {
      {"POST", "/filter", "{not json", "", 400},
      {"POST", "/filter", R"({"Pod":7})", "", 400},
      {"POST", "/bind", R"({"Node":"g"})", "", 400},
      {"POST", "/preempt", R"({"Pod":{},"NodeNameToMetaVictims":[]})", "", 400},
      {"GET", "/filter", "", "", 405},
      {"GET", "/nowhere", "", "", 404},
      {"POST", "/filter", std::string(5000, ' '), "", 413},
      {"POST", "/v1/profiles", "{}", "", 401},
      {"POST", "/v1/profiles", "{}", "Bearer wrong", 401},
      {"POST", "/v1/profiles", "{}", kAdmin, 400},
      {"POST", "/v1/profiles", R"({"job":"lab/none","device":"gpu","iterations":1,"seconds":1})",
       kAdmin, 404},
      {"POST", "/v1/jobs/lab/none/done", "", kAdmin, 404},
      {"POST", "/v1/jobs/lab/none/done", "", "", 401},
      // A route that exists, asked with another method; the scheme's case; a path not UTF-8.
      {"PUT", "/healthz", "", "", 405},
      {"POST", "/v1/queue", "{}", "", 405},
      {"GET", "/v1/profiles", "", "", 405},
      {"POST", "/v1/profiles", "{}", "bearer test-token", 400},
      {"POST", "/v1/profiles", "{}", "Bearer test-token-and-more", 401},
      {"POST", "/v1/profiles", "{}", "Bearer test-toke", 401},
      {"GET", "/v1/jobs/%FF%FE/x", "", "", 400},
  };
  for (const Case& c : cases) {
    auto r = testing::http_request(server.url(), c.method, c.path, c.body, c.authorization);
    EXPECT_EQ(c.status, r.status) << c.method << " " << c.path << " " << c.body.substr(0, 40);
    if (c.status >= 400) {
      auto body = json::parse(r.body, nullptr, false);
      ASSERT_TRUE(body.is_object()) << r.body;
      EXPECT_FALSE(body["error"].get<std::string>().empty()) << r.body;
    }
  }
  EXPECT_TRUE(server.service().queue().queued.empty());
}

// Two Authorization headers are refused whichever comes first: picking one would let the order
// decide what a proxy and alloxd each believe was sent.
TEST(HttpServerTest, TwoAuthorizationHeadersAreRefused) {
  ServerFixture server({{"g", {{"gpu", 1}}}});
  for (const std::string order : {"Bearer test-token\r\nAuthorization: Bearer wrong",
                                  "Bearer wrong\r\nAuthorization: Bearer test-token"}) {
    const int fd = connect_to(server.url());
    ASSERT_GE(fd, 0);
    const std::string request = "POST /v1/profiles HTTP/1.1\r\nHost: x\r\nAuthorization: " + order +
                                "\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
    ASSERT_EQ(static_cast<ssize_t>(request.size()), ::send(fd, request.data(), request.size(), 0));
    std::string reply;
    char buffer[1024];
    for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) reply.append(buffer, n);
    ::close(fd);
    EXPECT_EQ(0u, reply.rfind("HTTP/1.1 400", 0)) << reply;
    EXPECT_NE(std::string::npos, reply.find("more than one Authorization header")) << reply;
  }
}

// A number beyond double's range is the client's mistake, on every body alloxd parses.
TEST(HttpServerTest, NumberOverflowIs400NamingTheNumber) {
  ServerFixture server({{"g", {{"gpu", 1}}}});
  for (const char* path : {"/filter", "/prioritize", "/bind", "/preempt", "/v1/profiles"}) {
    for (const char* body : {R"({"Pod":1e999})", R"({"Pod":{"metadata":{"x":-1e999}}})"}) {
      auto r = testing::http_request(server.url(), "POST", path, body, kAdmin);
      EXPECT_EQ(400, r.status) << path << " " << body << ": " << r.body;
      auto reply = json::parse(r.body, nullptr, false);
      ASSERT_TRUE(reply.is_object()) << r.body;
      EXPECT_NE(std::string::npos, reply["error"].get<std::string>().find("number overflow"))
          << r.body;
    }
  }
}

TEST(HttpServerTest, ProfilesNeedTheAdminTokenAndChangeEstimates) {
  ServerFixture server({{"g", {{"gpu", 1}}}});
  server.post("/filter",
              testing::filter_body(
                  make_pod("lab", "p", "nvidia.com/gpu", {{"allox.io/iterations", "100"}}), {"g"}));
  auto r =
      server.post("/v1/profiles",
                  R"([{"job":"lab/p","device":"gpu","iterations":1,"seconds":2},)"
                  R"({"job":"lab/p","device":"gpu","iterations":2,"seconds":3,"kind":"profile"}])",
                  kAdmin);
  ASSERT_EQ(200, r.status) << r.body;
  json job = json::parse(server.get("/v1/jobs/lab/p").body);
  EXPECT_EQ("profile", job["variants"][0]["estimate_source"]);
  EXPECT_NEAR(101, job["variants"][0]["estimate_seconds"].get<double>(), 1e-6);
}

// A batch of samples is kept whole or refused whole: a bad third sample leaves the first two
// unrecorded (a retry would otherwise record them again), and the error names it.
TEST(HttpServerTest, AProfileBatchWithOneBadSampleRecordsNoneOfIt) {
  ServerFixture server({{"g", {{"gpu", 1}}}});
  server.post("/filter", testing::filter_body(make_pod("lab", "p", "nvidia.com/gpu",
                                                       {{"allox.io/iterations", "1000"}}),
                                              {"g"}));
  auto estimate = [&] {
    const json job = json::parse(server.get("/v1/jobs/lab/p").body);
    return job["variants"][0]["estimate_source"].dump() + " " +
           job["variants"][0]["estimate_seconds"].dump();
  };
  const std::string before = estimate();
  const std::string good = R"({"job":"lab/p","device":"gpu","iterations":10,"seconds":5},)"
                           R"({"job":"lab/p","device":"gpu","iterations":20,"seconds":9},)";
  struct Case {
    std::string last, error;
  };
  const Case cases[] = {
      {R"({"job":"lab/p","device":"gpu","iterations":30,"seconds":1e-9})",
       "samples[2].seconds: must be within 0.001 to 2592000 (30 days), got 1e-09"},
      {R"({"job":"lab/p","device":"tpu","iterations":30,"seconds":1})",
       "samples[2].device: job lab/p has no pod of type tpu (its types: gpu)"},
      {R"({"job":"lab/p","device":"GPU!","iterations":30,"seconds":1})",
       "samples[2].device: must be a device type name (lowercase letters, digits, '-', '_', "
       "'.'; at most 63 characters)"},
  };
  for (const Case& c : cases) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      auto r = server.post("/v1/profiles", "[" + good + c.last + "]", kAdmin);
      EXPECT_EQ(400, r.status) << r.body;
      EXPECT_EQ(c.error, json::parse(r.body)["error"]) << r.body;
    }
  }
  EXPECT_EQ(before, estimate()) << "no sample of a refused batch was recorded";
  // The same good samples alone are recorded, and move the estimate.
  auto r = server.post("/v1/profiles", "[" + good.substr(0, good.size() - 1) + "]", kAdmin);
  ASSERT_EQ(200, r.status) << r.body;
  EXPECT_NE(before, estimate());
}

TEST(HttpServerTest, StalledAndHalfClosedClientsDoNotBlockOthers) {
  ServerFixture server({{"g", {{"gpu", 1}}}});
  // Announces 1000 bytes, sends 10 and stalls.
  int stalled = connect_to(server.url());
  ASSERT_GE(stalled, 0);
  std::string head = "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n0123456789";
  ASSERT_EQ(static_cast<ssize_t>(head.size()), ::send(stalled, head.data(), head.size(), 0));
  // Sends half a request line and closes its sending side.
  int half_closed = connect_to(server.url());
  ASSERT_GE(half_closed, 0);
  std::string partial = "POST /fil";
  ::send(half_closed, partial.data(), partial.size(), 0);
  ::shutdown(half_closed, SHUT_WR);
  // A body over the limit (1 MiB here) is answered 413.
  int oversized = connect_to(server.url());
  ASSERT_GE(oversized, 0);
  std::string big = "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n" +
                    std::string(2000000, ' ');
  for (std::size_t sent = 0; sent < big.size();) {
    ssize_t n = ::send(oversized, big.data() + sent, big.size() - sent, 0);
    ASSERT_GT(n, 0);
    sent += static_cast<std::size_t>(n);
  }
  char reply[256] = {};
  ssize_t n = ::recv(oversized, reply, sizeof reply - 1, 0);
  EXPECT_GT(n, 0);
  EXPECT_NE(nullptr, std::strstr(reply, " 413 ")) << reply;

  for (int i = 0; i < 20; ++i) EXPECT_EQ(200, server.get("/healthz").status);
  auto filter =
      server.post("/filter", testing::filter_body(make_pod("lab", "p", "nvidia.com/gpu"), {"g"}));
  EXPECT_EQ(200, filter.status);
  ::close(stalled);
  ::close(half_closed);
  ::close(oversized);
  EXPECT_EQ(200, server.get("/healthz").status);
}

}  // namespace
}  // namespace allox::extender
