// One HTTP/1.1 connection to the API server, plain TCP or TLS, whose I/O runs on the thread that
// holds it: each connection owns an io_context that only its holder runs (one operation at a
// time, to completion), so a call costs no thread hand-off and no wake-up of another thread.
// Every operation is bounded by a deadline (Beast's tcp_stream expiry closes the socket when it
// passes). The one thing another thread may do is cancel(): it is posted to the connection's
// io_context, so the holder runs it inside its current or next wait, which then fails.
//
// KubeClient (client.h) owns the pool, the retry rule and the meaning of the answers; this file
// only moves bytes.
#pragma once

// clang-format off
#include <utility>  // before Boost 1.74 asio, which uses std::exchange without including it
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
// clang-format on
#include <chrono>
#include <optional>
#include <string>

namespace allox::kube::detail {

namespace beast = boost::beast;
namespace http = boost::beast::http;

using Clock = std::chrono::steady_clock;

// Where the API server is, from KubeClientOptions::url.
struct Target {
  bool tls = false;
  std::string host;         // a name or an IP literal, without brackets
  std::string port;         // "443", "6443", ...
  std::string host_header;  // the Host header: host[:port]
  std::string base_path;    // a path the URL carried ("" or "/prefix"), put before every target
};

// Parses http[s]://host[:port][/path]; an empty error means success.
std::string parse_target(const std::string& url, Target& target);

class Connection {
 public:
  // tls: the client's context for an https target, nullptr for http. Not connected yet.
  Connection(const Target& target, boost::asio::ssl::context* tls);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Resolves (the system resolver, on this thread), connects and, for https, handshakes with SNI
  // and host-name verification. An empty string means success; otherwise what failed, naming
  // TLS for a handshake failure.
  std::string connect(Clock::time_point deadline);
  bool connected() const { return connected_; }

  // Whether this connection completed an exchange before (it came out of the pool).
  bool used() const { return used_; }
  void mark_used() { used_ = true; }

  // An idle connection the server has closed (or written to, unasked) is no use: checked
  // without blocking before it is taken from the pool.
  bool idle_and_open();

  // Writes the request; `written` is the bytes that left (0: the server saw nothing of it).
  boost::system::error_code write(http::request<http::string_body>& request,
                                  Clock::time_point deadline, std::size_t& written);
  // Waits for the first byte of an answer (or the failure before it) by the deadline.
  boost::system::error_code wait_first_byte(Clock::time_point deadline);
  // Reads a whole answer (its first bytes may already be buffered) by the deadline.
  boost::system::error_code read(http::response_parser<http::string_body>& parser,
                                 Clock::time_point deadline);
  // The head of a whole answer, read before its body (to judge its Content-Length).
  boost::system::error_code read_header(http::response_parser<http::string_body>& parser,
                                        Clock::time_point deadline);
  // Streams: the head, then the body piece by piece (each read bounded by its own deadline;
  // a full piece buffer is not an error).
  boost::system::error_code read_header(http::response_parser<http::buffer_body>& parser,
                                        Clock::time_point deadline);
  boost::system::error_code read_some(http::response_parser<http::buffer_body>& parser,
                                      Clock::time_point deadline);
  // No bytes beyond the last answer: a precondition for reuse.
  bool drained() const { return buffer_.size() == 0; }

  // From any thread: the holder's current or next wait fails with operation_aborted.
  void cancel();

 private:
  beast::tcp_stream& lowest();
  // Runs the io_context until the operation `start` began has completed.
  template <class Start>
  boost::system::error_code run(Start start);
  // run() for an operation on the stream this connection speaks, TLS or plain: `op(stream,
  // handler)` starts it.
  template <class Op>
  boost::system::error_code run_on_stream(Op op);

  boost::asio::io_context io_{1};  // declared first: destroyed after the streams that use it
  const Target& target_;
  boost::asio::ssl::context* tls_context_;
  std::optional<beast::tcp_stream> plain_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls_;
  static constexpr std::size_t kStreamReadBytes = 64 << 10;  // read_some's room per read
  beast::flat_buffer buffer_;
  bool connected_ = false;
  bool used_ = false;
};

}  // namespace allox::kube::detail
