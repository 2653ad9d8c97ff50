#include "tests/kubesim/http_client.h"

#include <poll.h>
#include <sys/socket.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <functional>

namespace allox::emulator::testing {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// "http://127.0.0.1:1234" -> host, port.
std::pair<std::string, std::string> split_url(const std::string& url) {
  std::string rest = url.substr(url.find("//") + 2);
  auto colon = rest.rfind(':');
  return {rest.substr(0, colon), rest.substr(colon + 1)};
}

void set_timeout(tcp::socket& socket, std::chrono::milliseconds wait) {
  timeval tv{};
  tv.tv_sec = wait.count() / 1000;
  tv.tv_usec = (wait.count() % 1000) * 1000;
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

}  // namespace

Reply request(const std::string& url, const std::string& method, const std::string& target,
              const std::string& body, const std::string& token, const std::string& content_type) {
  try {
    asio::io_context io;
    tcp::resolver resolver(io);
    tcp::socket socket(io);
    auto [host, port] = split_url(url);
    asio::connect(socket, resolver.resolve(host, port));
    set_timeout(socket, std::chrono::seconds(10));
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, host);
    if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
    if (!body.empty()) {
      req.set(http::field::content_type, content_type);
      req.body() = body;
    }
    req.prepare_payload();
    http::write(socket, req);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(socket, buffer, res);
    return {static_cast<int>(res.result_int()), res.body(),
            std::string(res[http::field::content_type])};
  } catch (const std::exception&) {
    return {};
  }
}

struct WatchReader::Impl {
  asio::io_context io;
  tcp::socket socket{io};
  beast::flat_buffer buffer;
  http::response_parser<http::empty_body> parser;
  std::string pending;
  // Beast keeps a reference to the callback: it lives as long as the parser.
  std::function<std::size_t(std::uint64_t, beast::string_view, beast::error_code&)> on_chunk;
  int status = 0;
  bool ended = false, clean = false;
};

WatchReader::WatchReader(const std::string& url, const std::string& target,
                         const std::string& token)
    : impl_(std::make_unique<Impl>()) {
  Impl& impl = *impl_;
  try {
    tcp::resolver resolver(impl.io);
    auto [host, port] = split_url(url);
    asio::connect(impl.socket, resolver.resolve(host, port));
    set_timeout(impl.socket, std::chrono::seconds(10));
    http::request<http::empty_body> req{http::verb::get, target, 11};
    req.set(http::field::host, host);
    if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
    http::write(impl.socket, req);
    impl.parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    impl.on_chunk = [&impl](std::uint64_t, beast::string_view body, beast::error_code&) {
      impl.pending.append(body.data(), body.size());
      return body.size();
    };
    impl.parser.on_chunk_body(impl.on_chunk);
    http::read_header(impl.socket, impl.buffer, impl.parser);
    impl.status = static_cast<int>(impl.parser.get().result_int());
    if (!impl.parser.get().chunked()) {
      // An error answer (not a stream): read its body into pending.
      http::response<http::string_body> rest;
      impl.ended = true;
      impl.clean = true;
    }
  } catch (const std::exception&) {
    impl.ended = true;
  }
}

WatchReader::~WatchReader() = default;

int WatchReader::status() const {
  return impl_->status;
}

std::optional<std::string> WatchReader::next_line(std::chrono::milliseconds wait) {
  Impl& impl = *impl_;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (true) {
    auto newline = impl.pending.find('\n');
    if (newline != std::string::npos) {
      std::string line = impl.pending.substr(0, newline);
      impl.pending.erase(0, newline + 1);
      return line;
    }
    if (impl.ended) return std::nullopt;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    // Parse what is buffered first (a chunk's trailing CRLF may sit there alone).
    if (impl.buffer.size() > 0) {
      beast::error_code parse_error;
      const std::size_t used = impl.parser.put(impl.buffer.data(), parse_error);
      impl.buffer.consume(used);
      if (parse_error && parse_error != http::error::need_more) {
        impl.ended = true;
        continue;
      }
      if (impl.parser.is_done()) {
        impl.ended = true;
        impl.clean = true;
        continue;
      }
      if (used > 0) continue;
    }
    // Asio's blocking reads retry on a socket timeout, so wait for data with poll() first.
    pollfd p{impl.socket.native_handle(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) == 0) return std::nullopt;
    beast::error_code ec;
    http::read_some(impl.socket, impl.buffer, impl.parser, ec);
    if (impl.parser.is_done()) {
      impl.ended = true;
      impl.clean = true;
      continue;
    }
    if (ec == beast::error::timeout || ec == asio::error::would_block ||
        ec == asio::error::try_again) {
      continue;
    }
    if (ec) {
      impl.ended = true;
      impl.clean = false;
    }
  }
}

bool WatchReader::ended_cleanly() const {
  return impl_->ended && impl_->clean;
}

bool WatchReader::ended() const {
  return impl_->ended;
}

}  // namespace allox::emulator::testing
