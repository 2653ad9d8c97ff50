// The pod side of the cluster feed: allox's pods as the watch shows them, kept for the
// controller (pods, sync_pods) and recorded in the planner in bursts (flush_pending): waiting
// pods registered, bound ones started, ended ones completed, deleted ones forgotten.
//
// Runs on the pod informer's thread; the observed pods are read from others under mu_.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "alloxd/cache/cluster_feed.h"
#include "kube/informer.h"

namespace allox::extender {
namespace feed {

// Counts a handler call in flight: the feed is busy from the moment it records what it saw
// until the planner has the change and the controller was told (ClusterFeed::busy).
class Handling {
 public:
  explicit Handling(std::atomic<int>& count) : count_(count) { ++count_; }
  ~Handling() { --count_; }
  Handling(const Handling&) = delete;
  Handling& operator=(const Handling&) = delete;

 private:
  std::atomic<int>& count_;
};

// A pod's key in the observed pods: "namespace/name".
std::string key_of(const std::string& namespace_name, const std::string& name);

// The string at object[a][b], or "" when either is missing or not of that shape.
std::string string_at(const nlohmann::json& object, const char* a, const char* b);

}  // namespace feed

class ClusterFeed::PodHandler final : public kube::InformerHandler {
 public:
  PodHandler(Planner& planner, const ExtenderConfig& config, const JobHandler& jobs,
             std::function<void()> on_change)
      : planner_(planner), config_(config), jobs_(jobs), on_change_(std::move(on_change)) {}

  void on_replace(const std::vector<nlohmann::json>& objects) override;
  void on_upsert(const nlohmann::json& object) override;
  void on_delete(const nlohmann::json& object) override;
  void on_caught_up() override;
  // The Job `job_key` ("namespace/name") changed or appeared: the pods held back for it are
  // looked at again (from the Job informer's thread: serialised with the pod events).
  void job_seen(const std::string& job_key);

  // The controller is told once the planner has what the watch showed: with a burst pending,
  // that is when on_caught_up records it.
  void notify_unless_pending();

  // forget() runs outside mu_: it calls into the planner, which must not wait on the feed.
  void forget_if_known(const std::string& namespace_name, const std::string& name);

  bool synced() const { return synced_.load(); }
  bool busy() const { return handling_.load() > 0 || pending_work_.load(); }
  std::map<std::string, ObservedPod> pods() const;
  std::vector<std::string> sync_pods(PodMirror& mirror, std::vector<std::string>* changed);
  std::optional<std::string> watched_job(const std::string& key) const;

 private:
  std::optional<ObservedPod> ours(const nlohmann::json& object) const;
  // A pod its Job controls: the Job's allox job and gang, its refusal, or held back until the
  // Job is seen (awaiting_job).
  void resolve_job(ObservedPod& pod) const;
  // Remembers (or, when it no longer waits, forgets) a pod held back for its Job.
  void hold(const ObservedPod& pod, const nlohmann::json& object);
  // Whether the Job will replace its pod that failed (or vanished: `vanished` counts it as the
  // Job controller does): the Job is known, not finished, and within its backoffLimit.
  bool job_retries(const ObservedPod& pod, bool vanished) const;
  void requeue(const JobVariant& variant);
  void upsert(const nlohmann::json& object);

  // Where the pod's job stands in the book, as far as this pod is concerned.
  enum class Standing { kUnknown, kWaiting, kRunsAsThisPod, kRunsAsAnother, kDone };
  Standing standing(const ObservedPod& pod) const;

  void apply(const ObservedPod& pod);
  // A gang's member (pod_handler_gangs.cc): bound, ended or deleted, recorded at once (a gang
  // starts when all its members are bound, and ends when all have ended). Whether it was
  // handled; a pending member is registered as any pod is.
  bool apply_gang_member(const ObservedPod& pod);
  bool gang_member_gone(const ObservedPod& pod);

  // What the watch showed since the last call, recorded in bursts: the waiting pods registered
  // in one store transaction, then the ended jobs completed in another (a burst of pods costs
  // one commit and one hold of the planner's writers' lock, not one each). They touch different
  // jobs (a pod is waiting or its job runs), so registering first keeps the watch's order where
  // it matters. True when there was anything.
  bool flush_pending();

  void forget(const ObservedPod& pod);

  // Under mu_. With no mirror syncing (a replica that does not lead), the keys would pile up:
  // past a bound the next sync copies everything instead.
  void mark_dirty(std::string key);

  Planner& planner_;
  const ExtenderConfig& config_;
  const JobHandler& jobs_;
  std::function<void()> on_change_;
  // The pod informer's events and job_seen, one at a time (the state below is theirs).
  std::mutex serial_;
  // Pods seen before their Job: Job key -> pod key -> the pod as last seen.
  std::map<std::string, std::map<std::string, nlohmann::json>> held_;
  mutable std::mutex mu_;
  ObservedPods pods_;
  std::set<std::string> dirty_;   // keys written or erased since the last sync_pods
  std::uint64_t generation_ = 0;  // bumped by every sync_pods: the mirror it brought up to date
  std::atomic<bool> synced_{false};
  std::atomic<int> handling_{0};
  // Waiting pods whose registration is pending and jobs whose end is (informer thread only),
  // until flush_pending.
  std::vector<JobVariant> pending_;
  std::set<std::string> pending_keys_;
  std::vector<JobVariant> pending_completions_;
  std::set<std::string> pending_completion_jobs_;
  std::atomic<bool> pending_work_{false};  // either is not empty: the feed is busy
};

}  // namespace allox::extender