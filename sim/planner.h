// What-if planning: how would this set of jobs run on this cluster, and on the cluster with more
// machines? Answers with predicted avg JCT, makespan and each user's last finish per scenario.
//
// A plan is a simulation in which estimates are taken as true (the jobs file's times are the best
// knowledge available), without profiling, honouring machines' busy_until. The base scenario is
// the cluster as is; each alternative adds machines (e.g. {gpu: 4}), named
// "<device>-added-<i>". On a cluster of multi-unit nodes (core/model.h) devices come as nodes:
// "v100=8" adds 8 devices as nodes shaped like the cluster's largest v100 node (8 must be a
// multiple of its units), "v100=2x4" adds 2 nodes of 4 units whatever the cluster has; a node's
// units are named "<node>/<i>". The default policy is allox at α = 1 without starvation guard
// (minimum total completion time); any registered policy may be used instead.
#pragma once

#include <functional>
#include <limits>
#include <memory>
#include <map>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "fairness/policy.h"
#include "sim/metrics.h"
#include "sim/simulator.h"

namespace allox {

struct PlanAlternative {
  std::string name;               // e.g. "+gpu=4,cpu=8"
  std::map<DeviceType, int> add;  // machines (devices) to add per device type, each >= 1
  // Units per added node, per device type given as NxU; absent: like the cluster's nodes.
  std::map<DeviceType, int> units;
};

// "gpu=4", "gpu=4,cpu=8" or "v100=2x4" (2 nodes of 4 units) as one alternative; errors name the
// argument. N x U is at most 100,000 devices, U at most kMaxUnits.
Expected<PlanAlternative> parse_alternative(const std::string& text);

struct PlanScenario {
  std::string name;  // "as is" or the alternative's name
  Cluster cluster;
  SimResult result;
  SimSummary summary;  // its figures count only the jobs that finished
  // Jobs the policy left unfinished when the plan ran out of events (it never started them, or
  // never resumed them), as indices into result.jobs in trace order. A policy that starves jobs
  // is a valid answer to a what-if, so this is not an error; callers must show it.
  std::vector<std::size_t> unfinished;
};

struct PlanOptions {
  std::string policy = "allox";
  // When set, each scenario runs a fresh policy made by this instead of `policy` by name (a
  // caller's own policy); `policy` then only labels the plan.
  std::function<std::unique_ptr<SchedulingPolicy>()> make_policy;
  // α = 1 and no starvation guard: a plan is offline, and the guard (which starts long-waiting
  // jobs first, oldest first) would turn a long queue's plan into FIFO.
  PolicyOptions policy_options = [] {
    PolicyOptions o;
    o.alpha = 1;
    o.starvation_bound = std::numeric_limits<double>::infinity();
    return o;
  }();
};

// How a scenario's unfinished jobs are shown. "never started", or "never finished" for a job
// that ran and was preempted, never to resume.
std::string unfinished_state(const SimJobRecord& job);
// The scenario's state for all its unfinished jobs ("never started" when none of them ran, else
// "never finished"), and "" when every job finished.
std::string unfinished_state(const PlanScenario& scenario);
// A user's last finish is undefined when one of its jobs never finished: the state of that job
// ("never started" first), else "".
std::string unfinished_state(const PlanScenario& scenario, const std::string& user);
// One line for a scenario whose policy left jobs unfinished, naming the first five:
// "scenario 'as is': 1 of 3 jobs never started under es (j2); its avg JCT, makespan and last
// finishes count only the 2 that finished"; "" when every job finished.
std::string unfinished_note(const PlanScenario& scenario, const std::string& policy);

// Errors: an alternative adding a device type no job can run on (it could change nothing), a job
// that can run on no machine of a scenario, an unknown policy, a policy error.
Expected<std::vector<PlanScenario>> plan(const Workload& workload, const Cluster& cluster,
                                         const std::vector<PlanAlternative>& alternatives,
                                         const PlanOptions& options = {});

}  // namespace allox
