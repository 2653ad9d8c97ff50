#include "alloxd/http/io_thread_inbox.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <string>

namespace allox::extender {

namespace asio = boost::asio;

Expected<std::unique_ptr<IoThreadInbox>> IoThreadInbox::open(asio::io_context& io) {
  const int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return Error{std::string("cannot create an eventfd: ") + std::strerror(errno)};
  std::unique_ptr<IoThreadInbox> inbox(new IoThreadInbox(io, fd));
  inbox->wait();
  return inbox;
}

IoThreadInbox::IoThreadInbox(asio::io_context& io, int event_fd) : event_(io, event_fd) {}

void IoThreadInbox::push(std::function<void()> work) {
  {
    std::unique_lock lock(mu_);
    if (broken_) {
      lock.unlock();
      // The eventfd failed once (never seen): the io_context's own queue still delivers.
      asio::post(event_.get_executor(), std::move(work));
      return;
    }
    pushed_.push_back(std::move(work));
  }
  if (woken_.exchange(true)) return;  // a wake-up is on its way and will find this work
  const std::uint64_t one = 1;
  // Cannot fail short of a counter at 2^64 - 2: the I/O thread resets it on every read.
  (void)!::write(event_.native_handle(), &one, sizeof one);
}

void IoThreadInbox::wait() {
  event_.async_read_some(asio::buffer(&event_count_, sizeof event_count_),
                         [this](boost::system::error_code ec, std::size_t) {
                           if (ec == asio::error::operation_aborted) return;
                           if (ec) {
                             std::lock_guard lock(mu_);
                             broken_ = true;
                           }
                           run_pushed();
                           if (!ec) wait();
                         });
}

void IoThreadInbox::run_pushed() {
  // Cleared before the work is taken: a push after the swap below writes the eventfd again.
  woken_.store(false);
  {
    std::lock_guard lock(mu_);
    running_.swap(pushed_);
  }
  for (auto& work : running_) work();
  running_.clear();
}

}  // namespace allox::extender
