// Plays the kubelets of every node for an ApiObjects store, on a SimClock: a pod that becomes
// bound is marked Running at once (status.phase, startTime, a running container status) and,
// after `run_seconds(pod)` simulated seconds, Succeeded (exit code 0), through the status
// subresource as a kubelet writes it. A pod deleted while running just goes away.
// run_seconds returning nullopt: the pod runs until deleted. exit_code (optional) decides how
// the container ends: 0 is Succeeded, anything else Failed (reason Error, that exit code), as
// a kubelet reports a pod with restartPolicy Never.
// Thread-safe: start() runs one timer thread; stop() (or the destructor) ends it. A stepped
// clock's jumps wake it.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "kubesim/api_objects.h"
#include "kubesim/sim_clock.h"

namespace allox::emulator {

class FakeKubelet {
 public:
  using RunSeconds = std::function<std::optional<double>(const nlohmann::json& pod)>;
  using ExitCode = std::function<int(const nlohmann::json& pod)>;
  FakeKubelet(ApiObjects& objects, const SimClock& clock, RunSeconds run_seconds,
              ExitCode exit_code = nullptr);
  ~FakeKubelet();
  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

  void start();
  void stop();

  // True when no bound pod waits to be started and no status write is under way (for a
  // discrete-event driver: sim_clock.h).
  bool idle() const;
  // The simulated instant of the next completion, or +inf.
  double next_finish() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace allox::emulator
