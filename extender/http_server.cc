#include "extender/http_server.h"

#include <arpa/inet.h>
#include <cpprest/http_listener.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "extender/routes.h"

namespace allox::extender {

namespace http = web::http;
using http::experimental::listener::http_listener;
using http::experimental::listener::http_listener_config;

struct HttpServer::Listener {
  Listener(const std::string& url, const http_listener_config& config) : listener(url, config) {}
  http_listener listener;
  bool open = false;
};

namespace {

void serve(ExtenderService& service, std::size_t max_body_bytes, bool read_only,
           http::http_request request) {
  auto begin = std::chrono::steady_clock::now();
  HttpRequest parsed;
  parsed.method = request.method();
  parsed.path = web::uri::decode(request.relative_uri().path());
  if (parsed.path.empty()) parsed.path = "/";
  Verb verb = verb_of(parsed.path);
  auto finish = [&service, begin, verb](http::http_request& request, const HttpReply& reply) {
    request.reply(static_cast<http::status_code>(reply.status), reply.body, reply.content_type)
        .then([](pplx::task<void> sent) {
          try {
            sent.get();
          } catch (const std::exception&) {  // the client went away; nothing to tell it
          }
        });
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    service.metrics().record_request(verb, reply.status, seconds);
  };
  auto too_large = [max_body_bytes] {
    return HttpReply{413, "application/json",
                     nlohmann::json{{"error", "request body larger than " +
                                                  std::to_string(max_body_bytes) + " bytes"}}
                         .dump()};
  };
  if (read_only && parsed.method != http::methods::GET) {
    finish(request, {405, "application/json",
                     nlohmann::json{{"error", "this listener serves reports only (GET); " +
                                                  parsed.method + " is not allowed"}}
                         .dump()});
    return;
  }
  if (request.headers().content_length() > max_body_bytes) {
    finish(request, too_large());
    return;
  }
  if (auto it = request.headers().find("Authorization"); it != request.headers().end()) {
    parsed.authorization = it->second;
  }
  request.extract_utf8string(true).then([&service, request, parsed = std::move(parsed), finish,
                                         too_large,
                                         max_body_bytes](pplx::task<std::string> body) mutable {
    try {
      parsed.body = body.get();
    } catch (const std::exception& e) {
      finish(request,
             {400, "application/json",
              nlohmann::json{{"error", std::string("cannot read the body: ") + e.what()}}.dump()});
      return;
    }
    if (parsed.body.size() > max_body_bytes) {
      finish(request, too_large());
      return;
    }
    HttpReply reply;
    try {
      reply = route(service, parsed);
    } catch (const std::exception& e) {
      reply = {500, "application/json",
               nlohmann::json{{"error", std::string("internal error: ") + e.what()}}.dump(
                   -1, ' ', false, nlohmann::json::error_handler_t::replace)};
    }
    finish(request, reply);
  });
}

}  // namespace

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

Expected<std::unique_ptr<HttpServer>> HttpServer::start(ExtenderService& service,
                                                        const HttpServerOptions& options) {
  // With port 0 the free port is picked before listening; another process may take it in
  // between, so try a few.
  const int attempts = options.port == 0 ? 5 : 1;
  Error last{"no attempt"};
  for (int attempt = 0; attempt < attempts; ++attempt) {
    std::unique_ptr<HttpServer> server(new HttpServer());
    server->host_ = options.host;
    server->port_ = options.port;
    if (server->port_ == 0) {
      auto port = pick_free_port(options.host);
      if (!port) return port.error();
      server->port_ = *port;
    }
    http_listener_config config;
    config.set_timeout(options.timeout);
    try {
      server->listener_ = std::make_unique<Listener>(server->url(), config);
      std::size_t limit = options.max_body_bytes;
      bool read_only = options.read_only;
      server->listener_->listener.support([&service, limit, read_only](http::http_request request) {
        serve(service, limit, read_only, request);
      });
      server->listener_->listener.open().wait();
      server->listener_->open = true;
      return server;
    } catch (const std::exception& e) {
      last = Error{"cannot listen on " + server->url() + ": " + e.what()};
    }
  }
  return last;
}

HttpServer::~HttpServer() {
  stop();
}

std::string HttpServer::url() const {
  return "http://" + host_ + ":" + std::to_string(port_);
}

void HttpServer::stop() {
  if (listener_ == nullptr || !listener_->open) return;
  try {
    listener_->listener.close().wait();
  } catch (const std::exception&) {  // already closed
  }
  listener_->open = false;
}

}  // namespace allox::extender
