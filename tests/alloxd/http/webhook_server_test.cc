// alloxd/http/webhook_server.h: the gate webhook's own HTTPS listener, as the API server reaches
// it. A client that trusts only the test certificate (as a caBundle does) completes the TLS
// handshake; one that trusts nothing does not. Over that connection a valid AdmissionReview is
// allowed with the gate patch, a malformed one gets a 400 naming the field, and nothing but the
// gate and /healthz is served. The fake API server calls it over the same TLS on pod create.
// cpprestsdk's U() macro collides with GoogleTest's templates.
#define _TURN_OFF_PLATFORM_STRING
#include "alloxd/http/webhook_server.h"

#include <cpprest/http_client.h>
#include <gtest/gtest.h>

#include <boost/asio/ssl.hpp>
#include <nlohmann/json.hpp>

#include "alloxd/service.h"
#include "fairness/policy.h"
#include "kubesim/fake_api_server.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

using nlohmann::json;

json review(const json& request) {
  return {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", request}};
}

json pod_create(const std::string& uid) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "train-gpu"}, {"namespace", "lab"}}},
              {"spec", {{"schedulerName", "allox-scheduler"}, {"containers", json::array()}}}};
  return {{"uid", uid},
          {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
          {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
          {"namespace", "lab"},
          {"operation", "CREATE"},
          {"object", pod}};
}

struct Reply {
  int status = 0;
  std::string body;
};

// One request over HTTPS, trusting `ca_file` only (empty: the system's CAs, which do not
// include the test certificate). Throws when the handshake fails.
Reply https(const std::string& url, const std::string& ca_file, const std::string& method,
            const std::string& path, const std::string& body = "") {
  web::http::client::http_client_config config;
  config.set_timeout(std::chrono::seconds(5));
  if (!ca_file.empty()) {
    config.set_ssl_context_callback(
        [ca_file](boost::asio::ssl::context& context) { context.load_verify_file(ca_file); });
  }
  web::http::client::http_client client(url, config);
  web::http::http_request request(method);
  request.set_request_uri(path);
  if (!body.empty()) request.set_body(body, "application/json");
  auto response = client.request(request).get();
  return {response.status_code(), response.extract_utf8string(true).get()};
}

class WebhookServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_self_signed(dir_.file("tls.crt"), dir_.file("tls.key"));
    ExtenderConfig config = testing::make_config({}, dir_.file("state.db"));
    config.scheduler_name = "allox-scheduler";
    auto service = ExtenderService::create(config, make_policy("fifo", PolicyOptions{}).value(),
                                           nullptr, ServiceOptions{});
    ASSERT_TRUE(service.ok()) << service.message();
    service_ = std::move(*service);
    WebhookConfig hook;
    hook.listen = {"127.0.0.1", 0};
    hook.tls_cert_file = cert();
    hook.tls_key_file = dir_.file("tls.key");
    auto server = start_webhook_server(*service_, hook, 1 << 20);
    ASSERT_TRUE(server.ok()) << server.message();
    server_ = std::move(*server);
  }
  void TearDown() override {
    if (server_) server_->stop();
  }
  std::string cert() const { return dir_.file("tls.crt"); }
  std::string url() const { return server_->url(); }

  testing::ScratchDir dir_;
  std::unique_ptr<ExtenderService> service_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(WebhookServerTest, AValidReviewOverVerifiedTlsIsAllowedWithTheGatePatch) {
  ASSERT_EQ(0u, url().rfind("https://127.0.0.1:", 0)) << url();
  Reply reply = https(url(), cert(), "POST", "/admission/gate", review(pod_create("u-1")).dump());
  ASSERT_EQ(200, reply.status) << reply.body;
  json answer = json::parse(reply.body);
  EXPECT_EQ("u-1", answer["response"]["uid"]);
  EXPECT_EQ(true, answer["response"]["allowed"]);
  EXPECT_EQ("JSONPatch", answer["response"]["patchType"]);
  EXPECT_FALSE(answer["response"].value("patch", "").empty());
  EXPECT_EQ(200, https(url(), cert(), "GET", "/healthz").status);
}

TEST_F(WebhookServerTest, AMalformedReviewIsA400NamingTheField) {
  json no_uid = pod_create("u-2");
  no_uid.erase("uid");
  json bad_spec = pod_create("u-3");
  bad_spec["object"]["spec"] = 7;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{not json", "the body is not a JSON object"},
      {review(no_uid).dump(), "request.uid"},
      {review(bad_spec).dump(), "request.object.spec"},
      {json{{"apiVersion", "admission.k8s.io/v1beta1"}, {"kind", "AdmissionReview"}}.dump(),
       "apiVersion"},
  };
  for (const auto& [body, field] : cases) {
    Reply reply = https(url(), cert(), "POST", "/admission/gate", body);
    EXPECT_EQ(400, reply.status) << body;
    EXPECT_NE(std::string::npos, reply.body.find(field)) << body << " -> " << reply.body;
  }
  // GET is not a review.
  EXPECT_EQ(405, https(url(), cert(), "GET", "/admission/gate").status);
}

TEST_F(WebhookServerTest, OnlyTheGateAndHealthAreServed) {
  for (const std::string path : {"/v1/queue", "/filter", "/metrics", "/"}) {
    Reply reply = https(url(), cert(), path == "/filter" ? "POST" : "GET", path, "{}");
    EXPECT_EQ(404, reply.status) << path;
    EXPECT_NE(std::string::npos, reply.body.find("only POST /admission/gate")) << reply.body;
  }
}

TEST_F(WebhookServerTest, AClientThatDoesNotTrustTheCertificateFailsTheHandshake) {
  EXPECT_ANY_THROW(https(url(), "", "GET", "/healthz"));
  EXPECT_EQ(200, https(url(), cert(), "GET", "/healthz").status);
}

TEST_F(WebhookServerTest, TheApiServerGatesPodsThroughItOverTls) {
  emulator::FakeApiServer api;
  emulator::AdmissionWebhook hook;
  hook.url = url() + "/admission/gate";
  hook.ca_file = cert();
  api.register_webhook(hook);
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "train-gpu"}, {"namespace", "lab"}}},
              {"spec",
               {{"schedulerName", "allox-scheduler"},
                {"containers", json::array({{{"name", "main"}, {"image", "x"}}})}}}};
  auto created = api.objects().create(emulator::pods_resource(), "lab", pod);
  ASSERT_TRUE(std::holds_alternative<emulator::ObjectPtr>(created));
  const json& stored = *std::get<emulator::ObjectPtr>(created);
  EXPECT_EQ(json::parse(R"([{"name":"allox.io/queue"}])"), stored["spec"]["schedulingGates"]);
  EXPECT_EQ(1, api.webhook_calls());
  EXPECT_EQ(0, api.webhook_failures());

  // A webhook the API server cannot verify fails closed (failurePolicy Fail): no pod.
  hook.ca_file = dir_.file("tls.key");  // not a certificate
  api.register_webhook(hook);
  pod["metadata"]["name"] = "train-cpu";
  auto refused = api.objects().create(emulator::pods_resource(), "lab", pod);
  EXPECT_TRUE(std::holds_alternative<emulator::ApiError>(refused));
  EXPECT_EQ(1, api.webhook_failures());
}

TEST(WebhookServerStartTest, AMissingKeyIsAnErrorNamingTheFile) {
  testing::ScratchDir dir;
  testing::write_self_signed(dir.file("tls.crt"), dir.file("tls.key"));
  ExtenderConfig config = testing::make_config({}, dir.file("state.db"));
  auto service = ExtenderService::create(config, make_policy("fifo", PolicyOptions{}).value(),
                                         nullptr, ServiceOptions{});
  ASSERT_TRUE(service.ok()) << service.message();
  WebhookConfig hook;
  hook.listen = {"127.0.0.1", 0};
  hook.tls_cert_file = dir.file("tls.crt");
  hook.tls_key_file = dir.file("missing.key");
  auto server = start_webhook_server(**service, hook, 1 << 20);
  ASSERT_FALSE(server.ok());
  EXPECT_NE(std::string::npos, server.message().find("missing.key")) << server.message();
}

}  // namespace
}  // namespace allox::extender
