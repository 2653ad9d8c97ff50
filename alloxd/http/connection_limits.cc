// The listener's caps on what clients hold: connections (at the cap the least useful are
// closed) and TLS handshakes in progress (at the cap the oldest are reset).
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
    for (bool served_ones : {false, true}) {
      for (auto it = open.begin(); it != open.end() && idle.size() < excess; ++it) {
        auto c = it->lock();
        if (c && !c->busy && c->served == served_ones) idle.push_back(std::move(c));
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

void ListenerState::make_handshake_room() {
  const std::size_t cap = std::max<std::size_t>(1, options.max_handshakes);
  const std::size_t now_in_progress = handshakes.load();
  if (now_in_progress < cap) return;
  std::vector<std::shared_ptr<Connection>> victims;
  {
    std::lock_guard lock(mu);
    const std::size_t excess = now_in_progress - cap + 1;
    for (auto it = open.begin(); it != open.end() && victims.size() < excess; ++it) {
      auto c = it->lock();
      if (c && c->handshaking.exchange(false)) {
        --handshakes;
        victims.push_back(std::move(c));
      }
    }
  }
  for (auto& c : victims) c->reset();
}

}  // namespace allox::extender
