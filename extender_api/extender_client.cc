#include "extender_api/extender_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <optional>

namespace allox::extender {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;

// One kept-alive HTTP/1.1 connection, driven synchronously: each step is an asynchronous Beast
// operation run to completion on a private io_context under the client's deadline, the usual
// way to give a blocking call a timeout. Requests and answers are written and read as whole
// strings (the body moved in, the answer read straight into its string).
struct ExtenderClient::Impl {
  static constexpr std::size_t kReadSize = 64 << 10;
  static constexpr std::uint64_t kMaxAnswerBytes = 1ULL << 30;
  std::string host, port, prefix;  // from http://host:port/prefix
  std::string url_error;           // why the server URL is unusable, if it is
  std::chrono::milliseconds timeout;
  std::string admin_token;
  asio::io_context io;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;

  Impl(const std::string& server, std::chrono::milliseconds t) : timeout(t) {
    constexpr std::string_view kScheme = "http://";
    if (!server.starts_with(kScheme)) {
      url_error = "'" + server + "' is not an http:// URL";
      return;
    }
    std::string_view rest = std::string_view(server).substr(kScheme.size());
    std::size_t slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    if (slash != std::string_view::npos) prefix = std::string(rest.substr(slash));
    while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
    std::size_t colon = authority.rfind(':');
    host = std::string(authority.substr(0, colon));
    port = colon == std::string_view::npos ? "80" : std::string(authority.substr(colon + 1));
    if (host.empty() || port.empty()) url_error = "'" + server + "' names no host";
  }

  // Runs `start(handler)` to completion within the timeout; the operation's error.
  template <class Start>
  error_code run(Start start) {
    error_code result = asio::error::would_block;
    stream->expires_after(timeout);
    start([&result](error_code ec, auto&&...) { result = ec; });
    io.restart();
    io.run();
    return result;
  }

  void close() {
    if (!stream) return;
    error_code ignored;
    stream->socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    stream->close();
    stream.reset();
    buffer.clear();
  }

  error_code connect() {
    asio::ip::tcp::resolver resolver(io);
    error_code ec;
    auto endpoints = resolver.resolve(host, port, ec);
    if (ec) return ec;
    stream.emplace(io);
    ec = run([&](auto handler) { stream->async_connect(endpoints, handler); });
    if (ec) {
      close();
      return ec;
    }
    stream->socket().set_option(asio::ip::tcp::no_delay(true), ec);
    return {};
  }

  // One request and its answer: {status, body}, or an error naming the call.
  Expected<std::pair<int, std::string>> exchange(http::verb method, const std::string& path,
                                                 std::string body, bool admin,
                                                 const std::string& what) {
    if (!url_error.empty()) return Error{what + ": " + url_error};
    http::request<http::string_body> request(method, prefix + path, 11);
    request.set(http::field::host, host + ":" + port);
    request.set(http::field::accept, "application/json");
    if (method != http::verb::get) {
      request.set(http::field::content_type, "application/json");
      request.body() = std::move(body);
    }
    if (admin) request.set(http::field::authorization, "Bearer " + admin_token);
    request.keep_alive(true);
    request.prepare_payload();
    // A kept-alive connection the server has closed meanwhile fails before any answer: then the
    // request goes once more on a new connection (as Go's transport retries a reused one).
    for (int attempt = 0;; ++attempt) {
      const bool reused = stream.has_value();
      if (!reused) {
        if (error_code ec = connect()) return Error{what + ": cannot connect: " + ec.message()};
      }
      error_code ec = run([&](auto handler) { http::async_write(*stream, request, handler); });
      // Room for big reads: a 5,000-node answer is ~270 KB, read in 64 KB pieces, not 512 B.
      buffer.reserve(kReadSize);
      http::response_parser<http::string_body> parser;
      // An explicit limit: Boost 1.81's parser takes boost::none as "no limit" in one code
      // path and as "limit 0" in another (an intermittent body_limit error).
      parser.body_limit(kMaxAnswerBytes);
      if (!ec) {
        ec = run([&](auto handler) { http::async_read(*stream, buffer, parser, handler); });
      }
      if (ec) {
        const bool stale =
            reused && attempt == 0 && !parser.got_some() && ec != beast::error::timeout;
        close();
        if (stale) continue;
        return Error{what + ": " +
                     (ec == beast::error::timeout
                          ? "timed out after " + std::to_string(timeout.count()) + " ms"
                          : ec.message())};
      }
      auto response = parser.release();
      if (!response.keep_alive()) close();
      return std::make_pair(static_cast<int>(response.result_int()), std::move(response.body()));
    }
  }
};

ExtenderClient::ExtenderClient(const std::string& server, std::string admin_token,
                               std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>(server, timeout)) {
  impl_->admin_token = std::move(admin_token);
}

ExtenderClient::~ExtenderClient() {
  impl_->close();
}

namespace {

// The body of a 200 answer, as text.
Expected<std::string> ok_text(Expected<std::pair<int, std::string>> answer,
                              const std::string& what) {
  if (!answer) return answer.error();
  if (answer->first != 200) {
    return Error{what + ": HTTP " + std::to_string(answer->first) + ": " + answer->second};
  }
  return std::move(answer->second);
}

Expected<nlohmann::json> ok_json(Expected<std::pair<int, std::string>> answer,
                                 const std::string& what) {
  auto text = ok_text(std::move(answer), what);
  if (!text) return text.error();
  nlohmann::json parsed = nlohmann::json::parse(*text, nullptr, false);
  if (parsed.is_discarded()) return Error{what + ": the answer is not JSON: " + *text};
  return parsed;
}

}  // namespace

Expected<nlohmann::json> ExtenderClient::get(const std::string& path) {
  const std::string what = "GET " + path;
  return ok_json(impl_->exchange(http::verb::get, path, {}, false, what), what);
}

Expected<std::string> ExtenderClient::get_text(const std::string& path) {
  const std::string what = "GET " + path;
  return ok_text(impl_->exchange(http::verb::get, path, {}, false, what), what);
}

Expected<nlohmann::json> ExtenderClient::post(const std::string& path, const nlohmann::json& body,
                                              bool admin) {
  const std::string what = "POST " + path;
  return ok_json(impl_->exchange(http::verb::post, path, body.dump(), admin, what), what);
}

Expected<std::string> ExtenderClient::post_text(const std::string& path, std::string body) {
  const std::string what = "POST " + path;
  return ok_text(impl_->exchange(http::verb::post, path, std::move(body), false, what), what);
}

std::string path_segment(const std::string& id) {
  // Everything but RFC 3986's unreserved characters is percent-encoded.
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : id) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace allox::extender
