// drf and drf-ext: progressive filling by the least-share user, as in the reference AlloX
// simulator's DRF baselines. Each user's queued jobs are served shortest first (on the job's
// fastest device type); weights divide shares.
//
// drf treats device types as distinct resources: a user's share is max over types of
// (its machines of that type / machines of that type), and the head job may only run on its
// fastest type. When that type has no idle machine the round stops (head-of-line blocking, the
// classic DRF behaviour that the reference measures).
//
// drf-ext treats them as interchangeable: a user's share is AlloX's L (fairness/share.h, the
// fastest-device share discounted on slower devices), the head job takes whichever idle device
// type runs it fastest, and a user whose head job fits no idle machine sits out this round
// while the others continue.
#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "fairness/cluster_view.h"
#include "fairness/policies.h"
#include "fairness/share.h"

namespace allox {
namespace {

// Each user's queued jobs, shortest on its fastest present device first.
std::map<std::string, std::vector<std::size_t>> per_user_queues(const ClusterState& state) {
  std::map<DeviceType, std::size_t> counts = device_counts(state);
  std::map<std::string, std::vector<std::size_t>> queues;
  std::vector<double> shortest(state.queue.size(), std::numeric_limits<double>::infinity());
  for (std::size_t i = 0; i < state.queue.size(); ++i) {
    for (const auto& [device, n] : counts) {
      if (auto t = queued_time_on(state.queue[i], device)) shortest[i] = std::min(shortest[i], *t);
    }
    if (shortest[i] < std::numeric_limits<double>::infinity()) {
      queues[state.queue[i].job->user].push_back(i);
    }
  }
  for (auto& [user, jobs] : queues) {
    std::stable_sort(jobs.begin(), jobs.end(), [&](std::size_t a, std::size_t b) {
      return std::tie(shortest[a], state.queue[a].queued_since, state.queue[a].job->id) <
             std::tie(shortest[b], state.queue[b].queued_since, state.queue[b].job->id);
    });
  }
  return queues;
}

// The user with the lowest share among those with jobs left (ties: name).
std::string least_share_user(const std::map<std::string, std::vector<std::size_t>>& queues,
                             const std::map<std::string, std::size_t>& next,
                             const std::map<std::string, double>& share) {
  std::string best;
  double best_share = std::numeric_limits<double>::infinity();
  for (const auto& [user, jobs] : queues) {
    if (next.at(user) >= jobs.size()) continue;
    double s = share.contains(user) ? share.at(user) : 0.0;
    if (s < best_share) {
      best = user;
      best_share = s;
    }
  }
  return best;
}

class DrfPolicy : public SchedulingPolicy {
 public:
  std::string name() const override { return "drf"; }

  Expected<Decision> decide(const ClusterState& state) override {
    std::map<DeviceType, std::size_t> counts = device_counts(state);
    std::map<std::string, std::map<DeviceType, std::size_t>> used;
    for (const RunningJob& r : state.running) ++used[r.job->user][state.machines[r.machine].device];
    auto dominant = [&](const std::string& user) {
      double s = 0;
      for (const auto& [device, n] : used[user]) {
        s = std::max(s, static_cast<double>(n) / static_cast<double>(counts.at(device)));
      }
      return s / weight_of(state, user);
    };

    auto queues = per_user_queues(state);
    std::map<std::string, std::size_t> next;
    std::map<std::string, double> share;
    for (const auto& [user, jobs] : queues) {
      next[user] = 0;
      share[user] = dominant(user);
    }
    IdleMachines idle(state);
    Decision decision;
    while (idle.any()) {
      std::string user = least_share_user(queues, next, share);
      if (user.empty()) break;
      const QueuedJob& head = state.queue[queues[user][next[user]]];
      DeviceType device;
      double fastest = std::numeric_limits<double>::infinity();
      for (const auto& [d, n] : counts) {
        auto t = queued_time_on(head, d);
        if (t && *t < fastest) {
          fastest = *t;
          device = d;
        }
      }
      std::optional<std::size_t> machine = idle.take(device);
      if (!machine) break;  // head-of-line blocking
      decision.start.push_back({head.job->id, *machine});
      ++used[user][device];
      ++next[user];
      share[user] = dominant(user);
    }
    return decision;
  }
};

class DrfExtPolicy : public SchedulingPolicy {
 public:
  std::string name() const override { return "drf-ext"; }

  Expected<Decision> decide(const ClusterState& state) override {
    std::map<DeviceType, std::size_t> counts = device_counts(state);
    std::map<std::string, double> share = current_shares(state);
    auto queues = per_user_queues(state);
    std::map<std::string, std::size_t> next;
    for (const auto& [user, jobs] : queues) next[user] = 0;
    IdleMachines idle(state);
    Decision decision;
    while (idle.any()) {
      std::string user = least_share_user(queues, next, share);
      if (user.empty()) break;
      const QueuedJob& head = state.queue[queues[user][next[user]]];
      auto best = idle.best_for(head);
      if (!best) {
        next[user] = queues[user].size();  // sits out this round
        continue;
      }
      decision.start.push_back({head.job->id, *idle.take(best->first)});
      ++next[user];
      share[user] += running_job_share(*head.job, best->first, counts) / weight_of(state, user);
    }
    return decision;
  }
};

}  // namespace

std::unique_ptr<SchedulingPolicy> make_drf_policy() {
  return std::make_unique<DrfPolicy>();
}
std::unique_ptr<SchedulingPolicy> make_drf_ext_policy() {
  return std::make_unique<DrfExtPolicy>();
}

}  // namespace allox
