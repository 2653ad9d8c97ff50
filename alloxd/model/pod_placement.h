// Where a job variant's pod may go besides its device: the pod's own constraints on nodes
// (spec.nodeSelector, required node affinity, spec.tolerations) as kube-scheduler v1.28 reads
// them (kube/node_fit.h), kept with the variant so the plan chooses a node the pod may go to and
// the controller pins it only there (docs/design.md, "Nodes a pod may go to").
//
// alloxd's own pin (a required affinity of one `metadata.name In [node]` term, kube::pinned_node)
// is left out: the gate's removal adds it, it is no constraint of the owner's, and leaving it in
// would make every released pod a changed variant.
//
// Thread-safe: pure.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/result.h"
#include "kube/node_fit.h"

namespace allox::extender {

struct PodConstraints {
  std::shared_ptr<const kube::PodPlacement> placement;  // null: the pod states none
  std::string key;  // the constraints' JSON text, "" when none: compares two readings
};

// Never throws, on any JSON value; wrong-typed fields are no constraint (kube-apiserver refuses
// such pods before anyone sees them).
PodConstraints read_pod_constraints(const nlohmann::json& pod);

// How many nodeSelector entries, required node-affinity requirements (every term's
// matchExpressions and matchFields together) and tolerations a pod alloxd books may state, each.
// kube-apiserver counts none of them; alloxd checks a queued pod against many nodes in every
// plan, and a pod of 10,000 requirements costs milliseconds per node (docs/hardening.md), so a
// pod over the bound is refused like any pod it cannot read.
inline constexpr std::size_t kMaxPodConstraints = 128;

// An error naming the first field over kMaxPodConstraints; OK otherwise, and for fields of the
// wrong type (read_pod_constraints reads them as none). Never throws.
Status check_pod_constraints(const nlohmann::json& pod);

}  // namespace allox::extender
