#include "fairness/fairness_round.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

namespace allox {

std::size_t round_user_count(double alpha, std::size_t users) {
  if (users == 0) return 0;
  // The epsilon keeps alpha * U that is an integer up to rounding (0.1 * 30) from rounding up.
  double wanted = std::ceil(alpha * static_cast<double>(users) - 1e-9);
  return std::clamp<std::size_t>(static_cast<std::size_t>(std::max(wanted, 1.0)), 1, users);
}

std::vector<std::string> lowest_share_users(const ClusterState& state,
                                            const std::map<std::string, double>& shares,
                                            double alpha) {
  std::set<std::string> waiting;
  for (const QueuedJob& q : state.queue) waiting.insert(q.job->user);
  std::vector<std::string> users(waiting.begin(), waiting.end());
  auto share = [&](const std::string& u) {
    auto it = shares.find(u);
    return it == shares.end() ? 0.0 : it->second;
  };
  std::stable_sort(users.begin(), users.end(),
                   [&](const std::string& a, const std::string& b) { return share(a) < share(b); });
  users.resize(round_user_count(alpha, users.size()));
  return users;
}

std::vector<std::size_t> starved_jobs(const ClusterState& state, double bound) {
  std::vector<std::size_t> starved;
  for (std::size_t i = 0; i < state.queue.size(); ++i) {
    if (state.now - state.queue[i].queued_since > bound) starved.push_back(i);
  }
  std::stable_sort(starved.begin(), starved.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(state.queue[a].queued_since, state.queue[a].job->id) <
           std::tie(state.queue[b].queued_since, state.queue[b].job->id);
  });
  return starved;
}

FairnessRound fairness_round(const ClusterState& state, const std::map<std::string, double>& shares,
                             double alpha, double starvation_bound) {
  FairnessRound round;
  round.users = lowest_share_users(state, shares, alpha);
  round.starved = starved_jobs(state, starvation_bound);
  std::set<std::string> entering(round.users.begin(), round.users.end());
  std::set<std::size_t> starved(round.starved.begin(), round.starved.end());
  for (std::size_t i = 0; i < state.queue.size(); ++i) {
    if (entering.contains(state.queue[i].job->user) || starved.contains(i)) {
      round.jobs.push_back(i);
    }
  }
  return round;
}

}  // namespace allox
