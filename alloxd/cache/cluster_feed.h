// The cluster side, by watching: list + watch (kube/informer.h) of allox's pods and of
// the nodes, fed into the planner, and the latest observed state of each pod kept for the
// controller (gates, node, phase).
//
//   pods  (spec.schedulerName == config.scheduler_name; checked again here, never trusted)
//     unbound and pending      -> a variant of its job (Planner::register_variant), so /filter
//                                 and the plan know it before kube-scheduler asks
//     bound (spec.nodeName)    -> if its job is still queued: the job started there
//     Succeeded / Failed       -> the job it runs completes
//     deleted (event, deletionTimestamp, or absent from a re-list)
//                              -> the job it runs completes; a waiting variant leaves its job
//   nodes -> the inventory (allocatable devices and CPU bundles), replaced on every change
//   jobs  (batch/v1, job_handler.h) -> a pod a Job controls belongs to the allox job the Job
//         names, with the gang its shape makes (model/job.h); a shape allox refuses leaves the
//         pod out of the book with the reason. A Job's pod that fails (or vanishes) while the
//         Job will replace it queues its job again (Planner::requeue) instead of ending it: the
//         replacement is the same job. The Jobs are listed before the pods.
//
// Pods of other schedulers are ignored. A pod whose annotations cannot be read is kept with
// its error (the controller reports it) and never enters the book.
//
// Thread-safe. Handler calls come from each informer's thread; pods() and synced() from any.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "alloxd/config.h"
#include "alloxd/model/job.h"
#include "alloxd/cache/job_handler.h"
#include "alloxd/plan/planner.h"
#include "kube/client.h"
#include "kube/events.h"
#include "kube/informer.h"
#include "kube/pods.h"

namespace allox::extender {

// One pod as last seen from the API server.
struct ObservedPod {
  kube::ObjectRef ref;
  std::optional<JobVariant> variant;  // unset when its annotations cannot be read
  std::string read_error;
  std::vector<std::string> gates;  // spec.schedulingGates names
  // Where spec.affinity has room for the node pin a gate's removal adds (kube/pods.h).
  kube::AffinityRoom affinity_room = kube::AffinityRoom::kNoAffinity;
  std::string pinned_node;         // the node alloxd's pin names (kube::pinned_node), if any
  std::string node_name;           // spec.nodeName, set once bound
  std::string phase;               // status.phase
  std::string nudge;               // the allox.io/nudge annotation
  std::string resource_version;    // metadata.resourceVersion when last seen
  bool deleting = false;           // metadata.deletionTimestamp is set: as good as gone
  // status.conditions holds PodScheduled=False with reason Unschedulable: kube-scheduler tried
  // the pod and parked it (it keeps the condition until the pod binds).
  bool turned_away = false;
  // The batch/v1 Job that controls the pod (model/job.h): then `variant` names the Job's allox
  // job and gang, and the Job, not the pod, is the variant the controller keeps or deletes.
  std::optional<JobOwner> owner_job;
  // Set when allox will not run the pod's Job (its shape: model/job.h gang_of): `variant` is
  // unset and the controller says why in a Parked event on the Job.
  std::string job_refusal;
  // The pod's Job has not been seen yet (two watches): held back, looked at again when it is.
  bool awaiting_job = false;
  bool pending() const { return node_name.empty() && (phase.empty() || phase == "Pending"); }
};

// The observed pods by "namespace/name". Hashed: at 100,000 pods a key shares most of its
// characters with its neighbours ("bench/job-12345-gpu"), so an ordered map's ~17 comparisons
// per lookup were a third of the watch's CPU.
using ObservedPods = std::unordered_map<std::string, ObservedPod>;

// A consumer's copy of the observed pods, brought up to date by ClusterFeed::sync_pods.
struct PodMirror {
  ObservedPods pods;
  std::uint64_t generation = 0;  // the feed's sync this copy reflects (0: none)
};

class ClusterFeed {
 public:
  // client and planner (and metrics, when given) must outlive the feed. on_change runs (on an
  // informer thread) after every pod change, so the controller can look again. metrics counts
  // the informers' lists and watch restarts.
  ClusterFeed(kube::KubeClient& client, Planner& planner, const ExtenderConfig& config,
              std::function<void()> on_change, Metrics* metrics = nullptr);
  ~ClusterFeed();

  void start();
  void stop();
  // True once the pods and the nodes have been listed, and the Jobs (or their list failed).
  bool synced() const;
  // True while a watch event or list is being handled: from the moment pods() shows what it
  // saw until the planner has the change and on_change has run (discrete-event drivers must
  // not mistake that moment for quiet).
  bool busy() const;
  // Re-lists both (a replica taking over).
  void relist();

  // The observed pods, by "namespace/name", in key order (a copy of every pod: reports, not per
  // pass).
  std::map<std::string, ObservedPod> pods() const;
  // Brings `mirror` up to what pods() would return, copying only the pods changed since its
  // last sync (the feed marks each key it writes or erases); all of them on its first sync, or
  // when another mirror synced in between. Returns the keys that left the mirror, sorted. A
  // controller pass at 100,000 pods then copies the few that changed, not the map. `changed`,
  // when given, receives every key the sync wrote into the mirror (new or changed pods; on a
  // full copy, all of them), sorted: whatever differs from the mirror's last sync is in it.
  std::vector<std::string> sync_pods(PodMirror& mirror,
                                     std::vector<std::string>* changed = nullptr);
  // The job of one observed pod ("" when its annotations cannot be read), without copying the
  // rest; std::nullopt when the watch does not hold it (VerbOptions::watched_job).
  std::optional<std::string> watched_job(const std::string& namespace_name,
                                         const std::string& name) const;

  // The handlers, exposed for tests that feed objects without a server. pod_handler() hands
  // each event over alone, as a watch that reads one event at a time (on_caught_up after each);
  // pod_watch_handler() is the informer's own, where a waiting pod's registration and an ended
  // pod's completion may pend until on_caught_up.
  kube::InformerHandler& pod_handler();
  kube::InformerHandler& pod_watch_handler();
  kube::InformerHandler& node_handler();
  kube::InformerHandler& job_handler();

 private:
  class PodHandler;
  class NodeHandler;
  class EachEventAlone;
  std::unique_ptr<JobHandler> job_handler_;  // before the pod handler, which reads it
  std::unique_ptr<PodHandler> pod_handler_;
  std::unique_ptr<EachEventAlone> each_event_alone_;
  std::unique_ptr<NodeHandler> node_handler_;
  std::unique_ptr<kube::Informer> pod_informer_;
  std::unique_ptr<kube::Informer> node_informer_;
  std::unique_ptr<kube::Informer> job_informer_;
  // The Jobs are watched once the nodes are listed, and the pods once the Jobs are: binds in
  // doubt are settled from the first pod list, against a known inventory, and a Job's pods find
  // their Job. A Job list the API server refuses (no RBAC for batch/v1 jobs, or an API server
  // without them) does not hold the pods back: they are watched anyway, and a Job's pods wait
  // until its Job can be read (ObservedPod::awaiting_job).
  void start_jobs();
  void start_pods();
  std::mutex start_mu_;
  bool stopped_ = true, jobs_started_ = false, pods_started_ = false;
  std::atomic<bool> jobs_unlisted_{false};  // a Job list failed before any succeeded
};

// The pod as allox observes it (any scheduler); an error when metadata is unusable.
Expected<ObservedPod> observe_pod(const nlohmann::json& pod, const DeviceMapping& devices,
                                  const Tenancy& tenancy = {});

// Every member of a pod observe_pod (and the feed's filter on spec.schedulerName) reads: what
// the pod watch keeps of each event (kube/watch_event.h). observe_pod of a pod so cut reads the
// same as of the whole pod.
kube::FieldSet observed_pod_fields();

}  // namespace allox::extender
