// AlloX's current share L per user (docs/design.md, "Fairness"), with weights.
//
// A running job holds k machines (Job::units, devices, not jobs, are what a share counts). Its
// share is the dominant share it would hold on its fastest device type present in the cluster,
// k / (machines of that type), scaled by p_fast / p_actual
// when it runs on a slower type: a slow placement delivers less of the cluster's useful work, so
// it counts less. A user's L is the sum over its running jobs divided by its weight.
//
// Example: 2 GPUs and 4 CPU nodes; a job with p = {gpu: 10, cpu: 40} holds 1/2 on a GPU and
// 1/2 * 10/40 = 1/8 on a CPU node.
//
// O(R * D) for R running jobs and D device types per job.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "fairness/fairness_round.h"
#include "fairness/policy.h"

namespace allox {

// Share one job holds while it runs on `running_on`, before weighting. 0 if the job has no
// estimate for `running_on` or no device type of the job is present in `counts`.
double running_job_share(const Job& job, const DeviceType& running_on,
                         const std::map<DeviceType, std::size_t>& counts);

// L per user, weighted, for every user with a running or queued job (0 for users with queued
// jobs only).
std::map<std::string, double> current_shares(const ClusterState& state);

// The same L for the queue's users, per index of users.names (users from queue_users(state)),
// given device_counts(state): what current_shares() gives them, without a map keyed by name.
std::vector<double> queue_user_shares(const ClusterState& state, const QueueUsers& users,
                                      const std::map<DeviceType, std::size_t>& counts);

// Finish-time fairness' denominator, for the simulator's summary and the fairness report: a job
// of `seconds` alone on its user's slice of the cluster, `weight_share` (w_u / sum of weights)
// of the `machines` machines of its device type, at most the `units` it needs:
// seconds / min(1, weight_share x machines / units).
double isolated_seconds(double seconds, double weight_share, double machines, int units = 1);

}  // namespace allox
