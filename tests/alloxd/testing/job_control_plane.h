// The emulated control plane batch/v1 Jobs need around an EndToEndCluster: kube-scheduler's
// emulator, fake kubelets and kube-controller-manager's Job controller (with its garbage
// collector), and the stepped clock's driver; and a record of every Job and pod deletion the
// API server's store made, to tell a Background delete (the Job first, its pods after) from an
// Orphan one.
//
// Thread-safety: JobControlPlane::run_until is called from one thread (the test's); the parts
// run on their own threads. Deletions is safe to read while the store writes.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kubesim/fake_kubelet.h"
#include "kubesim/job_controller.h"
#include "kubesim/kube_scheduler.h"
#include "tests/alloxd/testing/end_to_end_cluster.h"

namespace allox::extender::testing {

// Every Job deletion and pod deletion the store made, by resourceVersion (the store's order).
class Deletions {
 public:
  explicit Deletions(emulator::ApiObjects& objects);
  ~Deletions();
  Deletions(const Deletions&) = delete;
  Deletions& operator=(const Deletions&) = delete;

  std::map<std::string, std::uint64_t> jobs() const;  // Job name -> its deletion
  // The deletions of the pods Job `job` controlled.
  std::vector<std::uint64_t> pods_of(const std::string& job) const;

 private:
  emulator::ApiObjects& objects_;
  int id_ = 0;
  mutable std::mutex mu_;
  std::map<std::string, std::uint64_t> jobs_;
  std::map<std::string, std::vector<std::uint64_t>> pods_;
};

// Scheduler, kubelets and Job controller started on the cluster's clock; stopped by the
// destructor. The driver jumps the clock to the next timer once every part is quiet (as
// kubesim/replay.h's does).
class JobControlPlane {
 public:
  JobControlPlane(EndToEndCluster& cluster, emulator::FakeKubelet::RunSeconds run,
                  emulator::FakeKubelet::ExitCode exit_code);
  ~JobControlPlane();
  JobControlPlane(const JobControlPlane&) = delete;
  JobControlPlane& operator=(const JobControlPlane&) = delete;

  // Runs the cluster until `done` holds (true) or `simulated_limit` seconds pass (false).
  bool run_until(const std::function<bool()>& done, double simulated_limit);

 private:
  void step();

  EndToEndCluster& cluster_;
  emulator::FakeKubelet kubelet_;
  emulator::KubeScheduler scheduler_;
  emulator::JobController jobs_;
  int subscription_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t changes_ = 0;
};

}  // namespace allox::extender::testing
