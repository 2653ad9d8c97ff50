// What-if planning: how would this set of jobs run on this cluster, and on the cluster with more
// machines? Answers with predicted avg JCT, makespan and each user's last finish per scenario.
//
// A plan is a simulation in which estimates are taken as true (the jobs file's times are the best
// knowledge available), without profiling, honouring machines' busy_until. The base scenario is
// the cluster as is; each alternative adds machines (e.g. {gpu: 4}), named
// "<device>-added-<i>". The default policy is allox at α = 1 without starvation guard (minimum
// total completion time); any registered policy may be used instead.
#pragma once

#include <limits>
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
  std::map<DeviceType, int> add;  // machines to add per device type, each >= 1
};

// "gpu=4" or "gpu=4,cpu=8" (one alternative); errors name the argument.
Expected<PlanAlternative> parse_alternative(const std::string& text);

struct PlanScenario {
  std::string name;  // "as is" or the alternative's name
  Cluster cluster;
  SimResult result;
  SimSummary summary;
};

struct PlanOptions {
  std::string policy = "allox";
  // α = 1 and no starvation guard: a plan is offline, and the guard (which starts long-waiting
  // jobs first, oldest first) would turn a long queue's plan into FIFO.
  PolicyOptions policy_options = [] {
    PolicyOptions o;
    o.alpha = 1;
    o.starvation_bound = std::numeric_limits<double>::infinity();
    return o;
  }();
};

// Errors: an alternative adding a device type no job can run on (it could change nothing), a job
// that can run on no machine of a scenario, an unknown policy, a policy error.
Expected<std::vector<PlanScenario>> plan(const Workload& workload, const Cluster& cluster,
                                         const std::vector<PlanAlternative>& alternatives,
                                         const PlanOptions& options = {});

}  // namespace allox
