// Which device types a pod can run on, when its resource has several (a GPU model per node
// label, alloxd/config.h DeviceMapping): every type of the resource, narrowed by what the pod
// itself pins. A pod pins a model with a nodeSelector or a required node affinity on a rule's
// label key; allox.io/device pins one type outright (read_job_variant).
//
// How a constraint narrows the types, for each rule label key k (constraints on other keys do
// not tell models apart and narrow nothing):
//   nodeSelector k: v                 the types of the rules for k=v; the plain type when no
//                                     rule has that value (a model allox has no type for)
//   matchExpressions k In [v...]      as nodeSelector, for any of the values
//   matchExpressions k NotIn [v...]   every type but those whose every rule value is listed
//   k Exists / DoesNotExist           the label types of k, and the plain type / the types
//                                     not of k
// requiredDuringSchedulingIgnoredDuringExecution's terms are alternatives (a type is kept when
// one term allows it), each term's expressions all apply. Preferred affinity is no constraint.
// A pod whose constraints allow none of the types keeps its plain type alone (kube-scheduler
// will find it no node; allox does not second-guess that).
//
// Thread-safe: pure.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "core/model.h"

namespace allox::extender {

struct DeviceMapping;  // alloxd/config.h

// The types a pod requesting the resource of plain type `plain` can run on, `plain` first if
// allowed, then the label types in config order.
std::vector<DeviceType> pod_device_types(const nlohmann::json& pod, const DeviceMapping& mapping,
                                         const DeviceType& plain);

}  // namespace allox::extender
