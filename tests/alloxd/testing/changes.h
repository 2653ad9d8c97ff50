// Waiting on events instead of sleeping: a test states what it waits for as a predicate, and
// Changes re-checks it after every event that could make it true (an object the fake API server
// stored or removed, a plan alloxd published, a change alloxd's watch brought in), never on a
// timer. The deadline only bounds a test that would otherwise hang on a bug.
//
//   testing::Changes changes;
//   changes.watch(api);                          // the fake API server's object changes
//   options.on_change = changes.notifier();      // alloxd's plans and watch changes
//   ASSERT_TRUE(changes.until([&] { return service->ready(); }));
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

#include "kubesim/fake_api_server.h"

namespace allox::extender::testing {

class Changes {
 public:
  Changes() = default;
  ~Changes();
  Changes(const Changes&) = delete;
  Changes& operator=(const Changes&) = delete;

  // Subscribes to the API server's object store; `api` must outlive this object.
  void watch(emulator::FakeApiServer& api);
  // The same for a bare store (the emulator's tests); `objects` must outlive this object.
  void watch(emulator::ApiObjects& objects);
  // A callback that counts as an event (ServiceOptions::on_change); valid while this lives.
  std::function<void()> notifier();
  void notify();

  // True as soon as `done()` holds, re-checked after each event; false if it still does not
  // hold at the deadline. `done` runs on the caller's thread without any of Changes' locks.
  bool until(const std::function<bool()>& done,
             std::chrono::milliseconds timeout = std::chrono::seconds(30));

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t events_ = 0;
  emulator::ApiObjects* objects_ = nullptr;
  int subscription_ = 0;
};

}  // namespace allox::extender::testing
