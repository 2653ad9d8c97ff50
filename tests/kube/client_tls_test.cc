// kube/client.h over https: the server is verified against the CA file and must carry
// the URL's host (here an IP address: no test depends on name lookups, which a machine without
// /etc/hosts fails). Certificates are made here, by the openssl command, for each run.
#include <gtest/gtest.h>
#include <stdlib.h>

// clang-format off
#include <utility>  // before Boost 1.74 asio, which uses std::exchange without including it
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
// clang-format on
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "kube/client.h"

namespace allox::kube {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

// A self-signed certificate (its own CA) for the IP address `ip`, written as <dir>/<stem>.crt
// and .key.
bool make_certificate(const std::filesystem::path& dir, const std::string& stem,
                      const std::string& ip) {
  std::string command =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
      "-nodes -days 1 -subj /CN=" +
      ip + " -addext subjectAltName=IP:" + ip + " -keyout " +
      (dir / (stem + ".key")).string() + " -out " + (dir / (stem + ".crt")).string() +
      " >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

// Answers each TLS connection's one request with 200 {"tls":true}, one connection at a time.
class TlsServer {
 public:
  TlsServer(const std::string& certificate, const std::string& key)
      : context_(asio::ssl::context::tls_server),
        acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    context_.use_certificate_chain_file(certificate);
    context_.use_private_key_file(key, asio::ssl::context::pem);
    thread_ = std::thread([this] { serve(); });
  }
  ~TlsServer() {
    stopping_ = true;
    boost::system::error_code ignored;
    tcp::socket poke(io_);
    poke.connect(acceptor_.local_endpoint(), ignored);
    thread_.join();
  }
  int port() const { return acceptor_.local_endpoint().port(); }
  int answered() const { return answered_.load(); }  // requests read over TLS

 private:
  void serve() {
    while (true) {
      boost::system::error_code error;
      tcp::socket socket(io_);
      acceptor_.accept(socket, error);
      if (stopping_) return;
      if (error) continue;
      beast::ssl_stream<tcp::socket> tls(std::move(socket), context_);
      tls.handshake(asio::ssl::stream_base::server, error);
      if (error) continue;  // the client refused us
      beast::flat_buffer buffer;
      http::request<http::string_body> request;
      http::read(tls, buffer, request, error);
      if (error) continue;
      http::response<http::string_body> response{http::status::ok, 11};
      response.body() = R"({"tls":true})";
      response.keep_alive(false);
      response.prepare_payload();
      ++answered_;  // before the answer leaves: the client may look as soon as it has it
      http::write(tls, response, error);
    }
  }

  asio::io_context io_;
  asio::ssl::context context_;
  tcp::acceptor acceptor_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> answered_{0};
  std::thread thread_;
};

class KubeClientTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/allox-kube-tls-XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(pattern));
    dir_ = pattern;
    ASSERT_TRUE(make_certificate(dir_, "server", "127.0.0.1")) << "openssl req failed";
    ASSERT_TRUE(make_certificate(dir_, "other", "127.0.0.1")) << "openssl req failed";
    ASSERT_TRUE(make_certificate(dir_, "misnamed", "127.0.0.2")) << "openssl req failed";
    server_ = std::make_unique<TlsServer>(ca("server"), (dir_ / "server.key").string());
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::string ca(const std::string& stem) const { return (dir_ / (stem + ".crt")).string(); }
  Expected<KubeResponse> get(const std::string& ca_file, const TlsServer* server = nullptr) {
    if (server == nullptr) server = server_.get();
    KubeClient client({"https://127.0.0.1:" + std::to_string(server->port()), "t", ca_file});
    return client.call("GET", "/api/v1/nodes");
  }

  std::filesystem::path dir_;
  std::unique_ptr<TlsServer> server_;
};

TEST_F(KubeClientTlsTest, TheRightCaAndHostNameWork) {
  auto reply = get(ca("server"));
  ASSERT_TRUE(reply.ok()) << reply.message();
  EXPECT_EQ(200, reply->status);
  EXPECT_EQ(R"({"tls":true})", reply->body);
  EXPECT_EQ(1, server_->answered());
}

TEST_F(KubeClientTlsTest, AServerTheCaDidNotSignIsRefused) {
  auto reply = get(ca("other"));
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(std::string::npos, reply.message().find("TLS")) << reply.message();
  EXPECT_EQ(0, server_->answered());
}

TEST_F(KubeClientTlsTest, ACertificateForAnotherNameIsRefused) {
  // Signed by the trusted CA, but for 127.0.0.2, not for the address the URL names.
  TlsServer misnamed(ca("misnamed"), (dir_ / "misnamed.key").string());
  auto reply = get(ca("misnamed"), &misnamed);
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(std::string::npos, reply.message().find("TLS")) << reply.message();
  EXPECT_EQ(0, misnamed.answered());
}

TEST_F(KubeClientTlsTest, AnUnreadableCaFileIsAnErrorNamingTls) {
  auto reply = get((dir_ / "missing.crt").string());
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(std::string::npos, reply.message().find("TLS")) << reply.message();
  EXPECT_EQ(0, server_->answered());
}

}  // namespace
}  // namespace allox::kube
