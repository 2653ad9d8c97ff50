// What a listener's connections share with it: the options and handler, the open connections in
// accept order (the caps evict from them), the replies in flight (stop() drains them); and the
// sessions that serve one accepted connection each. Internal to http_server.cc and its parts.
//
// Thread-safety: the fields are atomics or under `mu`; a session runs on its I/O thread alone.
#pragma once

// First: Boost.Asio's awaitable.hpp uses std::exchange without including <utility>.
#include <utility>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <condition_variable>
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>

#include "alloxd/http/blocking_pool.h"
#include "alloxd/http/http_server.h"

namespace allox::extender {

// What every connection shares with the server: the options, the handler, the open connections
// in accept order (for eviction at the cap) and the count of replies in flight (for draining).
struct ListenerState {
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
    // Posts a reset to the connection's thread unless, by the time it runs, the ClientHello
    // was read or bytes from the client wait there to be read (a ClientHello that arrived
    // while the thread was busy: it is not stalled).
    virtual void reset_if_still_awaiting_hello() = 0;
    std::atomic<bool> busy{false};            // a complete request is being answered
    std::atomic<bool> served{false};          // at least one reply was sent
    std::atomic<bool> writing{false};         // its reply is composed and being sent
    std::atomic<bool> handshaking{false};     // its TLS handshake is not done
    std::atomic<bool> awaiting_hello{false};  // its TLS ClientHello has not all arrived
  };
  std::mutex mu;
  std::condition_variable drained;
  std::list<std::weak_ptr<Connection>> open;
  std::size_t open_count = 0;
  // Counted without the lock (three times per request otherwise); the lock is taken only to
  // wake a stop() waiting for the last reply.
  std::atomic<int> in_flight{0};
  std::atomic<bool> draining{false};
  // Set by stop() once it saw no reply in flight: from then on no request is answered, so the
  // count it saw stays 0 while the server's threads are joined.
  std::atomic<bool> closed{false};
  std::atomic<std::size_t> handshakes{0};  // TLS handshakes in progress
  std::atomic<std::size_t> hellos{0};      // TLS connections waiting for their ClientHello

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
  // At the cap, asks connections to close, enough to admit one more: first those still waiting
  // for their TLS ClientHello, then those that never completed a request (stalled or slow
  // clients), each oldest first, then idle kept-alive ones
  // (kube-scheduler's), oldest first, then those whose reply waits for a client that does not
  // read it, oldest first. Connections whose handler is running are never chosen.
  void make_room();
  // Before a TLS handshake starts: at max_handshakes in progress, the oldest are closed, so
  // clients that open connections and never finish their handshake hold a bounded number of
  // TLS states, and a real client's handshake (milliseconds) always gets its turn.
  void make_handshake_room();
  // Before a TLS connection waits for its ClientHello: at max_handshakes waiting, the oldest
  // waiting are closed. Each holds a TLS stream's buffers; a real client leaves this state as
  // soon as its first segment arrives.
  void make_hello_room();
  // False once the server is closed: the request is not answered (its connection closes). The
  // count goes up before closed is read and stop() sets closed before it reads the count again
  // (both sequentially consistent): either the reply is counted or the request is refused.
  bool begin_reply() {
    in_flight.fetch_add(1);
    if (!closed.load()) return true;
    end_reply();
    return false;
  }
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

// Starts serving one accepted connection on the calling thread, the I/O thread whose io_context
// owns `socket` (session.cc). The session keeps itself alive until it closes.
void start_session(boost::asio::ip::tcp::socket socket, std::shared_ptr<ListenerState> shared);
void start_session(boost::asio::ssl::stream<boost::asio::ip::tcp::socket> stream,
                   std::shared_ptr<ListenerState> shared);

}  // namespace allox::extender
