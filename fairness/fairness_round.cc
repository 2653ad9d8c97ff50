#include "fairness/fairness_round.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <tuple>

namespace allox {

std::size_t round_user_count(double alpha, std::size_t users) {
  if (users == 0) return 0;
  // The epsilon keeps alpha * U that is an integer up to rounding (0.1 * 30) from rounding up.
  double wanted = std::ceil(alpha * static_cast<double>(users) - 1e-9);
  return std::clamp<std::size_t>(static_cast<std::size_t>(std::max(wanted, 1.0)), 1, users);
}

std::vector<std::string> lowest_share_users(std::vector<WaitingUser> waiting, double alpha) {
  std::sort(waiting.begin(), waiting.end(), [](const WaitingUser& a, const WaitingUser& b) {
    return std::tie(a.share, a.oldest_since, a.name) < std::tie(b.share, b.oldest_since, b.name);
  });
  waiting.resize(round_user_count(alpha, waiting.size()));
  std::vector<std::string> users;
  for (WaitingUser& u : waiting) users.push_back(std::move(u.name));
  return users;
}

namespace {

std::vector<std::size_t> starved_among(const ClusterState& state,
                                       const std::vector<std::size_t>& waiting, double bound) {
  std::vector<std::size_t> starved;
  if (std::isinf(bound)) return starved;
  for (std::size_t i : waiting) {
    if (state.now - state.queue[i].queued_since > bound) starved.push_back(i);
  }
  std::stable_sort(starved.begin(), starved.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(state.queue[a].queued_since, state.queue[a].job->id) <
           std::tie(state.queue[b].queued_since, state.queue[b].job->id);
  });
  return starved;
}

std::vector<std::size_t> whole_queue(const ClusterState& state) {
  std::vector<std::size_t> all(state.queue.size());
  std::iota(all.begin(), all.end(), 0);
  return all;
}

}  // namespace

std::vector<std::size_t> starved_jobs(const ClusterState& state, double bound) {
  return starved_among(state, whole_queue(state), bound);
}

FairnessRound fairness_round(const ClusterState& state, const std::vector<std::size_t>& waiting,
                             const std::map<std::string, double>& shares, double alpha,
                             double starvation_bound) {
  FairnessRound round;
  std::map<std::string, WaitingUser> users;
  for (std::size_t i : waiting) {
    const QueuedJob& q = state.queue[i];
    auto [it, fresh] = users.try_emplace(q.job->user);
    WaitingUser& u = it->second;
    if (fresh) {
      u.name = q.job->user;
      auto share = shares.find(u.name);
      u.share = share == shares.end() ? 0.0 : share->second;
      u.oldest_since = q.queued_since;
    }
    u.oldest_since = std::min(u.oldest_since, q.queued_since);
  }
  std::vector<WaitingUser> ranked;
  for (auto& [name, u] : users) ranked.push_back(std::move(u));
  round.users = lowest_share_users(std::move(ranked), alpha);
  round.starved = starved_among(state, waiting, starvation_bound);
  std::set<std::string> entering(round.users.begin(), round.users.end());
  std::set<std::size_t> starved(round.starved.begin(), round.starved.end());
  for (std::size_t i : waiting) {
    if (entering.contains(state.queue[i].job->user) || starved.contains(i)) {
      round.jobs.push_back(i);
    }
  }
  return round;
}

FairnessRound fairness_round(const ClusterState& state, const std::map<std::string, double>& shares,
                             double alpha, double starvation_bound) {
  return fairness_round(state, whole_queue(state), shares, alpha, starvation_bound);
}

}  // namespace allox
