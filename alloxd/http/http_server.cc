#include "alloxd/http/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <condition_variable>
#include <list>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "alloxd/http/blocking_pool.h"
#include "alloxd/http/countdown.h"
#include "alloxd/http/io_thread_inbox.h"
#include "alloxd/http/routes.h"
#include "alloxd/service.h"
#include "core/thread_priority.h"

namespace allox::extender {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

namespace {

// After an error reply the rest of the request is read and dropped for this long, so the client
// reads the reply instead of a connection reset (what nginx calls a lingering close).
constexpr std::chrono::milliseconds kLinger{1000};
// A body is read from the socket in pieces of up to this size (the parser moves each into the
// body as it arrives, so the read buffer never holds more): a 70 KB /filter at 5,000 NodeNames
// is two reads instead of a hundred reads of the 512-byte minimum a small buffer allows.
constexpr std::size_t kBodyReadSize = 64 << 10;
// Descriptors kept free for the store, the API client and logs when capping connections.
constexpr std::size_t kReservedDescriptors = 64;

std::string error_body(const std::string& message) {
  return nlohmann::json{{"error", message}}.dump(-1, ' ', false,
                                                 nlohmann::json::error_handler_t::replace);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The path of a request target, without the query string, percent-decoded.
std::string decode_path(std::string_view target) {
  target = target.substr(0, target.find('?'));
  std::string out;
  out.reserve(target.size());
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (target[i] == '%' && i + 2 < target.size()) {
      int high = hex_value(target[i + 1]);
      int low = hex_value(target[i + 2]);
      if (high >= 0 && low >= 0) {
        out.push_back(static_cast<char>(high * 16 + low));
        i += 2;
        continue;
      }
    }
    out.push_back(target[i]);
  }
  return out.empty() ? "/" : out;
}

// The query string of a request target: what follows the first '?', as sent.
std::string query_of(std::string_view target) {
  const std::size_t mark = target.find('?');
  return mark == std::string_view::npos ? std::string() : std::string(target.substr(mark + 1));
}

std::size_t descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return static_cast<std::size_t>(-1);
  }
  return static_cast<std::size_t>(limit.rlim_cur);
}

// What every connection shares with the server: the options, the handler, the open connections
// in accept order (for eviction at the cap) and the count of replies in flight (for draining).
struct Shared {
  HttpServerOptions options;
  HttpHandler handler;
  std::size_t max_connections = 0;
  BlockingPool* blocking = nullptr;  // the pool for handlers that may block
  // Work of this server's on the pool, possibly shared with other servers: the server is
  // joined only once none is left.
  std::atomic<int> pool_work{0};
  std::condition_variable pool_idle;

  struct Connection {
    virtual ~Connection() = default;
    // Posts a close to the connection's thread unless it is answering a request by then.
    virtual void close_unless_busy() = 0;
    // Posts a reset to the connection's thread if it is then still waiting for its client to
    // take a reply (the handler is done: only the client holds it up).
    virtual void close_if_writing() = 0;
    // Posts a reset to the connection's thread.
    virtual void reset() = 0;
    std::atomic<bool> busy{false};         // a complete request is being answered
    std::atomic<bool> served{false};       // at least one reply was sent
    std::atomic<bool> writing{false};      // its reply is composed and being sent
    std::atomic<bool> handshaking{false};  // its TLS handshake is not done
  };
  std::mutex mu;
  std::condition_variable drained;
  std::list<std::weak_ptr<Connection>> open;
  std::size_t open_count = 0;
  // Counted without the lock (three times per request otherwise); the lock is taken only to
  // wake a stop() waiting for the last reply.
  std::atomic<int> in_flight{0};
  std::atomic<bool> draining{false};
  std::atomic<std::size_t> handshakes{0};  // TLS handshakes in progress

  std::list<std::weak_ptr<Connection>>::iterator add(std::weak_ptr<Connection> connection) {
    std::lock_guard lock(mu);
    ++open_count;
    return open.insert(open.end(), std::move(connection));
  }
  void remove(std::list<std::weak_ptr<Connection>>::iterator it) {
    std::lock_guard lock(mu);
    open.erase(it);
    --open_count;
  }
  // At the cap, asks connections to close, enough to admit one more: first those that never
  // completed a request (stalled or slow clients), oldest first, then idle kept-alive ones
  // (kube-scheduler's), oldest first, then those whose reply waits for a client that does not
  // read it, oldest first. Connections whose handler is running are never chosen.
  void make_room() {
    std::vector<std::shared_ptr<Connection>> idle, writers;
    {
      std::lock_guard lock(mu);
      if (open_count < max_connections) return;
      std::size_t excess = open_count - max_connections + 1;
      for (bool served_ones : {false, true}) {
        for (auto it = open.begin(); it != open.end() && idle.size() < excess; ++it) {
          auto c = it->lock();
          if (c && !c->busy && c->served == served_ones) idle.push_back(std::move(c));
        }
      }
      for (auto it = open.begin(); it != open.end() && idle.size() + writers.size() < excess;
           ++it) {
        auto c = it->lock();
        if (c && c->busy && c->writing) writers.push_back(std::move(c));
      }
    }
    for (auto& c : idle) c->close_unless_busy();
    for (auto& c : writers) c->close_if_writing();
  }
  // Before a TLS handshake starts: at max_handshakes in progress, the oldest are closed, so
  // clients that open connections and never finish their handshake hold a bounded number of
  // TLS states, and a real client's handshake (milliseconds) always gets its turn.
  void make_handshake_room() {
    const std::size_t cap = std::max<std::size_t>(1, options.max_handshakes);
    const std::size_t now_in_progress = handshakes.load();
    if (now_in_progress < cap) return;
    std::vector<std::shared_ptr<Connection>> victims;
    {
      std::lock_guard lock(mu);
      const std::size_t excess = now_in_progress - cap + 1;
      for (auto it = open.begin(); it != open.end() && victims.size() < excess; ++it) {
        auto c = it->lock();
        // Claimed here, so the next accept does not pick the same one before it is closed.
        if (c && c->handshaking.exchange(false)) {
          --handshakes;
          victims.push_back(std::move(c));
        }
      }
    }
    for (auto& c : victims) c->reset();
  }
  void begin_reply() { in_flight.fetch_add(1); }
  void end_reply() {
    // stop() sets draining under mu before it waits on in_flight under mu: either it sees 0, or
    // this sees draining and wakes it under mu.
    if (in_flight.fetch_sub(1) == 1 && draining.load()) {
      std::lock_guard lock(mu);
      drained.notify_all();
    }
  }
  bool is_draining() const { return draining.load(); }
};

using Parser = http::request_parser<http::string_body>;

// Room to read into while a request's header arrives: a request line, its headers and a small
// body (a /filter at 100 NodeNames is about 1.6 KB) in one read. Kept by an idle connection.
constexpr std::size_t kHeaderReadSize = 4096;
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

void append_number(std::string& out, std::size_t n) {
  char digits[24];
  auto end = std::to_chars(std::begin(digits), std::end(digits), n).ptr;
  out.append(digits, end);
}

// One connection: read a request under the limits, answer it, repeat while kept alive. It is
// owned by one I/O thread (its io_context has no other), so its handlers never run at once and
// need no strand; other threads reach it only by posting to its executor.
//
// Per request: one read that usually holds the whole request (parsed in place, no second read
// or epoll round trip to learn that the header is done), the handler, and one gather write of
// the status line and headers (a reused string) with the handler's body, not copied.
template <class Stream>
class Session : public Shared::Connection, public std::enable_shared_from_this<Session<Stream>> {
 public:
  // `inbox`: the connection's I/O thread's, for replies composed on the blocking pool.
  Session(Stream stream, std::shared_ptr<Shared> shared, IoThreadInbox& inbox)
      : stream_(std::move(stream)),
        timer_(stream_.get_executor()),
        shared_(std::move(shared)),
        inbox_(&inbox),
        buffer_(shared_->options.max_header_bytes + kBodyReadSize) {}
  ~Session() override {
    end_handshake();
    if (registered_) shared_->remove(self_in_list_);
  }

  void start() {
    self_in_list_ = shared_->add(this->weak_from_this());
    registered_ = true;
    // Accepted just as the server stopped: stop_accepting() did not see it in the list.
    if (shared_->is_draining()) return close();
    if constexpr (kTls) {
      shared_->make_handshake_room();
      handshaking = true;
      ++shared_->handshakes;
      arm(std::min(shared_->options.read_timeout, shared_->options.handshake_timeout));
      stream_.async_handshake(asio::ssl::stream_base::server,
                              [self = this->shared_from_this()](error_code ec) {
                                self->end_handshake();
                                if (ec || self->closed_) return self->close();
                                self->next_request();
                              });
    } else {
      next_request();
    }
  }

  void close_unless_busy() override {
    asio::post(stream_.get_executor(), [self = this->shared_from_this()] {
      if (!self->busy) self->close();
    });
  }

  void close_if_writing() override {
    asio::post(stream_.get_executor(), [self = this->shared_from_this()] {
      if (self->writing) self->close(/*reset=*/true);
    });
  }

  void reset() override {
    asio::post(stream_.get_executor(),
               [self = this->shared_from_this()] { self->close(/*reset=*/true); });
  }

 private:
  static constexpr bool kTls = !std::is_same_v<Stream, tcp::socket>;

  tcp::socket& socket() { return beast::get_lowest_layer(stream_); }

  void end_handshake() {
    if (handshaking.exchange(false)) --shared_->handshakes;
  }

  // Cancels the pending socket operation after `timeout`; the operation then fails with
  // operation_aborted and timed_out_ set. A connection has one deadline and one timer wait: a
  // deadline moved later (every kept-alive request moves it) costs no timer operation, the wait
  // in progress re-waits when it ends early; only a deadline earlier than that wait re-arms.
  void arm(std::chrono::milliseconds timeout) { arm_until(Clock::now() + timeout); }
  void arm_until(Clock::time_point deadline) {
    timed_out_ = false;
    deadline_ = deadline;
    if (!waiting_ || deadline_ < wait_until_) wait();
  }
  void disarm() { deadline_ = Clock::time_point::max(); }
  void wait() {
    waiting_ = true;
    wait_until_ = deadline_;
    std::uint64_t generation = ++timer_generation_;
    timer_.expires_at(deadline_);  // ends a wait in progress, whose handler is then stale
    timer_.async_wait([self = this->shared_from_this(), generation](error_code ec) {
      if (generation != self->timer_generation_) return;
      self->waiting_ = false;
      if (ec || self->closed_ || self->deadline_ == Clock::time_point::max()) return;
      if (Clock::now() < self->deadline_) return self->wait();
      self->timed_out_ = true;
      error_code ignored;
      self->socket().cancel(ignored);
    });
  }

  void next_request() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(shared_->options.max_header_bytes));
    parser_->body_limit(shared_->options.max_body_bytes);
    body_limit_ = shared_->options.max_body_bytes;
    parser_->eager(false);  // stop after the header: on_header() looks at it before the body
    header_checked_ = false;
    // Bytes of this request already read (pipelined after the last one): its read deadline
    // runs. Otherwise the connection waits for its first byte under the idle timeout (the read
    // timeout for a new connection), and the read deadline starts with that byte.
    started_ = buffer_.size() > 0;
    if (started_) {
      arm(shared_->options.read_timeout);
      return parse();
    }
    arm(requests_ == 0 ? shared_->options.read_timeout : shared_->options.idle_timeout);
    read_more();
  }

  void read_more() {
    // While the body arrives, room for big reads (up to kBodyReadSize at a time); a small body
    // gets only its own size: reserving 64 KB for each request and giving it back had glibc
    // trim and re-grow its heap (madvise, page faults) on every kept-alive request.
    std::size_t room = std::max(kHeaderReadSize, buffer_.capacity() - buffer_.size());
    if (parser_->is_header_done()) {
      const auto length = parser_->content_length();
      room = std::max(
          room, length ? static_cast<std::size_t>(std::min<std::uint64_t>(*length, kBodyReadSize))
                       : kBodyReadSize);
    }
    room = std::min(room, buffer_.max_size() - buffer_.size());
    if (room == 0) return fail(http::error::buffer_overflow);
    stream_.async_read_some(buffer_.prepare(room),
                            [self = this->shared_from_this()](error_code ec, std::size_t bytes) {
                              self->buffer_.commit(bytes);
                              self->on_read(ec);
                            });
  }

  void on_read(error_code ec) {
    if (closed_) return;
    if (ec == asio::error::eof) {
      // The client closed: a request cut short is partial_message, none at all end_of_stream.
      ec = http::error::end_of_stream;
      if (parser_->got_some()) parser_->put_eof(ec);
      if (!ec && parser_->is_done()) return on_request();
    }
    if (ec) return fail(ec);
    if (!started_) {
      started_ = true;
      arm(shared_->options.read_timeout);
    }
    parse();
  }

  // Feeds what was read to the parser, which moves body bytes out of the buffer as it goes.
  void parse() {
    while (buffer_.size() > 0 && !parser_->is_done()) {
      error_code ec;
      const std::size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec == http::error::need_more) break;
      if (ec) return fail(ec);
      if (parser_->is_header_done() && !header_checked_) {
        header_checked_ = true;
        if (!on_header()) return;  // it answered, or continues once 100 Continue is sent
        continue;
      }
      if (used == 0) break;
    }
    if (parser_->is_done()) return on_request();
    read_more();
  }

  // The header is complete: true to go on reading the body.
  bool on_header() {
    const auto& header = parser_->get();
    if (shared_->options.read_only && header.method() != http::verb::get) {
      refuse(405, "this listener serves reports only (GET); " +
                      std::string(header.method_string()) + " is not allowed");
      return false;
    }
    if (shared_->handler.body_limit) {
      HttpRequest head;
      head.method = std::string(header.method_string());
      head.path = decode_path({header.target().data(), header.target().size()});
      const std::size_t limit = shared_->handler.body_limit(head);
      if (limit < body_limit_) {
        body_limit_ = limit;
        // Beast checks a Content-Length against its limit while reading the header, already
        // done: this one is checked here, a chunked body as it arrives.
        if (const auto length = parser_->content_length(); length && *length > limit) {
          fail(http::error::body_limit);
          return false;
        }
        parser_->body_limit(limit);
      }
    }
    parser_->eager(true);
    if (!beast::iequals(header[http::field::expect], "100-continue")) return true;
    asio::async_write(stream_, asio::buffer(kContinue),
                      [self = this->shared_from_this()](error_code ec, std::size_t) {
                        if (self->closed_) return;
                        if (ec) return self->fail(ec);
                        self->parse();
                      });
    return false;
  }

  void on_request() {
    disarm();
    ++requests_;
    // An idle connection keeps no big read buffer (4,096 of them may be open).
    if (buffer_.size() == 0 && buffer_.capacity() > kBodyReadSize / 4) buffer_.shrink_to_fit();
    auto& message = parser_->get();
    keep_alive_ = message.keep_alive();
    version_ = message.version();
    HttpRequest request;
    request.method = std::string(message.method_string());
    request.path = decode_path({message.target().data(), message.target().size()});
    request.query = query_of({message.target().data(), message.target().size()});
    request.authorization = std::string(message[http::field::authorization]);
    request.body = std::move(message.body());
    parser_.reset();
    busy = true;
    shared_->begin_reply();
    const HttpHandler& handler = shared_->handler;
    if (handler.may_block && handler.may_block(request)) {
      shared_->pool_work.fetch_add(1);
      shared_->blocking->post(
          [self = this->shared_from_this(), request = std::move(request)]() mutable {
            auto reply = std::make_shared<HttpReply>(self->serve(request));
            // Not asio::post: that wakes the I/O thread while holding its io_context's lock
            // (io_thread_inbox.h).
            self->inbox_->push([self, reply] { self->send(std::move(*reply)); });
            Shared& shared = *self->shared_;
            if (shared.pool_work.fetch_sub(1) == 1) {
              std::lock_guard lock(shared.mu);
              shared.pool_idle.notify_all();
            }
          });
      return;
    }
    send(serve(request));
  }

  HttpReply serve(const HttpRequest& request) {
    auto begin = Clock::now();
    HttpReply reply;
    try {
      reply = shared_->handler.serve(request);
    } catch (const std::exception& e) {
      reply = {500, "application/json", error_body(std::string("internal error: ") + e.what())};
    }
    if (shared_->handler.observe) {
      shared_->handler.observe(request, reply.status,
                               std::chrono::duration<double>(Clock::now() - begin).count());
    }
    return reply;
  }

  // Sends a reply to a request that was read completely (busy is set).
  void send(HttpReply reply) {
    bool keep_alive = keep_alive_ && !shared_->is_draining();
    write(std::move(reply), keep_alive, [self = this->shared_from_this(), keep_alive](bool ok) {
      self->busy = false;
      self->served = true;
      self->shared_->end_reply();
      if (!ok || !keep_alive) return self->close();
      self->next_request();
    });
  }

  // Writes the status line and headers into head_ (its capacity is kept between replies) and
  // sends them with the body in one gather write.
  template <class Done>
  void write(HttpReply reply, bool keep_alive, Done done) {
    reply_ = std::move(reply);
    head_.assign(version_ == 10 ? "HTTP/1.0 " : "HTTP/1.1 ");
    append_number(head_, static_cast<std::size_t>(reply_.status));
    head_ += ' ';
    const auto reason = http::obsolete_reason(static_cast<http::status>(reply_.status));
    head_.append(reason.data(), reason.size());
    head_ += "\r\nContent-Type: ";
    head_ += reply_.content_type;
    head_ += "\r\nContent-Length: ";
    append_number(head_, reply_.body.size());
    // HTTP/1.1 keeps a connection alive unless told; HTTP/1.0 closes it unless told.
    if (version_ >= 11 && !keep_alive) head_ += "\r\nConnection: close";
    if (version_ < 11 && keep_alive) head_ += "\r\nConnection: keep-alive";
    head_ += "\r\n\r\n";
    sent_ = 0;
    write_deadline_ = Clock::now() + shared_->options.read_timeout;
    writing = true;
    write_some(std::move(done));
  }

  // Sends what is left of head_ and reply_.body as the client takes it, all of it within
  // read_timeout. While more than max_unread_reply_bytes is left, the client must also take
  // some every unread_reply_stall, or the connection is reset and the reply freed: a client
  // that sends requests and reads no answer holds at most that much of the server's memory for
  // longer than a moment. (What the kernel took is in its socket buffers, not in the heap.)
  template <class Done>
  void write_some(Done done) {
    const auto& options = shared_->options;
    const std::size_t total = head_.size() + reply_.body.size();
    const std::size_t unsent = total - sent_;
    arm_until(unsent > options.max_unread_reply_bytes
                  ? std::min(write_deadline_, Clock::now() + options.unread_reply_stall)
                  : write_deadline_);
    std::array<asio::const_buffer, 2> buffers{asio::buffer(head_), asio::buffer(reply_.body)};
    if (sent_ < head_.size()) {
      buffers[0] += sent_;
    } else {
      buffers[0] = asio::const_buffer();
      buffers[1] += sent_ - head_.size();
    }
    stream_.async_write_some(
        buffers, [self = this->shared_from_this(), done, total](error_code ec, std::size_t n) {
          self->sent_ += n;
          if (!ec && !self->closed_ && self->sent_ < total) return self->write_some(done);
          self->disarm();
          self->writing = false;
          self->reply_ = {};
          // A client that took too little of its reply in time: reset, so the kernel drops
          // what it still holds for it too.
          if (ec && self->timed_out_) self->close(/*reset=*/true);
          done(!ec && !self->closed_);
        });
  }

  // A request the server answers itself (limits, bad syntax): reply, then close. A client that
  // may still be sending (413, 431, 400) is drained for a moment first so it reads the reply;
  // a stalled one (408) is closed at once.
  void refuse(int status, const std::string& message) {
    HttpRequest request;
    if (parser_ && parser_->is_header_done()) {
      request.method = std::string(parser_->get().method_string());
      request.path = decode_path({parser_->get().target().data(), parser_->get().target().size()});
      version_ = parser_->get().version();
    }
    if (shared_->handler.observe) shared_->handler.observe(request, status, 0);
    write({status, "application/json", error_body(message)}, /*keep_alive=*/false,
          [self = this->shared_from_this(), status](bool ok) {
            if (!ok || status == 408) return self->close();
            self->linger();
          });
  }

  void fail(error_code ec) {
    const bool got_some = parser_ && parser_->got_some();
    const auto& options = shared_->options;
    if (ec == http::error::header_limit) {
      return refuse(431, "request line and headers larger than " +
                             std::to_string(options.max_header_bytes) + " bytes");
    }
    if (ec == http::error::body_limit) {
      return refuse(413, "request body larger than " + std::to_string(body_limit_) + " bytes");
    }
    if (timed_out_) {
      if (!got_some) return close();  // a connection that never sent a byte: nothing to answer
      return refuse(408, "request not complete within " +
                             std::to_string(options.read_timeout.count()) + " ms");
    }
    const bool parse_error =
        ec.category() == http::make_error_code(http::error::end_of_stream).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message;
    if (parse_error) return refuse(400, "malformed HTTP request: " + ec.message());
    close();  // the client went away (end of stream, reset) or the server is closing it
  }

  // Stops sending, then reads and drops what the client still sends, for at most kLinger.
  void linger() {
    error_code ignored;
    socket().shutdown(tcp::socket::shutdown_send, ignored);
    linger_until_ = Clock::now() + kLinger;
    arm(kLinger);
    discard();
  }
  void discard() {
    if (!sink_) sink_ = std::make_unique<std::array<char, 16384>>();
    socket().async_read_some(asio::buffer(*sink_),
                             [self = this->shared_from_this()](error_code ec, std::size_t) {
                               if (ec || self->closed_ || Clock::now() >= self->linger_until_) {
                                 return self->close();
                               }
                               self->discard();
                             });
  }

  // reset: an abortive close (RST): the kernel drops the unsent bytes it holds for the client
  // at once instead of trying to deliver them.
  void close(bool reset = false) {
    if (closed_) return;
    closed_ = true;
    disarm();
    timer_.cancel();  // its wait holds the session
    end_handshake();
    error_code ignored;
    if (reset) {
      socket().set_option(asio::socket_base::linger(true, 0), ignored);
    } else {
      socket().shutdown(tcp::socket::shutdown_both, ignored);
    }
    socket().close(ignored);
  }

  Stream stream_;
  asio::steady_timer timer_;
  std::shared_ptr<Shared> shared_;
  IoThreadInbox* inbox_;  // the I/O thread's; outlives every session (HttpServer::Impl)
  beast::flat_buffer buffer_;
  std::optional<Parser> parser_;
  bool header_checked_ = false;  // on_header() ran for this request
  std::size_t body_limit_ = 0;   // this request's, set by next_request() and on_header()
  bool started_ = false;         // this request's first byte was read
  HttpReply reply_;              // the reply being sent
  std::string head_;             // its status line and headers
  std::size_t sent_ = 0;         // bytes of head_ and then reply_.body the kernel took
  Clock::time_point write_deadline_;  // the whole reply's
  std::unique_ptr<std::array<char, 16384>> sink_;
  std::list<std::weak_ptr<Shared::Connection>>::iterator self_in_list_;
  bool registered_ = false;
  std::uint64_t timer_generation_ = 0;
  Clock::time_point deadline_ = Clock::time_point::max();
  Clock::time_point wait_until_;
  bool waiting_ = false;  // a timer wait is in progress, until wait_until_
  bool timed_out_ = false;
  bool closed_ = false;
  bool keep_alive_ = true;
  unsigned version_ = 11;
  std::uint64_t requests_ = 0;
  Clock::time_point linger_until_;
};

}  // namespace

struct HttpServer::Impl {
  std::shared_ptr<Shared> shared = std::make_shared<Shared>();
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
  // contexts[i]'s inbox for replies from the blocking pool. Declared after the contexts: each
  // inbox's eventfd is closed before its io_context goes.
  std::vector<std::unique_ptr<IoThreadInbox>> inboxes;
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
    IoThreadInbox& inbox = *inboxes[index];
    tcp::socket socket(io);
    const int fd = accepted.release(ec);
    if (!ec) socket.assign(protocol, fd, ec);
    if (ec) return;
    asio::post(io, [this, &inbox, socket = std::move(socket)]() mutable {
      if (tls) {
        std::make_shared<Session<asio::ssl::stream<tcp::socket>>>(
            asio::ssl::stream<tcp::socket>(std::move(socket), *tls), shared, inbox)
            ->start();
      } else {
        std::make_shared<Session<tcp::socket>>(std::move(socket), shared, inbox)->start();
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
    auto inbox = IoThreadInbox::open(*impl.contexts.back());
    if (!inbox) return Error{"HttpServer::start: " + inbox.message()};
    impl.inboxes.push_back(std::move(*inbox));
  }
  impl.acceptor.emplace(*impl.contexts.front());
  impl.accept_retry.emplace(*impl.contexts.front());
  Shared& shared = *impl.shared;
  shared.options = options;
  shared.handler = std::move(handler);
  impl.blocking = options.blocking;
  if (!impl.blocking && shared.handler.may_block) impl.blocking = start_blocking_pool();
  shared.blocking = impl.blocking.get();
  std::size_t descriptors = descriptor_limit();
  shared.max_connections = std::max<std::size_t>(
      1, std::min(options.max_connections, descriptors > 2 * kReservedDescriptors
                                               ? descriptors - kReservedDescriptors
                                               : descriptors / 2));
  server->host_ = options.host;
  if (!options.tls_cert_file.empty()) {
    impl.tls.emplace(asio::ssl::context::tls_server);
    error_code ec;
    impl.tls->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                              asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                              asio::ssl::context::no_tlsv1_1,
                          ec);
    impl.tls->use_certificate_chain_file(options.tls_cert_file, ec);
    if (ec) return Error{"TLS certificate " + options.tls_cert_file + ": " + ec.message()};
    impl.tls->use_private_key_file(options.tls_key_file, asio::ssl::context::pem, ec);
    if (ec) return Error{"TLS key " + options.tls_key_file + ": " + ec.message()};
    // An idle TLS connection gives its record buffers back (about 34 KB each) until it reads
    // or writes again: thousands of kept-alive or stalled connections hold only their state.
    SSL_CTX_set_mode(impl.tls->native_handle(), SSL_MODE_RELEASE_BUFFERS);
    server->tls_ = true;
  }
  error_code ec;
  auto address = asio::ip::make_address(options.host, ec);
  if (ec) return Error{"cannot listen on '" + options.host + "': not an IP address"};
  tcp::endpoint endpoint(address, static_cast<unsigned short>(options.port));
  impl.acceptor->open(endpoint.protocol(), ec);
  if (!ec) impl.acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl.acceptor->bind(endpoint, ec);
  if (!ec) impl.acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Error{"cannot listen on " + options.host + ":" + std::to_string(options.port) + ": " +
                 ec.message()};
  }
  server->port_ = impl.acceptor->local_endpoint().port();
  // start() returns once every I/O thread has its scheduling class and its name, so whoever
  // looks at the process after start (a health probe, ps, a test) sees the server as it serves.
  auto ready = std::make_shared<Countdown>(impl.contexts.size());
  for (auto& io : impl.contexts) {
    impl.threads.emplace_back(
        [&io = *io, ready, slice = options.thread_slice, request_class = options.request_class] {
          // Whether the kernel grants the class or the slice is the caller's to report (alloxd_main
          // probes both): this thread serves either way.
          (void)(request_class ? enter_request_class(slice) : run_this_thread_interactively(slice));
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
  std::vector<std::shared_ptr<Shared::Connection>> open;
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
  Shared& shared = *impl_->shared;
  bool drained = false;
  {
    std::unique_lock lock(shared.mu);
    drained = shared.drained.wait_for(lock, deadline, [&] { return shared.in_flight == 0; });
  }
  if (drained) impl_->join();
  return drained;
}

}  // namespace allox::extender
