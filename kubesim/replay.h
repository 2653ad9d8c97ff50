// Replays a workload through a fake cluster: jobs arrive as pods in an ApiObjects store (one
// pod per device variant, sharing allox.io/job, with allox.io/time.<device> hints), a
// KubeScheduler schedules them through the extenders of a KubeSchedulerConfiguration, and a
// FakeKubelet runs each bound pod for the job's true time on that device. Simulated time runs on
// the given SimClock. Used by `allox replay`, `./dev run`, `allox bench cluster` and the
// end-to-end tests; alloxd is whatever the configuration's extenders point at.
//
// The replay ends when every job has run to completion, when `stop` becomes true, or when
// `max_simulated_s` passes (an error naming the jobs still waiting). It reports what a cluster
// operator would check: each job's start, node and finish; jobs that ran more than once; pods
// left pending; and the completion-to-bind latency (a machine freed while jobs waited, until
// the next bind onto that node and device).
//
// With a stepped SimClock the replay is a discrete-event driver: the clock runs at wall speed
// while anything reacts and jumps to the next event once everything is quiet, so the
// completion-to-bind figures are real reaction times (1:1) and a 3-hour workload takes seconds.
// Each latency is measured between the store writes themselves (the kubelet's Succeeded, the
// binding), read from the clock as the store publishes them.
//
// Not thread-safe: one replay per call. on_event runs on the replay's thread.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "kubesim/api_objects.h"
#include "kubesim/kube_scheduler.h"
#include "kubesim/sim_clock.h"

namespace allox::emulator {

struct ReplayJob {
  std::string id;
  std::string user;
  double arrival = 0;                      // simulated seconds from the replay's start
  std::map<DeviceType, double> estimate;   // seconds; sent as allox.io/time.<device> hints
  std::map<DeviceType, double> true_time;  // seconds the job really runs; one pod per key
  // Devices a variant's pod asks for on one node (1 where absent): a GPU pod requests that many
  // of its resource (and as many times gpu_pod_cores), a CPU pod as many times cpu_cores.
  std::map<DeviceType, int> units{};
  // One pod per resource instead, for all its types in true_time, naming no allox.io/device
  // (GPU models as node labels, ReplayOptions::label_of): alloxd picks the model, and the pod
  // runs for the true time of the type of the node it is bound to.
  bool any_model = false;
  // A gang of this many pods per device (allox.io/gang-size, named <pod>-0 .. <pod>-(N-1)),
  // each asking for `units`; the job is bound once all N are and done once all N ended.
  int gang = 1;
  // Members set in each of its pods' spec as given (tolerations, nodeSelector, affinity): where
  // kube-scheduler lets them go.
  nlohmann::json pod_spec = nlohmann::json::object();
};

struct ReplayEvent {
  enum class Kind {
    kArrived,        // pods created
    kBound,          // node, device
    kDone,           // node, device
    kDeleted,        // a variant pod deleted (by alloxd, once its sibling runs)
    kGateRemoved,    // a variant's scheduling gate was removed
    kUnschedulable,  // the scheduler parked a variant: detail is its reason
    kRetried,        // a parked variant went back to the active queue: detail is why
    kBindFailed,     // detail
  };
  Kind kind = Kind::kArrived;
  double at = 0;  // simulated seconds since the start
  std::string job, user, pod, node, detail;
  DeviceType device;
  int queued = 0, running = 0, done = 0;  // jobs, after the event
};
const char* replay_event_name(ReplayEvent::Kind kind);

struct ReplayOptions {
  SchedulerConfiguration scheduler;                // profiles and extenders (urlPrefix: alloxd)
  std::string scheduler_name = "allox-scheduler";  // spec.schedulerName of the pods
  std::string pod_namespace = "demo";
  std::map<DeviceType, std::string> resource_of;  // device -> extended resource
  // GPU models as node labels (alloxd's devices[].node_labels): type -> the node label (key,
  // value) that makes a node's units of its resource that type; the type is in resource_of too.
  std::map<DeviceType, std::pair<std::string, std::string>> label_of;
  double cpu_cores = 32;                          // cores requested by a CPU variant
  double gpu_pod_cores = 1;    // cores a GPU variant also requests (as real pods do)
  bool gated = false;          // create pods with the allox.io/queue scheduling gate
  double max_simulated_s = 0;  // 0: no limit
  bool record_events = true;
  std::atomic<bool>* stop = nullptr;
  std::function<void(const ReplayEvent&)> on_event;
  // Stepped clocks only (sim_clock.h). `quiet`: true when the system under test (alloxd) has
  // nothing in flight; the replay jumps the clock to its next event (an arrival, a kubelet
  // completion, a scheduler timer) only when `quiet`, its scheduler, its kubelets and its own
  // inbox all are, and the store did not change while it looked. Unset: alloxd is not asked.
  std::function<bool()> quiet;
  // Called at each such quiet point, just before the jump, on the replay's thread (tests
  // compare what alloxd shows with the store there). `simulated`: seconds since the start.
  std::function<void(double simulated)> on_quiet;
  // Stepped clocks only, asked at each quiet point after on_quiet: how many jobs the system under
  // test has decided to start on (node, device) and not bound yet. A machine freed while jobs
  // waited that is still idle at a quiet point beyond that count was left idle by the policy's
  // choice (AlloX may keep a slow machine free for a job better off waiting for a fast one): no
  // reaction is under way, so it leaves completion_to_bind and counts in left_idle. Unset: every
  // freed machine counts until it is reused.
  std::function<int(const std::string& node, const DeviceType& device)> starts_planned_on;
};

struct ReplayedJob {
  std::string id, user, node, pod;
  DeviceType device;
  double arrival = 0, start = 0, finish = 0;  // simulated seconds; finish 0 if not done
  int runs = 0;  // pods of this job that were bound (a gang's members count one each)
};

struct ReplaySummary {
  std::vector<ReplayedJob> jobs;  // in input order
  SchedulerStats scheduler;
  std::vector<double> completion_to_bind;  // simulated seconds, one per reused machine
  int left_idle = 0;  // freed machines the policy chose to leave idle (starts_planned_on)
  std::vector<std::string> ran_twice;     // job ids bound more than once
  std::vector<std::string> left_pending;  // pods still unbound at the end (namespace/name)
  double simulated_s = 0, wall_s = 0;
  int jumps = 0;         // stepped clocks: how often the clock jumped
  double skipped_s = 0;  // stepped clocks: simulated seconds skipped by the jumps
  bool interrupted = false;
};

// Node allocatable for a machine inventory ("gpu" x2, "cpu" x1 ...) as a kubelet reports it:
// each GPU machine is one unit of its resource, each CPU machine cpu_cores cores, plus the cores
// its GPU pods request, memory and a pod limit.
std::map<std::string, std::string> node_allocatable(const std::map<DeviceType, int>& machines,
                                                    const ReplayOptions& options);

// The labels that make a node of `machines` the types label_of names (none for plain types).
std::map<std::string, std::string> node_labels(const std::map<DeviceType, int>& machines,
                                               const ReplayOptions& options);

Expected<ReplaySummary> replay_jobs(ApiObjects& objects, SimClock& clock,
                                    const std::vector<ReplayJob>& jobs,
                                    const ReplayOptions& options);

// p-quantile (0..1) of samples by nearest rank; 0 when empty.
double quantile(std::vector<double> samples, double q);

}  // namespace allox::emulator
