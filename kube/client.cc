// KubeClient over Boost.Beast: a pool of kept-alive connections (connection.h) that callers take,
// drive on their own thread and give back; streams on a connection of their own. The retry rule
// and the meaning of every answer are here.
#include "kube/client.h"

#include <limits>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "kube/connection.h"

namespace allox::kube {

namespace asio = boost::asio;
using boost::system::error_code;
using detail::Clock;
using detail::Connection;
namespace beast = detail::beast;
namespace http = detail::http;

namespace {

// Idle connections kept beyond this are closed: more callers than this at once is a burst.
constexpr std::size_t kMaxIdle = 64;
// Answers are as long as the API server makes them (a list page, a watch). Not boost::none:
// Boost 1.74's parser compares a Content-Length with the optional, and none compares less.
constexpr std::uint64_t kNoBodyLimit = std::numeric_limits<std::uint64_t>::max();

std::string stopped_error(const std::string& what) {
  return what + ": the API client is stopped";
}

std::string describe(const error_code& error, std::chrono::milliseconds timeout) {
  if (error == beast::error::timeout) {
    return "no answer within " + std::to_string(timeout.count()) + " ms";
  }
  return error.message();
}

}  // namespace

struct KubeClient::Impl {
  KubeClientOptions options;
  const std::atomic<bool>& stopped;
  detail::Target target;
  std::string setup_error;  // a bad URL or CA file: every call fails with it
  std::optional<asio::ssl::context> tls;

  std::mutex mu;
  std::vector<std::unique_ptr<Connection>> idle;  // most recently used last
  std::unordered_set<Connection*> busy;           // what stop() must cancel

  Impl(KubeClientOptions o, const std::atomic<bool>& s) : options(std::move(o)), stopped(s) {
    setup_error = detail::parse_target(options.url, target);
    if (!setup_error.empty() || !target.tls) return;
    tls.emplace(asio::ssl::context::tls_client);
    tls->set_verify_mode(asio::ssl::verify_peer);
    error_code error;
    if (!options.ca_file.empty()) {
      tls->load_verify_file(options.ca_file, error);
      if (error) {
        setup_error = "TLS: cannot load the CA file " + options.ca_file + ": " + error.message();
      }
    } else {
      tls->set_default_verify_paths(error);
      if (error) setup_error = "TLS: cannot load the system CA paths: " + error.message();
    }
  }

  // A connection for one caller, registered as busy: the most recently used idle one that is
  // still open, else (or when `fresh`) a new one, not yet connected.
  std::unique_ptr<Connection> take(bool fresh) {
    std::unique_ptr<Connection> connection;
    std::vector<std::unique_ptr<Connection>> closed;  // destroyed outside the lock
    {
      std::lock_guard lock(mu);
      while (!fresh && !idle.empty()) {
        std::unique_ptr<Connection> candidate = std::move(idle.back());
        idle.pop_back();
        if (candidate->idle_and_open()) {
          connection = std::move(candidate);
          break;
        }
        closed.push_back(std::move(candidate));
      }
      if (!connection) {
        connection = std::make_unique<Connection>(target, tls ? &*tls : nullptr);
      }
      busy.insert(connection.get());
    }
    return connection;
  }

  // The caller is done with it: kept for the next caller when the exchange left it reusable.
  void give_back(std::unique_ptr<Connection> connection, bool reusable) {
    std::lock_guard lock(mu);
    busy.erase(connection.get());
    if (reusable && !stopped.load() && idle.size() < kMaxIdle) {
      connection->mark_used();
      idle.push_back(std::move(connection));
    }
  }

  void stop() {
    std::vector<std::unique_ptr<Connection>> closed;
    std::lock_guard lock(mu);
    for (Connection* connection : busy) connection->cancel();
    closed.swap(idle);
  }

  http::request<http::string_body> make_request(std::string_view method, const std::string& path,
                                                const std::string& body,
                                                const std::string& content_type) const {
    http::request<http::string_body> request;
    request.method_string(beast::string_view(method.data(), method.size()));
    request.target(target.base_path + path);
    request.version(11);
    request.set(http::field::host, target.host_header);
    request.set(http::field::user_agent, "alloxd");
    request.set(http::field::accept, "application/json");
    if (!options.token.empty()) request.set(http::field::authorization, "Bearer " + options.token);
    if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
      request.set(http::field::content_type, content_type);
      request.body() = body;
    }
    request.prepare_payload();
    return request;
  }
};

KubeClient::KubeClient(KubeClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(options), stopped_)) {}

KubeClient::~KubeClient() {
  stop();
}

void KubeClient::stop() {
  if (!stopped_.exchange(true)) impl_->stop();
}

Expected<KubeResponse> KubeClient::call(std::string_view method, const std::string& path,
                                        const std::string& body, const std::string& content_type) {
  const std::string what = std::string(method) + " " + path;
  if (stopped()) return Error{stopped_error(what)};
  if (!impl_->setup_error.empty()) return Error{what + ": " + impl_->setup_error};
  const auto timeout = impl_->options.call_timeout;
  const Clock::time_point deadline = Clock::now() + timeout;
  auto request = impl_->make_request(method, path, body, content_type);
  for (int attempt = 0;; ++attempt) {
    std::unique_ptr<Connection> connection = impl_->take(attempt > 0);
    // Registered as busy before this look: a stop() from now on cancels what follows.
    if (stopped()) {
      impl_->give_back(std::move(connection), false);
      return Error{stopped_error(what)};
    }
    const bool reused = connection->used();
    if (!connection->connected()) {
      std::string failed = connection->connect(deadline);
      if (!failed.empty()) {
        impl_->give_back(std::move(connection), false);
        if (stopped()) return Error{stopped_error(what)};
        return Error{what + ": cannot reach the API server: " + failed};
      }
    }
    std::size_t written = 0;
    error_code error = connection->write(request, deadline, written);
    bool answered = false;  // a byte of the answer arrived
    if (!error) {
      error = connection->wait_first_byte(deadline);
      answered = !error;
    }
    http::response_parser<http::string_body> parser;
    if (!error) {
      parser.header_limit(64 << 10);
      parser.body_limit(impl_->options.max_answer_bytes);
      // Beast 1.74's response parser lets a Content-Length over the limit through (and its
      // string body would reserve all of it): judged here, before a byte of the body is read.
      error = connection->read_header(parser, deadline);
      if (!error && parser.content_length() &&
          *parser.content_length() > impl_->options.max_answer_bytes) {
        error = http::error::body_limit;
      }
      if (!error) error = connection->read(parser, deadline);
    }
    if (error == http::error::body_limit) {
      impl_->give_back(std::move(connection), false);
      return Error{what + ": the answer is larger than " +
                   std::to_string(impl_->options.max_answer_bytes) +
                   " bytes, the most alloxd reads in one answer"};
    }
    if (!error) {
      const bool reusable = parser.keep_alive() && connection->drained();
      KubeResponse response{static_cast<int>(parser.get().result_int()),
                            std::move(parser.get().body())};
      impl_->give_back(std::move(connection), reusable);
      return response;
    }
    impl_->give_back(std::move(connection), false);
    if (stopped()) return Error{stopped_error(what)};
    // The server closed a kept-alive connection under us (it had gone idle on its side). Resent
    // once on a fresh connection when the server cannot have acted on it: nothing of it left, or
    // nothing was answered and it is a GET (a POST, PUT, PATCH or DELETE may have been done).
    const bool idempotent = method == "GET" || method == "HEAD";
    if (attempt == 0 && reused && !answered && error != beast::error::timeout &&
        (written == 0 || idempotent)) {
      continue;
    }
    std::string how = answered ? "the answer broke: " : "no answer: ";
    return Error{what + ": cannot reach the API server: " + how + describe(error, timeout)};
  }
}

Expected<KubeResponse> KubeClient::stream(const std::string& path,
                                          std::chrono::milliseconds idle_timeout,
                                          const std::function<bool(std::string_view line)>& on_line,
                                          const std::function<void()>& on_caught_up) {
  const std::string what = "GET " + path;
  if (stopped()) return Error{stopped_error(what)};
  if (!impl_->setup_error.empty()) return Error{what + ": " + impl_->setup_error};
  // Its own connection: a watch holds it for as long as it runs, and it is never reused.
  std::unique_ptr<Connection> connection = impl_->take(true);
  struct GiveBack {
    Impl& impl;
    std::unique_ptr<Connection>& connection;
    ~GiveBack() { impl.give_back(std::move(connection), false); }
  } give_back{*impl_, connection};
  if (stopped()) return Error{stopped_error(what)};
  auto failed = [&](const std::string& how) -> Expected<KubeResponse> {
    if (stopped()) return Error{stopped_error(what)};
    return Error{what + ": " + how};
  };
  std::string setup = connection->connect(Clock::now() + idle_timeout);
  if (!setup.empty()) return failed("cannot reach the API server: " + setup);
  auto request = impl_->make_request("GET", path, "", "");
  std::size_t written = 0;
  error_code error = connection->write(request, Clock::now() + idle_timeout, written);
  if (error) return failed("cannot reach the API server: " + describe(error, idle_timeout));
  http::response_parser<http::buffer_body> parser;
  parser.header_limit(64 << 10);
  parser.body_limit(kNoBodyLimit);
  error = connection->read_header(parser, Clock::now() + idle_timeout);
  if (error) return failed("cannot reach the API server: " + describe(error, idle_timeout));

  const int status = static_cast<int>(parser.get().result_int());
  const std::size_t max_line = impl_->options.max_line_bytes;
  std::string line, other_body;
  std::vector<char> piece(64 << 10);
  while (!parser.is_done()) {
    if (stopped()) return Error{stopped_error(what)};
    parser.get().body().data = piece.data();
    parser.get().body().size = piece.size();
    error = connection->read_some(parser, Clock::now() + idle_timeout);
    if (error) return failed("the stream broke: " + describe(error, idle_timeout));
    const std::size_t n = piece.size() - parser.get().body().size;
    if (status != 200) {
      if (other_body.size() + n > max_line) return failed("an answer longer than allowed");
      other_body.append(piece.data(), n);
      continue;
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (piece[i] != '\n') {
        line.push_back(piece[i]);
        if (line.size() > max_line) {
          return failed("a stream line is longer than " + std::to_string(max_line) + " bytes");
        }
        continue;
      }
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty() && !on_line(line)) return KubeResponse{200, ""};
      line.clear();
    }
    if (on_caught_up && n > 0) on_caught_up();
  }
  if (status != 200) return KubeResponse{status, std::move(other_body)};
  // A clean end of the body (the terminating chunk, or the end its length announced).
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (!line.empty()) on_line(line);
  return KubeResponse{200, ""};
}

std::string escape(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 15]);
    }
  }
  return out;
}

}  // namespace allox::kube
