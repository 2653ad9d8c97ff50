// alloxd/http/http_server.h's limits, enforced while a request is read, over raw loopback sockets:
// oversized headers (431) and bodies (413, Content-Length or chunked, answered before the body
// ends), stalled requests (408), idle keep-alive connections, the connection cap, draining on
// stop(), and the HTTPS mode. The full-size versions (1 GB bodies, 10,000 stalled clients) are
// tests/alloxd/load/http_limits.sh.
// cpprestsdk's U() macro collides with GoogleTest's templates.
#define _TURN_OFF_PLATFORM_STRING
#include <arpa/inet.h>
#include <cpprest/http_client.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "alloxd/http/http_server.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A raw TCP client for requests that misbehave.
class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    // A small receive window: the kernel holds little of a reply the test does not read.
    const int window = 16 << 10;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &window, sizeof window);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  // Sends all of `data`; false when the server closed or reset the connection first.
  bool send(const std::string& data) {
    for (std::size_t sent = 0; sent < data.size();) {
      ssize_t n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<std::size_t>(n);
    }
    return true;
  }
  // Reads until the server closes the connection or `timeout` passes; what arrived.
  std::string read_until_closed(milliseconds timeout, bool* closed = nullptr) {
    std::string out;
    auto until = Clock::now() + timeout;
    if (closed != nullptr) *closed = false;
    while (Clock::now() < until) {
      pollfd p{fd_, POLLIN, 0};
      auto left = std::chrono::duration_cast<milliseconds>(until - Clock::now()).count();
      if (::poll(&p, 1, static_cast<int>(std::max<long long>(left, 1))) <= 0) continue;
      char chunk[4096];
      ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) {
        if (closed != nullptr) *closed = true;
        break;
      }
      out.append(chunk, static_cast<std::size_t>(n));
    }
    return out;
  }
  // Reads one reply's status line and headers (enough for the status code).
  std::string read_some(milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return "";
    char chunk[4096];
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    return n > 0 ? std::string(chunk, static_cast<std::size_t>(n)) : "";
  }

 private:
  int fd_ = -1;
};

int status_of(const std::string& reply) {
  if (reply.rfind("HTTP/1.1 ", 0) != 0 || reply.size() < 12) return 0;
  return std::stoi(reply.substr(9, 3));
}

// A server whose handler answers "ok" to everything, with the given options.
std::unique_ptr<HttpServer> start_server(HttpServerOptions options,
                                         std::atomic<int>* served = nullptr) {
  options.port = 0;
  HttpHandler handler;
  handler.serve = [served](const HttpRequest& request) {
    if (served != nullptr) ++*served;
    return HttpReply{
        200, "text/plain",
        "ok " + request.method + " " + request.path + " " + std::to_string(request.body.size())};
  };
  auto server = HttpServer::start(std::move(handler), options);
  EXPECT_TRUE(server.ok()) << server.message();
  if (!server) return nullptr;
  return std::move(*server);
}

// How many of the first `first` clients the server closed, each waited on for `wait`.
int closed_by_server(const std::vector<std::unique_ptr<RawClient>>& clients, std::size_t first,
                     milliseconds wait) {
  int closed_count = 0;
  for (std::size_t i = 0; i < std::min(first, clients.size()); ++i) {
    bool closed = false;
    clients[i]->read_until_closed(wait, &closed);
    closed_count += closed ? 1 : 0;
  }
  return closed_count;
}

const std::string kGetHealthz = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";

TEST(HttpLimitsTest, OversizedHeadersGet431BeforeTheyEnd) {
  HttpServerOptions options;
  options.max_header_bytes = 8192;
  std::atomic<int> served{0};
  auto server = start_server(options, &served);
  RawClient client(server->port());
  ASSERT_TRUE(client.connected());
  // 64 KiB of one header and no end of headers: the answer cannot wait for the end.
  client.send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(64 << 10, 'a'));
  bool closed = false;
  std::string reply = client.read_until_closed(milliseconds(5000), &closed);
  EXPECT_EQ(431, status_of(reply)) << reply.substr(0, 200);
  EXPECT_NE(std::string::npos, reply.find("8192 bytes")) << reply;
  EXPECT_TRUE(closed);
  EXPECT_EQ(0, served.load());
}

TEST(HttpLimitsTest, ContentLengthOverLimitGets413BeforeTheBodyIsSent) {
  HttpServerOptions options;
  options.max_body_bytes = 4096;
  auto server = start_server(options);
  RawClient client(server->port());
  client.send("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n");
  std::string reply = client.read_some(milliseconds(5000));
  EXPECT_EQ(413, status_of(reply)) << reply;
  EXPECT_NE(std::string::npos, reply.find("larger than 4096 bytes")) << reply;
}

TEST(HttpLimitsTest, ChunkedBodyOverLimitGets413WhileItArrives) {
  HttpServerOptions options;
  options.max_body_bytes = 4096;
  auto server = start_server(options);
  RawClient client(server->port());
  client.send("POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  // 8 KiB in 1 KiB chunks and no final chunk: the body never ends.
  for (int i = 0; i < 8; ++i) client.send("400\r\n" + std::string(1024, 'x') + "\r\n");
  std::string reply = client.read_some(milliseconds(5000));
  EXPECT_EQ(413, status_of(reply)) << reply;
  // A body within the limit, chunked, still reaches the handler.
  RawClient small(server->port());
  small.send(
      "POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n0\r\n\r\n");
  reply = small.read_some(milliseconds(5000));
  EXPECT_EQ(200, status_of(reply)) << reply;
  EXPECT_NE(std::string::npos, reply.find("ok POST /filter 5")) << reply;
}

TEST(HttpLimitsTest, StalledRequestGets408AndSilentClientIsClosed) {
  HttpServerOptions options;
  options.read_timeout = milliseconds(300);
  auto server = start_server(options);
  RawClient stalled(server->port());
  stalled.send("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789");
  RawClient silent(server->port());
  auto begin = Clock::now();
  bool closed = false;
  std::string reply = stalled.read_until_closed(milliseconds(5000), &closed);
  EXPECT_EQ(408, status_of(reply)) << reply;
  EXPECT_TRUE(closed);
  std::string nothing = silent.read_until_closed(milliseconds(5000), &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ("", nothing);
  EXPECT_LT(Clock::now() - begin, milliseconds(3000));
}

TEST(HttpLimitsTest, KeepAliveServesManyRequestsThenIdleTimeoutCloses) {
  HttpServerOptions options;
  options.idle_timeout = milliseconds(300);
  std::atomic<int> served{0};
  auto server = start_server(options, &served);
  RawClient client(server->port());
  // Three requests in one write (pipelined): the connection is never idle between them, so
  // however slowly this thread runs, the 300 ms idle timeout can only start after the third
  // reply. (Sent one by one, a test thread descheduled for 300 ms between a reply and its next
  // request saw the server close the connection, as it should.)
  ASSERT_TRUE(client.send(kGetHealthz + kGetHealthz + kGetHealthz));
  bool closed = false;
  const std::string replies = client.read_until_closed(milliseconds(5000), &closed);
  int ok = 0;
  for (auto at = replies.find("HTTP/1.1 200 "); at != std::string::npos;
       at = replies.find("HTTP/1.1 200 ", at + 1)) {
    ++ok;
  }
  EXPECT_EQ(3, ok) << replies;
  EXPECT_EQ(3, served.load());
  EXPECT_TRUE(closed) << "an idle kept-alive connection must be closed after idle_timeout";
}

// A connection keeps one deadline and one timer wait, moved rather than re-armed per request:
// after a reply the wait runs toward the long idle deadline, and a request that then stalls must
// still get its 408 at the (earlier) read deadline, not at the idle one.
TEST(HttpLimitsTest, AStalledRequestOnAKeptAliveConnectionGets408AtTheReadDeadline) {
  HttpServerOptions options;
  options.read_timeout = milliseconds(300);
  options.idle_timeout = milliseconds(20000);
  auto server = start_server(options);
  RawClient client(server->port());
  ASSERT_TRUE(client.send(kGetHealthz));
  std::string first = client.read_some(milliseconds(5000));
  ASSERT_EQ(200, status_of(first)) << first;
  auto begin = Clock::now();
  ASSERT_TRUE(client.send("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n01"));
  bool closed = false;
  std::string reply = client.read_until_closed(milliseconds(10000), &closed);
  EXPECT_EQ(408, status_of(reply)) << reply;
  EXPECT_TRUE(closed);
  EXPECT_LT(Clock::now() - begin, milliseconds(5000)) << "the idle deadline (20 s) was used";
}

TEST(HttpLimitsTest, ConnectionCapClosesStalledClientsNotHealthz) {
  HttpServerOptions options;
  options.max_connections = 16;
  auto server = start_server(options);
  std::vector<std::unique_ptr<RawClient>> stalled;
  for (int i = 0; i < 64; ++i) {
    stalled.push_back(std::make_unique<RawClient>(server->port()));
    stalled.back()->send("GET /healthz HTTP/1.1\r\n");  // and never the rest
  }
  for (int i = 0; i < 10; ++i) {
    RawClient probe(server->port());
    probe.send(kGetHealthz);
    EXPECT_EQ(200, status_of(probe.read_some(milliseconds(5000)))) << "probe " << i;
  }
  // The oldest stalled clients were closed to make room; the cap holds.
  EXPECT_GE(closed_by_server(stalled, stalled.size(), milliseconds(20)), 64 - 16);
}

// A server whose every reply is `size` bytes, counting what it served.
std::unique_ptr<HttpServer> start_big_reply_server(HttpServerOptions options, std::size_t size,
                                                   std::atomic<int>& served) {
  options.port = 0;
  HttpHandler handler;
  handler.serve = [&served, size](const HttpRequest&) {
    ++served;
    return HttpReply{200, "text/plain", std::string(size, 'x')};
  };
  auto server = HttpServer::start(std::move(handler), options);
  EXPECT_TRUE(server.ok()) << server.message();
  return server ? std::move(*server) : nullptr;
}

// A client with a small receive buffer (the kernel takes little of a reply for it) that sends
// five pipelined requests and reads nothing.
std::unique_ptr<RawClient> non_reading_client(int port) {
  auto client = std::make_unique<RawClient>(port);
  const std::string get = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  client->send(get + get + get + get + get);
  return client;
}

// Waits (poll, no read) until the server reset the connection: POLLHUP or POLLERR.
bool reset_within(int fd, milliseconds timeout) {
  pollfd p{fd, 0, 0};
  return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1 &&
         (p.revents & (POLLHUP | POLLERR)) != 0;
}

TEST(HttpLimitsTest, AClientThatReadsNoReplyIsResetOnceItHoldsMoreThanTheCap) {
  HttpServerOptions options;
  options.read_timeout = std::chrono::seconds(60);  // not what ends it
  options.max_unread_reply_bytes = 1 << 20;
  options.unread_reply_stall = milliseconds(200);
  std::atomic<int> served{0};
  auto server = start_big_reply_server(options, 32 << 20, served);
  ASSERT_NE(nullptr, server);
  auto client = non_reading_client(server->port());
  const auto begin = Clock::now();
  EXPECT_TRUE(reset_within(client->fd(), milliseconds(10000)));
  EXPECT_LT(Clock::now() - begin, std::chrono::seconds(5));
  EXPECT_EQ(1, served.load());  // the pipelined four were never composed
  // The server goes on serving others.
  RawClient probe(server->port());
  probe.send(kGetHealthz);
  EXPECT_EQ(200, status_of(probe.read_some(milliseconds(5000))));
}

TEST(HttpLimitsTest, AReplyUnderTheCapWaitsForASlowReader) {
  HttpServerOptions options;
  options.max_unread_reply_bytes = 8 << 20;
  options.unread_reply_stall = milliseconds(100);
  std::atomic<int> served{0};
  auto server = start_big_reply_server(options, 4 << 20, served);
  ASSERT_NE(nullptr, server);
  RawClient client(server->port());
  client.send(kGetHealthz);
  EXPECT_FALSE(reset_within(client.fd(), milliseconds(500)));  // several stalls long
  std::string reply = client.read_until_closed(milliseconds(3000));
  EXPECT_EQ(200, status_of(reply));
  EXPECT_GT(reply.size(), std::size_t{4} << 20);
}

TEST(HttpLimitsTest, TheConnectionCapEvictsAConnectionWhoseReplyIsNotRead) {
  HttpServerOptions options;
  options.max_connections = 4;
  options.read_timeout = std::chrono::seconds(60);
  options.unread_reply_stall = std::chrono::seconds(60);  // only the cap can end them
  std::atomic<int> served{0};
  auto server = start_big_reply_server(options, 32 << 20, served);
  ASSERT_NE(nullptr, server);
  std::vector<std::unique_ptr<RawClient>> stuck;
  for (int i = 0; i < 4; ++i) {
    stuck.push_back(non_reading_client(server->port()));
    // Its reply has started (bytes arrived): the connection is writing, not in its handler.
    pollfd p{stuck.back()->fd(), POLLIN, 0};
    ASSERT_EQ(1, ::poll(&p, 1, 10000)) << i;
  }
  RawClient probe(server->port());
  probe.send(kGetHealthz);
  EXPECT_EQ(200, status_of(probe.read_some(milliseconds(5000))));
  EXPECT_TRUE(reset_within(stuck[0]->fd(), milliseconds(5000)));  // the oldest
}

// A server-wide hook may lower one request's body limit from its method and path (alloxd's
// real-time /filter): 413 at the header for a Content-Length over it, while a chunked body
// reaches it; other paths keep max_body_bytes.
TEST(HttpLimitsTest, ARequestsOwnBodyLimitIsEnforcedWhileItIsRead) {
  HttpServerOptions options;
  options.port = 0;
  HttpHandler handler;
  handler.serve = [](const HttpRequest& request) {
    return HttpReply{200, "text/plain", std::to_string(request.body.size())};
  };
  handler.body_limit = [](const HttpRequest& head) {
    return head.path == "/filter" ? std::size_t{1000} : static_cast<std::size_t>(-1);
  };
  auto started = HttpServer::start(std::move(handler), options);
  ASSERT_TRUE(started) << started.message();
  const int port = (*started)->port();
  {
    RawClient client(port);
    client.send("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n");
    std::string reply = client.read_some(milliseconds(5000));
    EXPECT_EQ(413, status_of(reply)) << reply;
  }
  {
    RawClient client(port);
    client.send("POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < 3; ++i) client.send("258\r\n" + std::string(600, 'a') + "\r\n");
    std::string reply = client.read_some(milliseconds(5000));
    EXPECT_EQ(413, status_of(reply)) << reply;
    EXPECT_NE(std::string::npos, reply.find("larger than 1000 bytes")) << reply;
  }
  {
    RawClient client(port);
    client.send("POST /bind HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" +
                std::string(5000, 'b'));
    EXPECT_EQ(200, status_of(client.read_some(milliseconds(5000))));
  }
}

TEST(HttpLimitsTest, StopDrainsRepliesInFlightAndRefusesNewConnections) {
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, release = false;
  HttpHandler handler;
  handler.serve = [&](const HttpRequest&) {
    std::unique_lock lock(mu);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
    return HttpReply{200, "text/plain", "late"};
  };
  handler.may_block = [](const HttpRequest&) { return true; };
  HttpServerOptions options;
  options.port = 0;
  auto started = HttpServer::start(std::move(handler), options);
  ASSERT_TRUE(started) << started.message();
  HttpServer& server = **started;
  RawClient client(server.port());
  client.send("POST /bind HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return entered; }));
  }
  EXPECT_FALSE(server.stop(milliseconds(100))) << "a reply is still in flight";
  EXPECT_FALSE(RawClient(server.port()).connected()) << "stop() closes the listening socket";
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  EXPECT_TRUE(server.stop(milliseconds(5000)));
  std::string reply = client.read_until_closed(milliseconds(5000));
  EXPECT_EQ(200, status_of(reply)) << reply;
  EXPECT_NE(std::string::npos, reply.find("Connection: close")) << reply;
}

// A request pipelined behind a reply that is still being written when the drain begins is not
// answered: the connection closes after that reply, and stop() sees no reply left in flight
// then or later, so the server's destruction does not wait on one.
TEST(HttpLimitsTest, ARequestBehindAReplyBeingWrittenWhenTheDrainBeginsIsNotAnswered) {
  std::atomic<int> small_served{0};
  HttpHandler handler;
  handler.serve = [&](const HttpRequest& request) {
    if (request.path == "/big") return HttpReply{200, "text/plain", std::string(16 << 20, 'x')};
    ++small_served;
    return HttpReply{200, "text/plain", "small"};
  };
  HttpServerOptions options;
  options.port = 0;
  options.max_unread_reply_bytes = 64 << 20;  // the unread reply is the point, not a stall
  options.unread_reply_stall = milliseconds(60'000);
  auto started = HttpServer::start(std::move(handler), options);
  ASSERT_TRUE(started) << started.message();
  HttpServer& server = **started;
  RawClient client(server.port());
  ASSERT_TRUE(
      client.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n"
                  "GET /small HTTP/1.1\r\nHost: x\r\n\r\n"));
  // The first bytes of /big's reply: it is being written, kept alive, and cannot all fit in the
  // sockets' buffers while the client does not read.
  pollfd readable{client.fd(), POLLIN, 0};
  ASSERT_EQ(1, ::poll(&readable, 1, 5000));
  server.stop_accepting();
  bool closed = false;
  const std::string replies = client.read_until_closed(milliseconds(10'000), &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(200, status_of(replies)) << replies.substr(0, 200);
  EXPECT_EQ(std::string::npos, replies.find("small")) << "answered after the drain began";
  EXPECT_EQ(0, small_served.load());
  const auto begin = Clock::now();
  EXPECT_TRUE(server.stop(milliseconds(5000)));
  started->reset();
  EXPECT_LT(Clock::now() - begin, std::chrono::seconds(1));
}

TEST(HttpLimitsTest, TlsModeServesHttpsOnly) {
  testing::ScratchDir dir;
  testing::write_self_signed(dir.file("tls.crt"), dir.file("tls.key"));
  HttpServerOptions options;
  options.tls_cert_file = dir.file("tls.crt");
  options.tls_key_file = dir.file("tls.key");
  auto server = start_server(options);
  ASSERT_NE(nullptr, server);
  EXPECT_EQ(0u, server->url().rfind("https://", 0)) << server->url();

  web::http::client::http_client_config config;
  config.set_validate_certificates(false);
  config.set_timeout(std::chrono::seconds(5));
  web::http::client::http_client client(server->url(), config);
  auto response = client.request(web::http::methods::POST, "/mutate", "{}").get();
  EXPECT_EQ(200, response.status_code());
  EXPECT_EQ("ok POST /mutate 2", response.extract_utf8string(true).get());
  // Plain HTTP on the TLS port gets no HTTP answer.
  RawClient plain(server->port());
  plain.send(kGetHealthz);
  EXPECT_NE(200, status_of(plain.read_until_closed(milliseconds(2000))));

  options.tls_key_file = dir.file("missing.key");
  options.port = 0;
  HttpHandler handler;
  handler.serve = [](const HttpRequest&) { return HttpReply{}; };
  auto bad = HttpServer::start(std::move(handler), options);
  ASSERT_FALSE(bad);
  EXPECT_NE(std::string::npos, bad.message().find("missing.key")) << bad.message();
}

// A TLS client driven by hand over a RawClient, one flight at a time: its ClientHello, the rest
// of its handshake once the server's flight is in, then one request over the connection.
class HandDrivenTls {
 public:
  HandDrivenTls() : context_(SSL_CTX_new(TLS_client_method())), ssl_(SSL_new(context_)) {
    in_ = BIO_new(BIO_s_mem());
    out_ = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl_, in_, out_);  // the SSL owns both
    SSL_set_verify(ssl_, SSL_VERIFY_NONE, nullptr);
    SSL_set_connect_state(ssl_);
  }
  ~HandDrivenTls() {
    SSL_free(ssl_);
    SSL_CTX_free(context_);
  }
  HandDrivenTls(const HandDrivenTls&) = delete;
  HandDrivenTls& operator=(const HandDrivenTls&) = delete;

  // Takes what the server sent and returns what the client sends next (its ClientHello first).
  std::string step(const std::string& received) {
    if (!received.empty()) BIO_write(in_, received.data(), static_cast<int>(received.size()));
    if (!SSL_is_init_finished(ssl_)) SSL_do_handshake(ssl_);
    return pending();
  }
  // Runs the handshake to its end over `client`; false if the server closed or reset it.
  bool finish(RawClient& client) {
    const auto until = Clock::now() + milliseconds(5000);
    while (!SSL_is_init_finished(ssl_) && Clock::now() < until) {
      const std::string got = client.read_some(milliseconds(500));
      if (got.empty()) continue;
      if (!client.send(step(got))) return false;
    }
    return SSL_is_init_finished(ssl_);
  }
  // One request over the finished handshake; the reply's first bytes.
  std::string ask(RawClient& client, const std::string& request) {
    SSL_write(ssl_, request.data(), static_cast<int>(request.size()));
    if (!client.send(pending())) return "";
    const auto until = Clock::now() + milliseconds(5000);
    while (Clock::now() < until) {
      const std::string got = client.read_some(milliseconds(500));
      if (got.empty()) continue;
      BIO_write(in_, got.data(), static_cast<int>(got.size()));
      char plain[4096];
      const int n = SSL_read(ssl_, plain, sizeof plain);
      if (n > 0) return std::string(plain, static_cast<std::size_t>(n));
      (void)client.send(pending());  // a post-handshake message may want an answer
    }
    return "";
  }

 private:
  std::string pending() {
    std::string out;
    char chunk[4096];
    for (int n; (n = BIO_read(out_, chunk, sizeof chunk)) > 0;) {
      out.append(chunk, static_cast<std::size_t>(n));
    }
    return out;
  }
  SSL_CTX* context_;
  SSL* ssl_;
  BIO* in_ = nullptr;
  BIO* out_ = nullptr;
};

struct TlsFiles {
  testing::ScratchDir dir;
  HttpServerOptions options;
  TlsFiles() {
    testing::write_self_signed(dir.file("tls.crt"), dir.file("tls.key"));
    options.tls_cert_file = dir.file("tls.crt");
    options.tls_key_file = dir.file("tls.key");
    options.read_timeout = std::chrono::seconds(60);  // not what ends them
  }
};

int healthz_over_https(const HttpServer& server) {
  web::http::client::http_client_config config;
  config.set_validate_certificates(false);
  config.set_timeout(std::chrono::seconds(5));
  web::http::client::http_client client(server.url(), config);
  return client.request(web::http::methods::GET, "/healthz").get().status_code();
}

// `count` clients that send the start of a ClientHello, and nothing more.
std::vector<std::unique_ptr<RawClient>> stalled_in_client_hello(int port, int count) {
  std::vector<std::unique_ptr<RawClient>> stalled;
  for (int i = 0; i < count; ++i) {
    stalled.push_back(std::make_unique<RawClient>(port));
    stalled.back()->send("\x16\x03\x01");
  }
  return stalled;
}

// The server closes `client` within 5 s (handshake_timeout in these tests is 1.5 s).
void expect_closed_at_the_handshake_timeout(RawClient& client) {
  const auto begin = Clock::now();
  bool closed = false;
  client.read_until_closed(milliseconds(10000), &closed);
  EXPECT_TRUE(closed);
  EXPECT_LT(Clock::now() - begin, std::chrono::seconds(5));
}

// Clients that open TLS connections and stall inside their ClientHello hold no handshake slot: a
// real client's handshake in progress is not pushed out by them, however many come, and they go
// at handshake_timeout.
TEST(HttpLimitsTest, ClientsStalledInsideTheirClientHelloPushNoHandshakeOut) {
  TlsFiles tls;
  tls.options.max_handshakes = 2;
  tls.options.handshake_timeout = milliseconds(1500);
  auto server = start_server(tls.options);
  ASSERT_NE(nullptr, server);
  RawClient real(server->port());
  HandDrivenTls handshake;
  ASSERT_TRUE(real.send(handshake.step("")));  // its whole ClientHello
  const std::string server_flight = real.read_some(milliseconds(5000));
  ASSERT_FALSE(server_flight.empty()) << "the server answers a whole ClientHello at once";
  const auto stalled = stalled_in_client_hello(server->port(), 16);
  EXPECT_EQ(200, healthz_over_https(*server)) << "a second real client takes the other slot";
  ASSERT_TRUE(real.send(handshake.step(server_flight)));
  ASSERT_TRUE(handshake.finish(real)) << "the first real client's handshake was pushed out";
  const std::string reply = handshake.ask(real, kGetHealthz);
  EXPECT_EQ(200, status_of(reply)) << reply;
  expect_closed_at_the_handshake_timeout(*stalled.back());
}

// Clients that send a whole ClientHello and never finish the handshake: at max_handshakes in
// progress the oldest are reset, so a real client still gets through at once, and each is closed
// at handshake_timeout in any case.
TEST(HttpLimitsTest, StalledTlsHandshakesAreBoundedInNumberAndTime) {
  TlsFiles tls;
  tls.options.max_handshakes = 8;
  tls.options.handshake_timeout = milliseconds(1500);
  auto server = start_server(tls.options);
  ASSERT_NE(nullptr, server);
  std::vector<std::unique_ptr<RawClient>> stalled;
  for (int i = 0; i < 32; ++i) {
    stalled.push_back(std::make_unique<RawClient>(server->port()));
    HandDrivenTls handshake;
    stalled.back()->send(handshake.step(""));  // a whole ClientHello, and nothing more
  }
  EXPECT_EQ(200, healthz_over_https(*server));
  // The oldest were closed to make room, without waiting for any timeout.
  EXPECT_GE(closed_by_server(stalled, 16, milliseconds(200)), 16);
  // The newest ones go at handshake_timeout.
  expect_closed_at_the_handshake_timeout(*stalled.back());
}

// At the connection cap the clients stalled inside their ClientHello are closed first: a real
// client in the middle of its handshake, older than all of them, keeps its connection.
TEST(HttpLimitsTest, AtTheConnectionCapClientsStalledInTheirClientHelloAreClosedFirst) {
  TlsFiles tls;
  tls.options.max_connections = 16;
  tls.options.handshake_timeout = milliseconds(60'000);  // not what ends them
  auto server = start_server(tls.options);
  ASSERT_NE(nullptr, server);
  RawClient real(server->port());
  HandDrivenTls handshake;
  ASSERT_TRUE(real.send(handshake.step("")));
  const std::string server_flight = real.read_some(milliseconds(5000));
  ASSERT_FALSE(server_flight.empty());
  const auto stalled = stalled_in_client_hello(server->port(), 40);
  EXPECT_EQ(200, healthz_over_https(*server));
  ASSERT_TRUE(real.send(handshake.step(server_flight)));
  ASSERT_TRUE(handshake.finish(real)) << "the real client's connection was closed";
  const std::string reply = handshake.ask(real, kGetHealthz);
  EXPECT_EQ(200, status_of(reply)) << reply;
  // The cap holds.
  EXPECT_GE(closed_by_server(stalled, stalled.size(), milliseconds(20)), 40 - 16);
}

}  // namespace
}  // namespace allox::extender
