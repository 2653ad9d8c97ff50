// The HTTP front of alloxd: cpprestsdk's http_listener feeding routes.h.
//
// Requests whose Content-Length exceeds max_body_bytes get 413 without being parsed (a chunked
// body is measured after reading). cpprestsdk's listener writes a reply only once the request
// body has arrived, so the 413 reaches the client after it has sent its body. Clients that stall
// mid-request are dropped by the listener after `timeout`; while stalled they hold no thread, no
// lock and no scheduler state. Every reply is counted in the service's metrics with its latency.
//
// Thread-safe; requests are served on cpprestsdk's thread pool.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/result.h"
#include "extender/service.h"

namespace allox::extender {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8888;  // 0: pick a free port (see HttpServer::port())
  std::size_t max_body_bytes = 1 << 20;
  std::chrono::seconds timeout{10};
  // A reports listener for a Kubernetes Service: GET only; any other method gets 405, so the
  // extender verbs and admin endpoints stay on the loopback listener.
  bool read_only = false;
};

class HttpServer {
 public:
  // Starts listening; the service must outlive the server.
  static Expected<std::unique_ptr<HttpServer>> start(ExtenderService& service,
                                                     const HttpServerOptions& options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  std::string url() const;
  // Stops accepting and waits for requests in flight. Idempotent.
  void stop();

 private:
  struct Listener;
  HttpServer() = default;
  std::unique_ptr<Listener> listener_;
  std::string host_;
  int port_ = 0;
};

// A TCP port on `host` that was free a moment ago (bind to port 0, read it, close).
Expected<int> pick_free_port(const std::string& host);

}  // namespace allox::extender
