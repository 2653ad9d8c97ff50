#include "kube/connection.h"

#include <openssl/ssl.h>
#include <sys/socket.h>

namespace allox::kube::detail {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

std::string parse_target(const std::string& url, Target& target) {
  std::string_view rest = url;
  if (rest.rfind("https://", 0) == 0) {
    target.tls = true;
    rest.remove_prefix(8);
  } else if (rest.rfind("http://", 0) == 0) {
    target.tls = false;
    rest.remove_prefix(7);
  } else {
    return "the API server URL '" + url + "' is neither http:// nor https://";
  }
  std::string_view authority = rest.substr(0, rest.find('/'));
  std::string_view path = rest.substr(authority.size());
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  target.base_path = std::string(path);
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {  // [IPv6]:port
    auto close = authority.find(']');
    if (close == std::string_view::npos) return "the API server URL '" + url + "' has no ']'";
    target.host = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size() && authority[close + 1] == ':') {
      port = authority.substr(close + 2);
    }
  } else {
    auto colon = authority.rfind(':');
    target.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (target.host.empty()) return "the API server URL '" + url + "' has no host";
  target.port = port.empty() ? (target.tls ? "443" : "80") : std::string(port);
  target.host_header = std::string(authority);
  return "";
}

Connection::Connection(const Target& target, asio::ssl::context* tls)
    : target_(target), tls_context_(tls) {
  if (tls_context_ != nullptr) {
    tls_.emplace(io_, *tls_context_);
  } else {
    plain_.emplace(io_);
  }
}

beast::tcp_stream& Connection::lowest() {
  return tls_ ? beast::get_lowest_layer(*tls_) : *plain_;
}

template <class Start>
error_code Connection::run(Start start) {
  error_code result;
  bool done = false;
  start([&](error_code error, auto&&...) {
    result = error;
    done = true;
  });
  io_.restart();
  while (!done && io_.run_one() > 0) {
  }
  return done ? result : error_code(asio::error::operation_aborted);
}

std::string Connection::connect(Clock::time_point deadline) {
  // The system resolver, on this thread: asio's asynchronous resolver would start a thread per
  // io_context. An IP literal (the usual in-cluster address) skips it.
  error_code error;
  tcp::resolver resolver(io_);
  auto endpoints = resolver.resolve(target_.host, target_.port, error);
  if (error) return "cannot resolve " + target_.host + ": " + error.message();
  lowest().expires_at(deadline);
  error = run([&](auto handler) { lowest().async_connect(endpoints, handler); });
  if (error) return "cannot connect to " + target_.host_header + ": " + error.message();
  lowest().socket().set_option(tcp::no_delay(true), error);
  if (tls_) {
    // SNI names the host (never an IP literal, RFC 6066); the certificate must match it.
    asio::ip::make_address(target_.host, error);
    if (error && !SSL_set_tlsext_host_name(tls_->native_handle(), target_.host.c_str())) {
      return "TLS: cannot set the server name " + target_.host;
    }
    tls_->set_verify_mode(asio::ssl::verify_peer);
    tls_->set_verify_callback(asio::ssl::host_name_verification(target_.host));
    lowest().expires_at(deadline);
    error =
        run([&](auto handler) { tls_->async_handshake(asio::ssl::stream_base::client, handler); });
    if (error) return "TLS handshake with " + target_.host_header + " failed: " + error.message();
  }
  connected_ = true;
  return "";
}

bool Connection::idle_and_open() {
  if (!connected_ || buffer_.size() != 0) return false;
  char byte;
  ssize_t n = ::recv(lowest().socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

// Starts `op(stream, handler)` on the stream this connection speaks (TLS or plain) and runs it.
template <class Op>
error_code Connection::run_on_stream(Op op) {
  return run([&](auto handler) {
    if (tls_) {
      op(*tls_, handler);
    } else {
      op(*plain_, handler);
    }
  });
}

error_code Connection::write(http::request<http::string_body>& request, Clock::time_point deadline,
                             std::size_t& written) {
  written = 0;
  lowest().expires_at(deadline);
  return run_on_stream([&](auto& stream, auto handler) {
    http::async_write(stream, request, [&written, handler](error_code error, std::size_t n) {
      written = n;
      handler(error);
    });
  });
}

error_code Connection::wait_first_byte(Clock::time_point deadline) {
  if (buffer_.size() != 0) return {};
  lowest().expires_at(deadline);
  auto space = buffer_.prepare(64 << 10);
  std::size_t got = 0;
  error_code error = run_on_stream([&](auto& stream, auto handler) {
    stream.async_read_some(space, [&got, handler](error_code e, std::size_t n) {
      got = n;
      handler(e);
    });
  });
  buffer_.commit(got);
  return got > 0 ? error_code{} : error;
}

error_code Connection::read(http::response_parser<http::string_body>& parser,
                            Clock::time_point deadline) {
  lowest().expires_at(deadline);
  return run_on_stream(
      [&](auto& stream, auto handler) { http::async_read(stream, buffer_, parser, handler); });
}

error_code Connection::read_header(http::response_parser<http::string_body>& parser,
                                   Clock::time_point deadline) {
  lowest().expires_at(deadline);
  return run_on_stream([&](auto& stream, auto handler) {
    http::async_read_header(stream, buffer_, parser, handler);
  });
}

error_code Connection::read_header(http::response_parser<http::buffer_body>& parser,
                                   Clock::time_point deadline) {
  lowest().expires_at(deadline);
  return run_on_stream([&](auto& stream, auto handler) {
    http::async_read_header(stream, buffer_, parser, handler);
  });
}

error_code Connection::read_some(http::response_parser<http::buffer_body>& parser,
                                 Clock::time_point deadline) {
  // Beast reads at most the buffer's free capacity (and at least 512 bytes) per read, and a
  // flat_buffer sized by the header never grows: a watch then came in ~1.5 KB reads, one
  // event in two or three, and fell minutes behind a busy API server. Room for 64 KB a read.
  if (buffer_.capacity() < kStreamReadBytes) buffer_.reserve(kStreamReadBytes);
  lowest().expires_at(deadline);
  error_code error = run_on_stream(
      [&](auto& stream, auto handler) { http::async_read_some(stream, buffer_, parser, handler); });
  return error == http::error::need_buffer ? error_code{} : error;
}

void Connection::cancel() {
  asio::post(io_, [this] {
    error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest().close();
  });
}

}  // namespace allox::kube::detail
