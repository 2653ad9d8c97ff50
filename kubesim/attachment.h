// What an emulator component running on its own thread (the kube-scheduler, a kubelet) holds on
// the shared cluster: its subscription to the store's changes and its listener on the clock's
// jumps. Both are taken together (the subscriber first sees every stored object) and released
// together by the destructor, which the component runs after joining its thread, so neither
// callback can outlive what it points at. Not thread-safe; one per component.
#pragma once

#include <functional>

#include "kubesim/api_objects.h"
#include "kubesim/sim_clock.h"

namespace allox::emulator {

class Attachment {
 public:
  Attachment(ApiObjects& objects, std::function<void(const Change&)> on_change,
             const SimClock& clock, std::function<void()> on_jump)
      : objects_(objects), clock_(clock) {
    subscription_ = objects_.subscribe(std::move(on_change), /*replay_existing=*/true);
    clock_listener_ = clock_.add_listener(std::move(on_jump));
  }
  ~Attachment() {
    clock_.remove_listener(clock_listener_);
    objects_.unsubscribe(subscription_);
  }
  Attachment(const Attachment&) = delete;
  Attachment& operator=(const Attachment&) = delete;

 private:
  ApiObjects& objects_;
  const SimClock& clock_;
  int subscription_ = 0, clock_listener_ = 0;
};

}  // namespace allox::emulator
