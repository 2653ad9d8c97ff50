// The listener's caps on what clients hold: connections (at the cap the least useful are
// closed), TLS connections waiting for their ClientHello and TLS handshakes in progress (at
// each cap the oldest are reset).
#include "alloxd/http/listener_state.h"

#include <algorithm>
#include <memory>
#include <vector>

namespace allox::extender {

void ListenerState::make_room() {
  std::vector<std::shared_ptr<Connection>> idle, writers;
  {
    std::lock_guard lock(mu);
    if (open_count < max_connections) return;
    std::size_t excess = open_count - max_connections + 1;
    // Stalled inside their first TLS record, then never served, then idle after a reply.
    const auto in_turn = [](const Connection& c, int turn) {
      if (c.busy) return false;
      if (turn == 0) return c.awaiting_hello.load();
      return !c.awaiting_hello && c.served == (turn == 2);
    };
    for (int turn = 0; turn < 3; ++turn) {
      for (auto it = open.begin(); it != open.end() && idle.size() < excess; ++it) {
        auto c = it->lock();
        if (c && in_turn(*c, turn)) idle.push_back(std::move(c));
      }
    }
    for (auto it = open.begin(); it != open.end() && idle.size() + writers.size() < excess; ++it) {
      auto c = it->lock();
      if (c && c->busy && c->writing) writers.push_back(std::move(c));
    }
  }
  for (auto& c : idle) c->close_unless_busy();
  for (auto& c : writers) c->close_if_writing();
}

namespace {

// At `cap` connections with `flag` set (counted by `count`), resets the oldest of them, enough
// to admit one more.
void reset_oldest(ListenerState& state, std::atomic<std::size_t>& count,
                  std::atomic<bool> ListenerState::Connection::*flag,
                  void (ListenerState::Connection::*reset)()) {
  const std::size_t cap = std::max<std::size_t>(1, state.options.max_handshakes);
  const std::size_t now_in_progress = count.load();
  if (now_in_progress < cap) return;
  std::vector<std::shared_ptr<ListenerState::Connection>> victims;
  {
    std::lock_guard lock(state.mu);
    const std::size_t excess = now_in_progress - cap + 1;
    for (auto it = state.open.begin(); it != state.open.end() && victims.size() < excess; ++it) {
      auto c = it->lock();
      if (c && ((*c).*flag).exchange(false)) {
        --count;
        victims.push_back(std::move(c));
      }
    }
  }
  for (auto& c : victims) ((*c).*reset)();
}

}  // namespace

void ListenerState::make_handshake_room() {
  reset_oldest(*this, handshakes, &Connection::handshaking, &Connection::reset);
}

void ListenerState::make_hello_room() {
  // Spared when its bytes are in: its read completion waits behind a flood's connections.
  reset_oldest(*this, hellos, &Connection::awaiting_hello,
               &Connection::reset_if_still_awaiting_hello);
}

}  // namespace allox::extender
