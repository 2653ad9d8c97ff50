// What allox reads from a v1.Pod: its identity, its allox.io annotations and the resources it
// requests, turned into a JobVariant (docs/design.md, "alloxd", pod annotations).
//
//   allox.io/job          job id; pods sharing it are device variants of one job
//                         (default: name). The id always lives in the pod's namespace: "train"
//                         and "team-a/train" in namespace team-a name job team-a/train, while
//                         "team-a/train" in namespace team-b is refused (a '/' beyond the
//                         namespace separator), so one tenant can never join, block or delete
//                         another's job; check_job_id's rules apply
//   allox.io/user         the user charged for the job, read only in namespaces the Tenancy
//                         rules list (elsewhere it is ignored: the charged user is the
//                         namespace, or the user the rules map the namespace to)
//   allox.io/device       device type of this variant, the only one it runs on (default:
//                         inferred from the requested resources through the config's resource
//                         mapping, else the CPU device; a resource with GPU models per node
//                         label lets the pod run on any of them, pod_devices.h)
//   allox.io/iterations   total iterations (profiler input), a whole number within int64
//   allox.io/time.<dev>   processing-time hint in seconds on device <dev>, within
//                         [kMinJobSeconds, kMaxJobSeconds]
//   allox.io/model        the model the pod trains, for the config's throughput table (Gavel's:
//                         k80, p100, v100): its name with any case and punctuation ("resnet50"
//                         is "ResNet-50"), or a whole configuration ("ResNet-50 (batch size 64)")
//   allox.io/batch-size   with allox.io/model: which of the model's configurations, a whole
//                         number; may be left out when the table has the model at one only.
//                         Time on a type = allox.io/iterations / the table's steps per second
//                         (estimates.h); no iterations, or no entry for a type, no estimate
//   allox.io/gang-size    N, a whole number from 1 to kMaxGangSize: the pod is one member of a
//                         gang, a job of N pods that run together (all or none), each on its
//                         own node's units of one device type, all members on the same type.
//                         Every member carries it, and all share allox.io/job; members are
//                         parts of one job, not device variants (docs/design.md, "Gangs")
//
// Units: how many devices of its type the pod needs on one node at once (JobVariant::units,
// core/model.h Job::units). For a device a resource maps to, the requested amount of the
// resources mapping to it (`nvidia.com/gpu: 2` is 2 gpu units), a whole number; for the CPU
// device, CPU bundles: ceil(requested cores / cores_per_machine). At least 1 (a pod requesting
// none of its device's resources needs one), at most kMaxUnits.
//
// Resource requests are what kube-scheduler counts: the sum over containers and sidecars (init
// containers with restartPolicy Always), at least what any one init container needs beside the
// sidecars started before it, plus spec.overhead; limits stand in for missing requests, as in
// Kubernetes. Quantities use Kubernetes suffixes (500m, 2, 1k, 32Gi). Thread-safe: pure.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "kube/node_fit.h"

namespace allox::extender {

struct DeviceMapping;  // alloxd/config.h

// Bounds on any processing time alloxd accepts (hints, profile fits, estimates): 1 ms to 30
// days. Values outside are input errors, never handed to the matcher, whose integer costs
// would overflow on them (one pod with time.gpu 1e300 would stop every round).
inline constexpr double kMinJobSeconds = 0.001;
inline constexpr double kMaxJobSeconds = 30.0 * 24 * 3600;

// Kubernetes' own limits, applied to what a pod or a client hands alloxd so that no tenant can
// make it hold (or repeat in every answer) an unbounded string: 253 for names (a pod's name, the
// name part of a job id), 63 for label-like values (a namespace, allox.io/user, a device type).
inline constexpr std::size_t kMaxNameLength = 253;
inline constexpr std::size_t kMaxLabelLength = 63;

// Checks a job id: "<namespace>/<name>", the namespace at most kMaxLabelLength bytes and the name
// at most kMaxNameLength, neither empty, "." or "..", with no '/' beyond the separator and no
// control characters. The error says what is wrong without quoting the id, e.g.
// `has a ".." segment`; callers prefix the field ("annotation allox.io/job: ", "job id: ").
Status check_job_id(std::string_view id);

// Who pays for a pod's job. By default the namespace is the user; an operator may map
// namespaces to users, or let listed namespaces name their user with allox.io/user.
struct Tenancy {
  std::map<std::string, std::string> namespace_users;
  std::set<std::string> user_annotation_namespaces;

  // The user charged for a pod in `namespace_name` whose allox.io/user is `annotated` ("" when
  // absent).
  std::string charged_user(const std::string& namespace_name, const std::string& annotated) const;
};

struct PodIdentity {
  std::string name;
  std::string namespace_name;
  std::string uid;
};

// A pod's key in the book and in admissions: "namespace/name".
inline std::string pod_key(const PodIdentity& pod) {
  return pod.namespace_name + "/" + pod.name;
}

// The gang-size annotation and its bound: 64 members of a gang at most.
inline constexpr std::string_view kGangSizeAnnotation = "allox.io/gang-size";
inline constexpr int kMaxGangSize = 64;
// The most members /bind gathers together: each waiting member holds one of the blocking pool's
// threads (http/http_server.h kBlockingThreads), so a larger gang could never bind whole. The
// book parks it with that reason (JobBook::gang_too_large).
inline constexpr int kMaxGangBoundTogether = 16;

struct JobVariant {
  PodIdentity pod;
  std::string job_id;
  std::string user;
  DeviceType device;  // the type it names: pinned, or its resource's plain type
  std::optional<std::int64_t> iterations;
  std::map<DeviceType, double> time_hints;  // seconds, from allox.io/time.<dev>
  int units = 1;  // devices of one type on one node it needs at once, 1..kMaxUnits (see above)
  // Every type it can run on, `device` among them (pod_devices.h); empty means {device}. Not
  // stored, nor are model and batch size: a variant restored from the store has them again when
  // its pod is read again (the watch's list at start-up, or its next /filter).
  std::vector<DeviceType> devices = {};
  std::string model = {};              // allox.io/model, for the throughput table
  std::optional<int> batch_size = {};  // allox.io/batch-size
  // Members of the gang this pod belongs to (allox.io/gang-size; 1: not a gang). A plain field:
  // reading the annotation fills it, and a reader of another owner (an Indexed batch/v1 Job,
  // completions == parallelism) may set it. The member's identity is its pod (`pod`).
  int gang = 1;
  // Where its pod may go besides the device (kube/node_fit.h): its spec.nodeSelector, required
  // node affinity and tolerations, with alloxd's own pin left out (a gate's removal adds it, and
  // it is no constraint of the owner's). Null when the pod states none. Not stored, as
  // `devices`; `placement_key` is its text, so that a changed pod compares as a changed variant.
  std::shared_ptr<const kube::PodPlacement> placement = nullptr;
  std::string placement_key = {};

  // Whether kube-scheduler lets this variant's pod onto `node` by what both say (cordon, taints,
  // selector, affinity; no resources): a pod that states nothing still meets a node's taints.
  bool may_go_to(const kube::NodeFacts& node) const;
  // Why it may not, in kube-scheduler's words (kube::PodPlacement::refuses); std::nullopt when
  // it may.
  std::optional<std::string> refusal(const kube::NodeFacts& node) const;
  // Whether it can run on `type`.
  bool runs_on(std::string_view type) const {
    if (devices.empty()) return device == type;
    return std::find(devices.begin(), devices.end(), type) != devices.end();
  }
  // The types it can run on: `devices`, or {device}.
  std::vector<DeviceType> device_types() const {
    return devices.empty() ? std::vector<DeviceType>{device} : devices;
  }
};

// The pod's identity, or an error naming the missing or invalid field (metadata.name is
// required, at most kMaxNameLength bytes; a namespace at most kMaxLabelLength; a missing
// namespace reads as "default", a missing uid as "").
Expected<PodIdentity> pod_identity(const nlohmann::json& pod);

// The id of the job that allox.io/job value `annotated` names for a pod in `namespace_name`
// ("" means the pod's own name): always "<namespace_name>/...".
std::string job_id_in_namespace(const std::string& namespace_name, const std::string& annotated);

// Reads the pod as a job variant. Errors name the field, e.g.
// `annotation allox.io/time.gpu: "fast" is not a number of seconds`; a value over its length
// limit (allox.io/user, allox.io/device, allox.io/job, a time.<dev> key) is refused by its size,
// and no error quotes more than the first 64 bytes of any value. A device request that is not a
// whole number of devices (`nvidia.com/gpu: 1.5`), negative, or more units than kMaxUnits is an
// error naming the resource.
Expected<JobVariant> read_job_variant(const nlohmann::json& pod, const DeviceMapping& mapping,
                                      const Tenancy& tenancy = {});

}  // namespace allox::extender
