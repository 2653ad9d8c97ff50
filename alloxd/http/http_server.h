// The HTTP(S) front of alloxd: a Boost.Beast server feeding a request -> reply function
// (routes.h for the extender, or any HttpHandler, e.g. an admission webhook).
//
// Every limit is enforced while the request is read, so no client can make the server hold
// more than max_header_bytes + max_body_bytes for it:
//   - request line and headers over max_header_bytes: 431, connection closed;
//   - a body over max_body_bytes, announced by Content-Length or reached while reading chunks:
//     413 as soon as it is known, connection closed (the rest is discarded unread, for at most
//     a second, so the client sees the answer instead of a reset);
//   - a request not complete read_timeout after its first byte (or after the connection
//     opened): 408, connection closed; a kept-alive connection idle for idle_timeout between
//     requests is closed silently;
//   - a reply is sent within read_timeout; while more than max_unread_reply_bytes of it is
//     still to be sent, the client must take some every unread_reply_stall: a client that
//     sends requests and reads no answer is reset and its reply freed;
//   - at max_connections open connections, accepting a new one closes the oldest connection
//     still waiting for its TLS ClientHello, else the oldest that is not being answered (idle or
//     still sending), else the oldest whose reply waits for a client that does not read it, so
//     a flood of stalled clients can never lock out kube-scheduler or a /healthz probe;
//   - TLS: a handshake not done within handshake_timeout is closed. A handshake is in progress
//     once the client's first record (its ClientHello) has arrived whole (tls_hello.h); at
//     max_handshakes in progress a new one resets the oldest. Clients stalled inside their
//     ClientHello take no handshake slot, so they cannot push a real client's handshake out;
//     at max_handshakes of them waiting, a new connection resets the oldest waiting.
// Connections are kept alive (HTTP/1.1). Each of the `threads` I/O threads runs its own event
// loop and owns the connections handed to it in turn as they are accepted; a connection's
// requests are answered one after another on its thread. Handlers run there, except requests
// for which HttpHandler::may_block says yes (binds wait on the API server), which run on a
// blocking pool so they never hold an I/O thread: one the process's listeners share
// (HttpServerOptions::blocking), or the server's own, started only when its handler may block.
//
// With tls_cert_file and tls_key_file set the listener speaks HTTPS only (TLS 1.2+).
//
// Thread-safe. stop() drains: it stops accepting, closes connections that are not being
// answered, and waits for the replies in flight.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "alloxd/http/http_message.h"
#include "core/result.h"

namespace allox::extender {

class BlockingPool;
class ExtenderService;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8888;  // 0: pick a free port (see HttpServer::port())
  std::size_t max_body_bytes = 1 << 20;
  std::chrono::milliseconds read_timeout{10'000};
  std::chrono::milliseconds idle_timeout{60'000};
  std::size_t max_header_bytes = 16 << 10;
  // Clamped to the process's descriptor limit (RLIMIT_NOFILE) minus a reserve.
  std::size_t max_connections = 4096;
  // What one connection may leave unread of its reply beyond a moment (see above).
  std::size_t max_unread_reply_bytes = 1 << 20;
  std::chrono::milliseconds unread_reply_stall{1000};
  std::size_t max_handshakes = 256;
  std::chrono::milliseconds handshake_timeout{5000};
  int threads = 2;  // I/O threads, each with its own connections (see above)
  // The I/O threads run interactively (SCHED_NORMAL, thread_priority.h), whatever class the
  // thread that started the server has, so a request that arrives preempts background work.
  // With `request_class` they enter the process's request class instead (thread_priority.h
  // RequestClass: real-time where request_threads.h chose it). Only for the listener kube-scheduler
  // calls: a listener tenants can reach (reports, the webhook) stays normal, so no flood of
  // requests runs real-time against the node's other work.
  bool request_class = false;
  // A reports listener for a Kubernetes Service: GET only; any other method gets 405, so the
  // extender verbs and admin endpoints stay on the loopback listener.
  bool read_only = false;
  // PEM files, read once at start. Both empty: plain HTTP.
  std::string tls_cert_file{};
  std::string tls_key_file{};
  // The threads that run handlers that may block, shared by the process's listeners
  // (start_blocking_pool()). Null: the server starts its own, if its handler may block.
  std::shared_ptr<BlockingPool> blocking{};
};

// Threads for handlers that may block. Binds wait on an fsync and the API server, not on the
// CPU, and concurrent binds share one fsync (store.h): enough threads for kube-scheduler's binds
// in flight to group. Each names itself allox-blocking (top -H, the bench's CPU by thread) and
// enters the background class before the pool is up.
inline constexpr std::size_t kBlockingThreads = 16;
std::shared_ptr<BlockingPool> start_blocking_pool(std::size_t threads = kBlockingThreads);

struct HttpHandler {
  // The reply to one complete request. May throw: the client then gets 500.
  std::function<HttpReply(const HttpRequest&)> serve;
  // True for requests that may wait long (network calls); they run off the I/O threads.
  std::function<bool(const HttpRequest&)> may_block;
  // A request's own body limit, from its method and path (body and authorization empty),
  // when lower than max_body_bytes: 413 at the header or as the body reaches it. Optional.
  std::function<std::size_t(const HttpRequest& head)> body_limit;
  // Called once per reply sent, including the server's own 4xx (method and path may then be
  // empty), with the time from the request's last byte read to its reply composed.
  std::function<void(const HttpRequest&, int status, double seconds)> observe;
};

class HttpServer {
 public:
  // Starts listening and serving `handler`.
  static Expected<std::unique_ptr<HttpServer>> start(HttpHandler handler,
                                                     const HttpServerOptions& options);
  // alloxd's routes (routes.h) over `service`, counted in its metrics. The service must
  // outlive the server.
  static Expected<std::unique_ptr<HttpServer>> start(ExtenderService& service,
                                                     const HttpServerOptions& options);
  ~HttpServer();  // stop(), then waits for every handler still running
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  std::string url() const;  // http://host:port or https://host:port

  // Stops accepting and closes every connection that is not being answered, at once; replies
  // in flight are still sent (with Connection: close, or their connection closes after them),
  // and no request read after this is answered. Idempotent; returns immediately.
  void stop_accepting();
  // stop_accepting(), then waits up to `deadline` for the replies in flight. True when none is
  // left: the server is then closed (no reply starts after that moment) and its threads are
  // joined. False when a handler is still running at the deadline (the destructor will wait for
  // it; a process that is exiting may rather _exit).
  bool stop(std::chrono::milliseconds deadline = std::chrono::seconds(30));

 private:
  struct Impl;
  HttpServer() = default;
  std::unique_ptr<Impl> impl_;
  std::string host_;
  int port_ = 0;
  bool tls_ = false;
};

// A TCP port on `host` that was free a moment ago (bind to port 0, read it, close).
Expected<int> pick_free_port(const std::string& host);

}  // namespace allox::extender
