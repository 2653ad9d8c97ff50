#include "tests/alloxd/testing/changes.h"

namespace allox::extender::testing {

Changes::~Changes() {
  if (objects_ != nullptr) objects_->unsubscribe(subscription_);
}

void Changes::watch(emulator::FakeApiServer& api) {
  watch(api.objects());
}

void Changes::watch(emulator::ApiObjects& objects) {
  objects_ = &objects;
  subscription_ = objects.subscribe([this](const emulator::Change&) { notify(); });
}

std::function<void()> Changes::notifier() {
  return [this] { notify(); };
}

void Changes::notify() {
  {
    std::lock_guard lock(mu_);
    ++events_;
  }
  cv_.notify_all();
}

bool Changes::until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::uint64_t seen;
    {
      std::lock_guard lock(mu_);
      seen = events_;
    }
    // Checked outside mu_: the predicate takes the service's and the API server's locks, whose
    // threads call notify() while holding them.
    if (done()) return true;
    std::unique_lock lock(mu_);
    if (!cv_.wait_until(lock, deadline, [&] { return events_ != seen; })) return done();
  }
}

}  // namespace allox::extender::testing
