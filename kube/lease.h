// Leader election on a coordination.k8s.io/v1 Lease, the way client-go's leaderelection works:
// one holder at a time acts (removes gates, deletes variants, writes events); the others wait
// and take over when the holder stops renewing.
//
//   - no Lease: create it holding it;
//   - held by us: renew (PUT with its resourceVersion, so a concurrent writer gets 409);
//   - held by another: it is expired once its record (holder, renewTime, resourceVersion) has
//     not changed for leaseDurationSeconds of OUR clock since we first saw it (no trust in the
//     other replica's clock); then take it over (leaseTransitions + 1);
//   - leading but unable to renew for `duration`: step down.
// release() hands the Lease back (holderIdentity cleared, one PUT) so a successor need not wait.
//
// Thread-safe. step() is one attempt at a caller-given time (tests drive it with a fake clock);
// start() runs step() every `retry` on its own thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "kube/client.h"

namespace allox::kube {

struct LeaseOptions {
  std::string namespace_name = "kube-system";
  std::string name = "allox-scheduler";
  std::string identity;  // this replica, e.g. the pod name
  std::chrono::seconds duration{15};
  std::chrono::milliseconds retry{2000};
};

class LeaderLease {
 public:
  using Clock = std::chrono::steady_clock;
  // on_change(leading) runs on the caller of step() whenever leadership changes.
  LeaderLease(KubeClient& client, LeaseOptions options, std::function<void(bool)> on_change);
  ~LeaderLease();

  void start();
  void stop();  // stops the thread and releases the Lease when leading
  bool leading() const { return leading_.load(); }

  // One attempt to acquire or renew at `now`. Returns whether this replica leads afterwards.
  bool step(Clock::time_point now);
  // Clears holderIdentity if we hold the Lease.
  void release();

 private:
  std::string path() const;
  void set_leading(bool leading);

  KubeClient& client_;
  LeaseOptions options_;
  std::function<void(bool)> on_change_;
  std::atomic<bool> leading_{false};
  std::mutex step_mu_;
  // The other holder's record as last seen, and when (our clock) it last changed.
  std::string observed_record_;
  Clock::time_point observed_at_{};
  Clock::time_point last_renewed_{};
  nlohmann::json held_;  // the Lease as we last wrote it, while leading
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace allox::kube
