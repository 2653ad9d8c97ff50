#include "fairness/fairness_round.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string_view>
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

// a == b compared in place: user names are a few bytes, and queue_users() compares one per
// queued job on every decision, where a library call per name cost more than the comparison.
bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
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

QueueUsers queue_users(const ClusterState& state) {
  QueueUsers out;
  out.user_of.resize(state.queue.size());
  // Users are few and a queue's jobs come in runs of one user: the previous job's user is tried
  // first, then each known name, compared in place (no hashing, no map nodes).
  std::vector<std::string_view> seen;
  std::size_t last = 0;
  // A decision reads each queued job once here first, after a solve has pushed the jobs out of
  // the cache: the reads are fetched ahead so that their misses overlap.
  constexpr std::size_t kAhead = 16;
  for (std::size_t i = 0; i < state.queue.size(); ++i) {
    if (i + kAhead < state.queue.size()) __builtin_prefetch(&state.queue[i + kAhead].job->user);
    const std::string_view user = state.queue[i].job->user;
    if (seen.empty() || !same_name(seen[last], user)) {
      last = 0;
      while (last < seen.size() && !same_name(seen[last], user)) ++last;
      if (last == seen.size()) seen.push_back(user);
    }
    out.user_of[i] = last;
  }
  out.names.assign(seen.begin(), seen.end());
  std::vector<std::size_t> order(out.names.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return out.names[a] < out.names[b]; });
  std::vector<std::size_t> rank(order.size());
  std::vector<std::string> sorted;
  sorted.reserve(order.size());
  for (std::size_t k = 0; k < order.size(); ++k) {
    rank[order[k]] = k;
    sorted.push_back(std::move(out.names[order[k]]));
  }
  out.names = std::move(sorted);
  for (std::size_t& u : out.user_of) u = rank[u];
  return out;
}

FairnessRound fairness_round(const ClusterState& state, const QueueUsers& users,
                             const std::vector<std::size_t>& waiting,
                             const std::vector<double>& shares, double alpha,
                             double starvation_bound) {
  FairnessRound round;
  // Per user index: whether it has a waiting job, and its oldest one's queued_since.
  std::vector<char> present(users.names.size(), 0);
  std::vector<double> oldest(users.names.size(), 0);
  for (std::size_t i : waiting) {
    const std::size_t u = users.user_of[i];
    const double since = state.queue[i].queued_since;
    oldest[u] = present[u] ? std::min(oldest[u], since) : since;
    present[u] = 1;
  }
  // Ranked as lowest_share_users() ranks: share, oldest wait, then name (the index order).
  std::vector<std::size_t> ranked;
  for (std::size_t u = 0; u < users.names.size(); ++u) {
    if (present[u]) ranked.push_back(u);
  }
  std::sort(ranked.begin(), ranked.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(shares[a], oldest[a], a) < std::tie(shares[b], oldest[b], b);
  });
  ranked.resize(round_user_count(alpha, ranked.size()));
  std::vector<char> entering(users.names.size(), 0);
  for (std::size_t u : ranked) {
    entering[u] = 1;
    round.users.push_back(users.names[u]);
  }
  round.starved = starved_among(state, waiting, starvation_bound);
  std::vector<char> starved(state.queue.size(), 0);
  for (std::size_t i : round.starved) starved[i] = 1;
  round.jobs.reserve(waiting.size());
  for (std::size_t i : waiting) {
    if (entering[users.user_of[i]] || starved[i]) round.jobs.push_back(i);
  }
  return round;
}

FairnessRound fairness_round(const ClusterState& state, const std::vector<std::size_t>& waiting,
                             const std::map<std::string, double>& shares, double alpha,
                             double starvation_bound) {
  const QueueUsers users = queue_users(state);
  std::vector<double> by_index(users.names.size(), 0.0);
  for (std::size_t u = 0; u < users.names.size(); ++u) {
    auto share = shares.find(users.names[u]);
    if (share != shares.end()) by_index[u] = share->second;
  }
  return fairness_round(state, users, waiting, by_index, alpha, starvation_bound);
}

FairnessRound fairness_round(const ClusterState& state, const std::map<std::string, double>& shares,
                             double alpha, double starvation_bound) {
  return fairness_round(state, whole_queue(state), shares, alpha, starvation_bound);
}

}  // namespace allox
