#include "alloxd/http/deadline.h"

#include <utility>

namespace allox::extender {

Deadline::Deadline(const boost::asio::any_io_executor& executor, std::function<void()> expired)
    : timer_(executor), expired_(std::move(expired)) {}

void Deadline::cancel() {
  disarm();
  timer_.cancel();
}

void Deadline::wait(std::shared_ptr<void> owner) {
  waiting_ = true;
  wait_until_ = deadline_;
  const std::uint64_t generation = ++generation_;
  timer_.expires_at(deadline_);  // ends a wait in progress, whose handler is then stale
  timer_.async_wait(
      [this, owner = std::move(owner), generation](boost::system::error_code ec) mutable {
        if (generation != generation_) return;
        waiting_ = false;
        if (ec || deadline_ == Clock::time_point::max()) return;
        if (Clock::now() < deadline_) return wait(std::move(owner));
        timed_out_ = true;
        expired_();
      });
}

}  // namespace allox::extender
