// es (equal share): a static partition, as in the reference AlloX simulator. Every user known to
// the snapshot (ClusterState::users and every user with a job) owns machines of each device type
// in proportion to its weight: floor(n_d * w_u / sum w), the leftover machines going to the
// largest fractional parts (ties by name). A user's queued jobs, shortest first, take the idle
// device type that runs them fastest among the types where the user is below its quota. Not
// work-conserving: a machine in an absent user's part stays idle, which is the point of the
// baseline.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>

#include "fairness/cluster_view.h"
#include "fairness/policies.h"

namespace allox {
namespace {

// quota[user][device] by largest remainder.
std::map<std::string, std::map<DeviceType, std::size_t>> quotas(const ClusterState& state) {
  std::set<std::string> users;
  for (const User& u : state.users) users.insert(u.name);
  for (const QueuedJob& q : state.queue) users.insert(q.job->user);
  for (const RunningJob& r : state.running) users.insert(r.job->user);
  double total_weight = 0;
  for (const std::string& u : users) total_weight += weight_of(state, u);

  std::map<std::string, std::map<DeviceType, std::size_t>> quota;
  for (const auto& [device, n] : device_counts(state)) {
    std::vector<std::pair<double, std::string>> fractions;
    std::size_t given = 0;
    for (const std::string& u : users) {
      double exact = static_cast<double>(n) * weight_of(state, u) / total_weight;
      auto whole = static_cast<std::size_t>(std::floor(exact));
      quota[u][device] = whole;
      given += whole;
      fractions.push_back({exact - static_cast<double>(whole), u});
    }
    std::stable_sort(fractions.begin(), fractions.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    for (std::size_t i = 0; given < n && i < fractions.size(); ++i, ++given) {
      ++quota[fractions[i].second][device];
    }
  }
  return quota;
}

class EqualSharePolicy : public SchedulingPolicy {
 public:
  std::string name() const override { return "es"; }

  Expected<Decision> decide(const ClusterState& state) override {
    auto quota = quotas(state);
    std::map<std::string, std::map<DeviceType, std::size_t>> used;
    for (const RunningJob& r : state.running) ++used[r.job->user][state.machines[r.machine].device];

    std::map<DeviceType, std::size_t> counts = device_counts(state);
    std::vector<std::pair<double, std::size_t>> order;  // (shortest time, queue index)
    for (std::size_t i = 0; i < state.queue.size(); ++i) {
      double best = std::numeric_limits<double>::infinity();
      for (const auto& [device, n] : counts) {
        if (auto t = queued_time_on(state.queue[i], device)) best = std::min(best, *t);
      }
      order.push_back({best, i});
    }
    std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
      return std::tie(a.first, state.queue[a.second].queued_since, state.queue[a.second].job->id) <
             std::tie(b.first, state.queue[b.second].queued_since, state.queue[b.second].job->id);
    });

    IdleMachines idle(state);
    Decision decision;
    for (const auto& [shortest, i] : order) {
      if (!idle.any()) break;
      const QueuedJob& q = state.queue[i];
      const std::string& user = q.job->user;
      std::optional<std::pair<DeviceType, double>> best;
      for (const auto& [device, n] : counts) {
        if (idle.count(device) == 0 || used[user][device] >= quota[user][device]) continue;
        auto t = queued_time_on(q, device);
        if (t && (!best || *t < best->second)) best = {device, *t};
      }
      if (!best) continue;
      decision.start.push_back({q.job->id, *idle.take(best->first)});
      ++used[user][best->first];
    }
    return decision;
  }
};

}  // namespace

std::unique_ptr<SchedulingPolicy> make_equal_share_policy() {
  return std::make_unique<EqualSharePolicy>();
}

}  // namespace allox
