// Which queued jobs enter an AlloX matching round (docs/design.md, "Fairness"). The one
// definition: the
// allox policy builds every round with fairness_round(), and the tests test that function.
//
// Users with waiting jobs are ranked by current share L (fairness/share.h), lowest first. Ties
// (common: every user without a running job has L = 0) go to the user whose oldest waiting job
// has waited longest, then to the name, so that rounds are deterministic and no user wins every
// tie by its name. Only the ceil(alpha * U) first users enter, where U counts users with waiting
// jobs; alpha = 1 admits everyone (pure completion-time optimal), a small alpha is strict. The
// caller doubles alpha when a round places nothing (work-conserving).
//
// Starvation guard (allox's extension; the paper and the reference simulator have none, and it is
// off unless PolicyOptions::starvation_bound is finite): a job that has been queued for longer
// than the bound enters every round whatever its user's share, so no job waits forever under any
// alpha; the allox policy also starts such jobs first.
//
// O(Q log Q) for Q waiting jobs. Pure functions.
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

// A user with waiting jobs, as the round ranks it.
struct WaitingUser {
  std::string name;
  double share = 0;         // current L, weighted
  double oldest_since = 0;  // queued_since of the user's longest-waiting job
};

// The users that enter a round at this alpha: lowest share first, ties to the earliest
// oldest_since, then by name.
std::vector<std::string> lowest_share_users(std::vector<WaitingUser> waiting, double alpha);

// Indices into state.queue of jobs queued for longer than `bound` seconds, oldest first.
// An infinite bound (the guard off) gives none.
std::vector<std::size_t> starved_jobs(const ClusterState& state, double bound);

struct FairnessRound {
  std::vector<std::string> users;    // entering users, in rank order
  std::vector<std::size_t> starved;  // state.queue indices of starved waiting jobs, oldest first
  std::vector<std::size_t> jobs;     // state.queue indices entering, ascending: users' + starved
};

// The round over `waiting` (state.queue indices still unplaced, ascending), given each user's
// share (users missing from `shares` have L = 0).
FairnessRound fairness_round(const ClusterState& state, const std::vector<std::size_t>& waiting,
                             const std::map<std::string, double>& shares, double alpha,
                             double starvation_bound);

// The same over the whole queue.
FairnessRound fairness_round(const ClusterState& state, const std::map<std::string, double>& shares,
                             double alpha, double starvation_bound);

// The users of state.queue as indices, for a caller that ranks several rounds of one snapshot
// without comparing user names job by job: names sorted and distinct, user_of[i] the index in
// names of state.queue[i]'s user. O(Q·U) name comparisons at worst for U users, plus O(U log U).
struct QueueUsers {
  std::vector<std::string> names;
  std::vector<std::size_t> user_of;  // per state.queue index
};
QueueUsers queue_users(const ClusterState& state);

// fairness_round() over `waiting`, with each user's share given per index of users.names
// (shares.size() == users.names.size()): the same round as the overload above given those
// shares by name. The overloads above call this one.
FairnessRound fairness_round(const ClusterState& state, const QueueUsers& users,
                             const std::vector<std::size_t>& waiting,
                             const std::vector<double>& shares, double alpha,
                             double starvation_bound);

}  // namespace allox
