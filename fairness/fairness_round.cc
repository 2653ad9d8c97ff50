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

std::vector<std::string> lowest_share_users(const std::map<std::string, double>& waiting_users,
                                            double alpha) {
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& [user, share] : waiting_users) ranked.push_back({share, user});
  std::sort(ranked.begin(), ranked.end());
  ranked.resize(round_user_count(alpha, ranked.size()));
  std::vector<std::string> users;
  for (auto& [share, user] : ranked) users.push_back(std::move(user));
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
  std::map<std::string, double> waiting;
  for (const QueuedJob& q : state.queue) {
    auto share = shares.find(q.job->user);
    waiting[q.job->user] = share == shares.end() ? 0.0 : share->second;
  }
  round.users = lowest_share_users(waiting, alpha);
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
