// One connection's life: its requests read under the limits, answered (on the I/O thread or the
// blocking pool), and kept alive, lingered on or reset (listener_state.h).
#include <array>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "alloxd/http/deadline.h"
#include "alloxd/http/listener_state.h"
#include "alloxd/http/reply_head.h"
#include "alloxd/http/request_target.h"
#include "alloxd/http/tls_hello.h"

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

using Parser = http::request_parser<http::string_body>;

// Room to read into while a request's header arrives: a request line, its headers and a small
// body (a /filter at 100 NodeNames is about 1.6 KB) in one read. Kept by an idle connection.
constexpr std::size_t kHeaderReadSize = 4096;
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

// One connection: read a request under the limits, answer it, repeat while kept alive. It is
// owned by one I/O thread (its io_context has no other), so its handlers never run at once and
// need no strand; other threads reach it only by posting to its executor.
//
// Per request: one read that usually holds the whole request (parsed in place, no second read
// or epoll round trip to learn that the header is done), the handler, and one gather write of
// the status line and headers (a reused string) with the handler's body, not copied.
template <class Stream>
class Session : public ListenerState::Connection,
                public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(Stream stream, std::shared_ptr<ListenerState> shared)
      : stream_(std::move(stream)),
        deadline_(stream_.get_executor(),
                  [this] {
                    error_code ignored;
                    if (!closed_) socket().cancel(ignored);
                  }),
        shared_(std::move(shared)),
        buffer_(shared_->options.max_header_bytes + kBodyReadSize) {}
  ~Session() override {
    end_hello();
    end_handshake();
    if (registered_) shared_->remove(self_in_list_);
  }

  void start() {
    self_in_list_ = shared_->add(this->weak_from_this());
    registered_ = true;
    // Accepted just as the server stopped: stop_accepting() did not see it in the list.
    if (shared_->is_draining()) return close();
    if constexpr (kTls) {
      deadline_.arm(std::min(shared_->options.read_timeout, shared_->options.handshake_timeout),
                    *this);
      read_hello();
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

  void reset_if_still_awaiting_hello() override {
    asio::post(stream_.get_executor(), [self = this->shared_from_this()] {
      if (self->hello_read_) return;  // read since it was chosen, before this ran
      error_code ec;
      if (self->socket().available(ec) == 0 || ec) self->close(/*reset=*/true);
    });
  }

 private:
  static constexpr bool kTls = !std::is_same_v<Stream, tcp::socket>;

  tcp::socket& socket() { return beast::get_lowest_layer(stream_); }

  void end_handshake() {
    if (handshaking.exchange(false)) --shared_->handshakes;
  }
  void end_hello() {
    if (awaiting_hello.exchange(false)) --shared_->hellos;
  }

  // Reads the client's first TLS record, then hands it to the handshake, which only then takes
  // a handshake slot (tls_hello.h). Under the handshake's deadline, armed by start().
  void read_hello() {
    const std::size_t have = hello_.size();
    const std::size_t want = tls_first_record_bytes(hello_);
    if (have >= want) return handshake();
    hello_.resize(want);
    // A real client's ClientHello is usually in already: taken at once, it never waits (nor
    // can a flood of waiting connections push it out while its read completion is queued).
    error_code ec;
    socket().non_blocking(true, ec);
    const std::size_t n =
        ec ? 0 : socket().read_some(asio::buffer(hello_.data() + have, want - have), ec);
    hello_.resize(have + n);
    if (!ec) return read_hello();
    if (ec != asio::error::would_block && ec != asio::error::try_again) return close();
    hello_.resize(want);
    if (!awaiting_hello) {
      shared_->make_hello_room();
      awaiting_hello = true;
      ++shared_->hellos;
    }
    socket().async_read_some(asio::buffer(hello_.data() + have, want - have),
                             [self = this->shared_from_this(), have](error_code ec, std::size_t n) {
                               self->hello_.resize(have + n);
                               if (ec || self->closed_) return self->close();
                               self->read_hello();
                             });
  }
  void handshake() {
    hello_read_ = true;
    end_hello();
    shared_->make_handshake_room();
    handshaking = true;
    ++shared_->handshakes;
    stream_.async_handshake(asio::ssl::stream_base::server, asio::buffer(hello_),
                            [self = this->shared_from_this()](error_code ec, std::size_t) {
                              self->end_handshake();
                              std::string().swap(self->hello_);
                              if (ec || self->closed_) return self->close();
                              self->next_request();
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
      deadline_.arm(shared_->options.read_timeout, *this);
      return parse();
    }
    deadline_.arm(requests_ == 0 ? shared_->options.read_timeout : shared_->options.idle_timeout,
                  *this);
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
      deadline_.arm(shared_->options.read_timeout, *this);
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
    deadline_.disarm();
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
    request.authorization_headers = static_cast<int>(message.count(http::field::authorization));
    request.body = std::move(message.body());
    parser_.reset();
    if (!shared_->begin_reply()) return close();  // read after the server closed
    busy = true;
    const HttpHandler& handler = shared_->handler;
    if (handler.may_block && handler.may_block(request)) {
      shared_->pool_work.fetch_add(1);
      shared_->blocking->post([self = this->shared_from_this(),
                               request = std::move(request)]() mutable {
        auto reply = std::make_shared<HttpReply>(self->serve(request));
        // The server outlives this count (join() waits for it to reach 0), not the session.
        ListenerState& shared = *self->shared_;
        // Back to the connection's I/O thread, which alone touches the session: the
        // reference goes with the reply, so the session never ends on this thread, where
        // it would outlive its I/O context once the server is joined.
        auto executor = self->stream_.get_executor();
        asio::post(executor, [self = std::move(self), reply] { self->send(std::move(*reply)); });
        // Under the lock: join() can neither miss the wake-up nor destroy the state
        // before this thread has let go of it.
        std::lock_guard lock(shared.mu);
        if (shared.pool_work.fetch_sub(1) == 1) shared.pool_idle.notify_all();
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
      // A drain that began while this reply was being written ends the connection here: a
      // request read after it would outlive the server's wait for the replies in flight.
      if (!ok || !keep_alive || self->shared_->is_draining()) return self->close();
      self->next_request();
    });
  }

  // Writes the status line and headers into head_ (its capacity is kept between replies) and
  // sends them with the body in one gather write.
  template <class Done>
  void write(HttpReply reply, bool keep_alive, Done done) {
    reply_ = std::move(reply);
    compose_reply_head(head_, version_, reply_, keep_alive);
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
    deadline_.arm_until(unsent > options.max_unread_reply_bytes
                            ? std::min(write_deadline_, Clock::now() + options.unread_reply_stall)
                            : write_deadline_,
                        *this);
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
          self->deadline_.disarm();
          self->writing = false;
          self->reply_ = {};
          // A client that took too little of its reply in time: reset, so the kernel drops
          // what it still holds for it too.
          if (ec && self->deadline_.timed_out()) self->close(/*reset=*/true);
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
    if (deadline_.timed_out()) {
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
    deadline_.arm(kLinger, *this);
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
    deadline_.cancel();  // its wait holds the session
    end_hello();
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
  std::string hello_;  // a TLS connection's first record, until its handshake is done
  bool hello_read_ = false;
  Deadline deadline_;  // the pending read's or write's; cancels it when it passes
  std::shared_ptr<ListenerState> shared_;
  beast::flat_buffer buffer_;
  std::optional<Parser> parser_;
  bool header_checked_ = false;       // on_header() ran for this request
  std::size_t body_limit_ = 0;        // this request's, set by next_request() and on_header()
  bool started_ = false;              // this request's first byte was read
  HttpReply reply_;                   // the reply being sent
  std::string head_;                  // its status line and headers
  std::size_t sent_ = 0;              // bytes of head_ and then reply_.body the kernel took
  Clock::time_point write_deadline_;  // the whole reply's
  std::unique_ptr<std::array<char, 16384>> sink_;
  std::list<std::weak_ptr<ListenerState::Connection>>::iterator self_in_list_;
  bool registered_ = false;
  bool closed_ = false;
  bool keep_alive_ = true;
  unsigned version_ = 11;
  std::uint64_t requests_ = 0;
  Clock::time_point linger_until_;
};

}  // namespace

void start_session(tcp::socket socket, std::shared_ptr<ListenerState> shared) {
  std::make_shared<Session<tcp::socket>>(std::move(socket), std::move(shared))->start();
}

void start_session(asio::ssl::stream<tcp::socket> stream, std::shared_ptr<ListenerState> shared) {
  std::make_shared<Session<asio::ssl::stream<tcp::socket>>>(std::move(stream), std::move(shared))
      ->start();
}

}  // namespace allox::extender
