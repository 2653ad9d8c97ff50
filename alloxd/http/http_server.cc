#include "alloxd/http/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "alloxd/http/blocking_pool.h"
#include "alloxd/http/countdown.h"
#include "alloxd/http/listener_state.h"
#include "alloxd/http/routes.h"
#include "alloxd/service.h"
#include "core/thread_priority.h"

namespace allox::extender {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

// Descriptors kept free for the store, the API client and logs when capping connections.
constexpr std::size_t kReservedDescriptors = 64;

std::size_t descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return static_cast<std::size_t>(-1);
  }
  return static_cast<std::size_t>(limit.rlim_cur);
}

// The server's side of TLS from the certificate and key files; TLS 1.2 and later.
Status configure_tls(asio::ssl::context& tls, const HttpServerOptions& options) {
  error_code ec;
  tls.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                      asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                      asio::ssl::context::no_tlsv1_1,
                  ec);
  tls.use_certificate_chain_file(options.tls_cert_file, ec);
  if (ec) return Error{"TLS certificate " + options.tls_cert_file + ": " + ec.message()};
  tls.use_private_key_file(options.tls_key_file, asio::ssl::context::pem, ec);
  if (ec) return Error{"TLS key " + options.tls_key_file + ": " + ec.message()};
  // An idle TLS connection gives its record buffers back (about 34 KB each) until it reads
  // or writes again: thousands of kept-alive or stalled connections hold only their state.
  SSL_CTX_set_mode(tls.native_handle(), SSL_MODE_RELEASE_BUFFERS);
  return OkStatus();
}

// Opens `acceptor` on the options' host and port and listens.
Status listen_on(tcp::acceptor& acceptor, const HttpServerOptions& options) {
  error_code ec;
  auto address = asio::ip::make_address(options.host, ec);
  if (ec) return Error{"cannot listen on '" + options.host + "': not an IP address"};
  tcp::endpoint endpoint(address, static_cast<unsigned short>(options.port));
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Error{"cannot listen on " + options.host + ":" + std::to_string(options.port) + ": " +
                 ec.message()};
  }
  return OkStatus();
}

}  // namespace

struct HttpServer::Impl {
  std::shared_ptr<ListenerState> shared = std::make_shared<ListenerState>();
  std::optional<asio::ssl::context> tls;
  // The pool for handlers that may block (HttpServerOptions::blocking, or the server's own).
  // Declared before the contexts: a pool of its own is joined after them.
  std::shared_ptr<BlockingPool> blocking;
  // One io_context per I/O thread, each run by that thread alone (concurrency hint 1: its
  // completions queue without locks or wake-ups), each owning the connections handed to it.
  // A single io_context run by every thread had them take turns on its locks, hand handlers to
  // each other and wake each other on every request. Declared after everything their handlers
  // use: destroyed first, with any sessions they hold.
  std::vector<std::unique_ptr<asio::io_context>> contexts;
  // Keep each run() going while a blocking handler has yet to post its reply back.
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> work;
  // The acceptor and its retry timer live on the first context (declared after it: destroyed
  // first).
  std::optional<tcp::acceptor> acceptor;
  std::optional<asio::steady_timer> accept_retry;
  std::size_t next_context = 0;  // round robin of accepted connections; the acceptor's thread
  std::vector<std::thread> threads;
  bool stopping = false;
  bool joined = false;

  void accept() {
    acceptor->async_accept([this](error_code ec, tcp::socket socket) {
      if (!acceptor->is_open() || ec == asio::error::operation_aborted) return;
      if (ec) {
        // Out of descriptors (or a transient error): free one and try again shortly, never
        // spin.
        shared->make_room();
        accept_retry->expires_after(std::chrono::milliseconds(20));
        accept_retry->async_wait([this](error_code wait) {
          if (!wait) accept();
        });
        return;
      }
      if (shared->is_draining()) {
        error_code ignored;
        socket.close(ignored);
        return;
      }
      shared->make_room();
      hand_over(std::move(socket));
      accept();
    });
  }

  // Moves an accepted socket to the next context, where its session starts.
  void hand_over(tcp::socket accepted) {
    error_code ec;
    accepted.set_option(tcp::no_delay(true), ec);
    const auto protocol = accepted.local_endpoint(ec).protocol();
    if (ec) return;  // already reset by the client
    const std::size_t index = next_context++ % contexts.size();
    asio::io_context& io = *contexts[index];
    tcp::socket socket(io);
    const int fd = accepted.release(ec);
    if (!ec) socket.assign(protocol, fd, ec);
    if (ec) return;
    asio::post(io, [this, socket = std::move(socket)]() mutable {
      if (tls) {
        start_session(asio::ssl::stream<tcp::socket>(std::move(socket), *tls), shared);
      } else {
        start_session(std::move(socket), shared);
      }
    });
  }

  void join() {
    if (joined) return;
    joined = true;
    for (auto& io : contexts) io->stop();
    for (std::thread& t : threads) t.join();
    // Every handler of this server's that the pool still runs, then nothing of ours is left
    // there (the pool may serve other listeners and outlive this one).
    std::unique_lock lock(shared->mu);
    shared->pool_idle.wait(lock, [this] { return shared->pool_work.load() == 0; });
  }
};

std::shared_ptr<BlockingPool> start_blocking_pool(std::size_t threads) {
  return std::make_shared<BlockingPool>(threads,
                                        [] { become_background_thread("allox-blocking"); });
}

Expected<int> pick_free_port(const std::string& host) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return Error{"cannot create a socket"};
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = 0;
  if (::inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) {
    ::close(fd);
    return Error{"'" + host + "' is not an IPv4 address"};
  }
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    return Error{"cannot bind a port on " + host};
  }
  int port = ntohs(address.sin_port);
  ::close(fd);
  return port;
}

Expected<std::unique_ptr<HttpServer>> HttpServer::start(HttpHandler handler,
                                                        const HttpServerOptions& options) {
  if (!handler.serve) return Error{"HttpServer::start: no handler"};
  if (options.threads < 1) return Error{"HttpServer::start: threads must be >= 1"};
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return Error{"TLS needs both a certificate file and a key file"};
  }
  std::unique_ptr<HttpServer> server(new HttpServer());
  server->impl_ = std::make_unique<Impl>();
  Impl& impl = *server->impl_;
  // Before anything can fail: the destructor stops the acceptor on the first context.
  for (int i = 0; i < options.threads; ++i) {
    impl.contexts.push_back(std::make_unique<asio::io_context>(1));
    impl.work.push_back(asio::make_work_guard(*impl.contexts.back()));
  }
  impl.acceptor.emplace(*impl.contexts.front());
  impl.accept_retry.emplace(*impl.contexts.front());
  ListenerState& shared = *impl.shared;
  shared.options = options;
  shared.handler = std::move(handler);
  impl.blocking = options.blocking;
  if (!impl.blocking && shared.handler.may_block) impl.blocking = start_blocking_pool();
  shared.blocking = impl.blocking.get();
  // The server owns the pool; the state its connections share does not (the last connection
  // may end on a pool thread, which must not be the one to join the pool).
  shared.options.blocking.reset();
  std::size_t descriptors = descriptor_limit();
  shared.max_connections = std::max<std::size_t>(
      1, std::min(options.max_connections, descriptors > 2 * kReservedDescriptors
                                               ? descriptors - kReservedDescriptors
                                               : descriptors / 2));
  server->host_ = options.host;
  if (!options.tls_cert_file.empty()) {
    impl.tls.emplace(asio::ssl::context::tls_server);
    if (auto s = configure_tls(*impl.tls, options); !s) return s.error();
    server->tls_ = true;
  }
  if (auto s = listen_on(*impl.acceptor, options); !s) return s.error();
  server->port_ = impl.acceptor->local_endpoint().port();
  // start() returns once every I/O thread has its scheduling class and its name, so whoever
  // looks at the process after start (a health probe, ps, a test) sees the server as it serves.
  auto ready = std::make_shared<Countdown>(impl.contexts.size());
  for (auto& io : impl.contexts) {
    impl.threads.emplace_back([&io = *io, ready, request_class = options.request_class] {
      // Whether the kernel grants the class is the caller's to report (alloxd_main probes
      // it): this thread serves either way.
      (void)(request_class ? enter_request_class()
                           : run_this_thread_interactively(std::chrono::microseconds(0)));
      name_this_thread("allox-http");
      ready->arrive();
      io.run();
    });
  }
  ready->wait();
  // The listen queue holds early connections; they are accepted now, on the acceptor's own
  // thread, by threads that are ready.
  asio::post(impl.acceptor->get_executor(), [&impl] { impl.accept(); });
  return server;
}

Expected<std::unique_ptr<HttpServer>> HttpServer::start(ExtenderService& service,
                                                        const HttpServerOptions& options) {
  HttpHandler handler;
  handler.serve = [&service](const HttpRequest& request) { return route(service, request); };
  handler.may_block = [](const HttpRequest& request) { return may_block(request); };
  // Only real-time request threads have a tighter limit (routes.h): no cost per request else.
  if (options.request_class && request_class() == RequestClass::kRealtime) {
    handler.body_limit = [&service](const HttpRequest& head) { return body_limit(service, head); };
  }
  handler.observe = [&service](const HttpRequest& request, int status, double seconds) {
    service.metrics().record_request(verb_of(request.path), status, seconds);
  };
  return start(std::move(handler), options);
}

HttpServer::~HttpServer() {
  if (!impl_) return;
  stop();
  impl_->join();
}

std::string HttpServer::url() const {
  return std::string(tls_ ? "https://" : "http://") + host_ + ":" + std::to_string(port_);
}

void HttpServer::stop_accepting() {
  if (!impl_ || impl_->stopping) return;
  impl_->stopping = true;
  Impl& impl = *impl_;
  asio::post(*impl.contexts.front(), [&impl] {
    error_code ignored;
    impl.acceptor->close(ignored);
    impl.accept_retry->cancel();
  });
  std::vector<std::shared_ptr<ListenerState::Connection>> open;
  {
    std::lock_guard lock(impl.shared->mu);
    impl.shared->draining = true;
    for (auto& weak : impl.shared->open) {
      if (auto c = weak.lock()) open.push_back(std::move(c));
    }
  }
  for (auto& c : open) c->close_unless_busy();
}

bool HttpServer::stop(std::chrono::milliseconds deadline) {
  if (!impl_) return true;
  stop_accepting();
  ListenerState& shared = *impl_->shared;
  bool drained = false;
  {
    std::unique_lock lock(shared.mu);
    drained = shared.drained.wait_for(lock, deadline, [&] {
      if (shared.in_flight != 0) return false;
      shared.closed = true;  // no reply starts after this (ListenerState::begin_reply)
      return shared.in_flight == 0;
    });
  }
  if (drained) impl_->join();
  return drained;
}

}  // namespace allox::extender
