// Which queued jobs enter an AlloX matching round (DESIGN section 3).
//
// Users with queued jobs are ranked by current share L (fairness/share.h), lowest first, ties by
// name so that rounds are deterministic. Only the ceil(alpha * U) lowest-L users enter, where U
// counts users with queued jobs; alpha = 1 admits everyone (pure completion-time optimal), a
// small alpha is strict. The caller doubles alpha when a round places nothing (work-conserving).
//
// Starvation guard (beyond the paper): a job that has been queued for longer than the bound
// enters every round whatever its user's share, so no job waits forever under any alpha; the
// allox policy also starts such jobs first.
//
// O(Q log Q) for Q queued jobs. Pure functions.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "fairness/policy.h"

namespace allox {

// ceil(alpha * users) clamped to [1, users] (0 when there are no users). Precondition:
// 0 < alpha <= 1.
std::size_t round_user_count(double alpha, std::size_t users);

// The users that enter a round at this alpha, lowest share first (ties by name), given the
// share of every user with queued jobs.
std::vector<std::string> lowest_share_users(const std::map<std::string, double>& waiting_users,
                                            double alpha);

// Indices into state.queue of jobs queued for longer than `bound` seconds, oldest first.
std::vector<std::size_t> starved_jobs(const ClusterState& state, double bound);

struct FairnessRound {
  std::vector<std::string> users;    // entering users, lowest share first
  std::vector<std::size_t> starved;  // state.queue indices of starved jobs, oldest first
  std::vector<std::size_t> jobs;     // state.queue indices entering: the users' jobs + starved
};

FairnessRound fairness_round(const ClusterState& state, const std::map<std::string, double>& shares,
                             double alpha, double starvation_bound);

}  // namespace allox
