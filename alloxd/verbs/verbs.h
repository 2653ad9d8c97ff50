// kube-scheduler's extender verbs (filter, prioritize, bind, preempt) over typed wire values:
// the confirmation step. The planner (planner.h) decides who runs where; the verbs read its
// latest plan and the book, and answer kube-scheduler in its terms.
//
//   - filter: a pod seen for the first time is registered (persisted) as a variant of its job,
//     except on the nudge path (VerbOptions::nudges) when the book has no job of it and no
//     offered node says alloxd is behind: then the watch registers it, and it is answered
//     "waiting for allox's next scheduling round" with nothing written. With a watch that nudges
//     parked pods a registered pod is answered at once from the latest plan; without one, a pod
//     whose job the plan has not seen yet waits (at most `first_plan_wait`) for the next round.
//     A pod whose job waits also waits (at most
//     `watch_wait`) when alloxd is behind the cluster: kube-scheduler offers a node whose machine
//     of the pod's device the book still shows busy (kube-scheduler saw a completion before
//     alloxd's watch did), or the plan is older than the latest freed machine; the answer then
//     comes from the plan that includes it. Refusing instead parks the pod in kube-scheduler's
//     back-off (up to 10 s) just before the plan would start it. A job that starts now gets its
//     planned node, for the planned device's variant (any offered node with a free machine of that
//     device that the plan gives no other job, if the planned one is not offered or is full: an
//     admitted job's machine taken by another would send it to take the next one), and the
//     answer is only that:
//     NodeNames (and Nodes when full objects were sent), both failed maps null. kube-scheduler
//     v1.28 takes NodeNames as its feasible list and reads the failed maps only when no node is
//     left (findNodesThatPassExtenders), so reasons for the other nodes would be read by nobody;
//     with the planned node offered and free, the answer costs one capacity lookup, not one per
//     offered node. When no offered node passes, every one of them gets its reason, which the
//     pod's FitError shows: FailedNodes with a reason a person can act on ("queued: position 3 of
//     12, est. start in 540s", "insufficient free nvidia.com/gpu (0 of 8 free)"), or
//     FailedAndUnresolvableNodes when the node can never run this variant (no such device there,
//     the job already runs elsewhere, was removed, or is parked because the policy cannot take
//     it), which also keeps kube-scheduler's preemption off that node.
//   - prioritize: the planned node scores kMaxExtenderPriority, every other node 0.
//   - bind: concurrent binds are checked one at a time and then run side by side; refuses a
//     second variant of a job (or a second bind of it in flight), a node without a free machine
//     (counting the machines binds in flight hold there); records a bind intent (synced, one
//     fsync shared with the concurrent binds' intents), posts the Binding through ClusterApi
//     (when there is one), records the start, and answers. The job's other variants are
//     deleted by the controller, never here.
//     A pod the book does not know is never bound blind: the watch, or one GET of the pod when
//     the watch has not seen it, says whose it is. allox's (a sibling its job's admission
//     dropped, a late variant, a pod no filter has registered yet) is refused with the reason,
//     so kube-scheduler tries again and the job still runs once; only a pod that is provably
//     another scheduler's passes through, bound as asked and not recorded.
//   - a gang's members (verbs_gangs.cc, docs/design.md "Gangs"): filter passes a member only on
//     its placement's node; bind checks the member against its placement and waits (at most
//     `gang_bind_wait`) until all N members have reached /bind, then the N Bindings are posted
//     together; a member missing at the deadline fails every waiting one (none bound), and a
//     gang some of whose Bindings the API server refused after accepting others is rolled back.
//   - preempt: allox jobs are non-preemptive once started: nodes whose victims include one are
//     dropped.
//
// Thread-safe: all methods may be called concurrently.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "alloxd/control/cluster_api.h"
#include "alloxd/plan/planner.h"
#include "alloxd/verbs/gang_gather.h"
#include "alloxd/web/metrics.h"
#include "extender_api/wire.h"

namespace allox::extender {

struct VerbOptions {
  // Whether alloxd watches the API server and its controller nudges a parked pod the moment a
  // plan starts it (controller.h; ExtenderService sets it when there is an API server). Then a
  // pod kube-scheduler asks about before the watch delivered it is answered at once, like a pod
  // the watch delivered just before: "waiting for allox's next scheduling round" parks it in
  // kube-scheduler until the nudge, and kube-scheduler's one scheduling loop is never held for
  // a round (up to a second at 50,000 queued).
  //   - A pod of a job the book does not have is not registered by the filter: the watch
  //     registers it (it registers every pod of allox's, a few ms later), and the answer is the
  //     one its registration would get from the latest plan, which cannot have the job. So no
  //     store write and no lock of the book's writers is on kube-scheduler's path, and a kill -9
  //     after the answer loses nothing: the answer promised nothing, the API server holds the
  //     pod and the watch's list after a restart brings it in. Except when an offered node says
  //     alloxd is behind (a machine kube-scheduler sees free that the book shows busy, or one
  //     freed after the latest plan): the pod is then registered as below and waits for the
  //     plan that settles it (watch_wait), which may start it.
  //   - A pod of a job the book has (a new variant, or a re-created pod of a finished run, which
  //     the watch leaves to the filter) is registered as the watch would register it
  //     (Durability::kWritten: the API server holds the pod, a re-list after a crash brings it
  //     back) and answered from the latest plan.
  // Without a watch nothing would bring a parked pod back before kube-scheduler's 5 minutes, so
  // the first filter is synced and waits for the plan that includes it (first_plan_wait).
  bool nudges = false;
  // How long a filter for a job the plan has not seen waits for the next round when nothing
  // nudges (above); kube-scheduler's extender httpTimeout (30 s by default) bounds it from above.
  std::chrono::milliseconds first_plan_wait{1000};
  // Runs on the request's thread just before a filter starts waiting for its first plan (tests).
  std::function<void()> on_first_plan_wait;
  // How long a filter waits for the watch to catch up (above); 0: never. It holds up
  // kube-scheduler's scheduling cycle, so it stays well below a second.
  std::chrono::milliseconds watch_wait{500};
  // An offered node the book still showed busy when a whole watch_wait ended is not waited for
  // again for this long: a node alloxd counts differently from kube-scheduler must not slow
  // every filter down.
  std::chrono::milliseconds vain_wait_cooldown{30000};
  // How long a gang member's /bind waits for the gang's other members (gang_gather.h), from
  // the first one's arrival. Well under kube-scheduler's extender httpTimeout (5 s in
  // manifests/scheduler-config.yaml): a bind that outlives it is an error to kube-scheduler
  // whatever alloxd did.
  std::chrono::milliseconds gang_bind_wait{3000};
  // Runs on the request's thread just before a filter starts waiting for the watch (tests).
  std::function<void()> on_watch_wait;
  // The watch's view of a pod a /bind names that the book does not know (the watch holds only
  // allox's pods, cluster_feed.h): its job id ("" when its annotations cannot be read), or
  // std::nullopt when the watch has not seen it. Unset: there is no watch.
  std::function<std::optional<std::string>(const std::string& namespace_name,
                                           const std::string& name)>
      watched_job;
};

class ExtenderVerbs {
 public:
  // planner and metrics must outlive the verbs; api may be null (binds are only recorded).
  ExtenderVerbs(Planner& planner, ClusterApi* api, Metrics& metrics, VerbOptions options);

  FilterResult filter(const ExtenderArgs& args);
  std::vector<HostPriority> prioritize(const ExtenderArgs& args);
  BindingResult bind(const BindingArgs& args);
  PreemptionResult preempt(const PreemptionArgs& args);

 private:
  // Whether the pod is for allox's scheduler (config.scheduler_name; every pod when unset).
  bool ours(const nlohmann::json& pod) const;
  // A bind of a pod the book does not know (see the class comment), outside bind_mu_.
  BindingResult bind_unknown(const BindingArgs& args, const std::string& namespace_name);
  // bind's check, under bind_mu_ and the book's shared lock: the pod's job, variant and node,
  // or why the bind is refused (or that the book does not know the pod).
  struct BindCheck;
  BindCheck check_bind(const JobBook& book, const BindingArgs& args,
                       const std::string& namespace_name) const;
  // Gangs (verbs_gangs.cc): a member's check against its placement (under bind_mu_ and the
  // book's shared lock), its bind through the gather, the gang's Bindings once all arrived, and
  // a member's /filter answer from its placement.
  void check_member(const BookJob& job, const BindingArgs& args, BindCheck& c) const;
  BindingResult bind_member(const BindingArgs& args, const BindCheck& checked);
  GangGather::Outcomes bind_gang(const std::string& job_id, const DeviceType& device,
                                 const std::vector<GangGather::Member>& members);
  void answer_member(const JobBook& book, const PlannedStart& start, const JobVariant& variant,
                     const ExtenderArgs& args, FilterResult& result) const;
  // A refused bind, counted.
  BindingResult refuse_bind(std::string why);
  // The answer to a filter of `variant` from `book` and `plan` (under the book's shared lock).
  // unregistered: the job is answered as one no plan has yet (the watch registers it).
  void answer(const JobBook& book, const Plan& plan, const JobVariant& variant,
              const ExtenderArgs& args, bool unregistered, double now, FilterResult& result) const;
  // The offered nodes of `device` not worth a wait now (vain_wait_cooldown), sorted; called
  // with a node name, whether it is one of them.
  struct Cooling {
    std::shared_ptr<const std::vector<std::string>> nodes;  // sorted; null: none
    bool operator()(std::string_view node) const {
      return nodes && std::binary_search(nodes->begin(), nodes->end(), node, std::less<>());
    }
  };
  Cooling cooling(const DeviceType& device);
  // `plan`, or a newer one once the watch caught up with what kube-scheduler's offer shows
  // (at most watch_wait); see the class comment.
  std::shared_ptr<const Plan> wait_for_watch(const JobVariant& variant, const ExtenderArgs& args,
                                             std::shared_ptr<const Plan> plan);
  Planner& planner_;
  ClusterApi* api_;
  Metrics& metrics_;
  VerbOptions options_;
  // Binds in flight: past their check, not yet started in the book (or failed). A job is
  // bound once at a time, and a node's free machines are not promised twice.
  struct Binding {
    std::string node;
    DeviceType device;
    int units = 1;  // the machines of `device` on `node` it holds while being bound
  };
  GangGather gang_gather_;
  std::mutex bind_mu_;                      // one check at a time; guards binding_
  std::map<std::string, Binding> binding_;  // job id -> where it is being bound
  std::mutex vain_mu_;
  // device -> node -> until when a wait for it is not worth it (see vain_wait_cooldown); keyed
  // so that a /filter's offered names are looked up as they are, without building a key each
  std::map<DeviceType, std::map<std::string, std::chrono::steady_clock::time_point, std::less<>>,
           std::less<>>
      vain_until_;
  // The same nodes as one sorted list per device, shared by every filter until a vain wait adds
  // to them or the first of them expires (cooled_expiry_): a filter takes it in O(1), however
  // many nodes a watch far behind has cooled (thousands at 5,000 nodes).
  std::map<DeviceType, std::shared_ptr<const std::vector<std::string>>, std::less<>> cooled_;
  std::chrono::steady_clock::time_point cooled_expiry_ =
      std::chrono::steady_clock::time_point::max();
  void rebuild_cooled(std::chrono::steady_clock::time_point now);  // under vain_mu_
};

}  // namespace allox::extender
