// es and es-fastest: equal static shares.
//
// Both give every user known to the snapshot (ClusterState::users and every user with a job) a
// static part of each device type in proportion to its weight: floor(n_d * w_u / sum w), the
// leftover machines going to the largest fractional parts (ties by name). Neither is
// work-conserving: a machine in an absent user's part stays idle, which is the point of the
// baseline. A part that rounds to no machine (more users than machines of a type) would keep
// its user off that type for ever, so such a user may hold one job there (k machines for a job
// of k units) on a machine still idle once every user has been served in its part: a share under
// one machine is served from machines no part wants at the time. With at least one machine of
// each type per user (the paper's settings) this never happens. They differ in which of a
// user's jobs takes a free machine of the user's part:
//
// es (AlloX, EuroSys 2020, section 6.1, "ES"): when a resource frees, the user's job with the
//   shortest processing time *on that resource* takes it. When several of the user's machines
//   are free at once, the user's (job, free device type) pairs are served shortest first, so a
//   free GPU and a free CPU node each get the job that is shortest there.
//   With PolicyOptions::es_pick = kHeadOnFastest (`allox simulate --es-pick head`), each user's
//   queue is served as drf serves it instead, inside the user's part: shortest on its fastest
//   device type first, the head job only on that type, and while no machine of that type in the
//   part is free the user's other jobs wait behind it (head-of-line blocking). A reading of the
//   reference simulator's ES, whose figures it comes near (docs/simulator.md); not the paper's.
// es-fastest (allox's earlier variant, kept for comparison): the user's jobs, shortest on their
//   fastest device first, each take the idle device type of the user's part that runs it
//   fastest.
// A job of k units counts k machines of its user's part; one wider than the whole part may run
// when the user holds nothing else of that type, so that it is not shut out forever.
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

std::map<std::string, std::map<DeviceType, std::size_t>> machines_in_use(
    const ClusterState& state) {
  std::map<std::string, std::map<DeviceType, std::size_t>> used;
  for (const RunningJob& r : state.running) {
    used[r.job->user][state.machines[r.machine].device] += static_cast<std::size_t>(r.job->units);
  }
  return used;
}

// The parts lent to users whose part of a type rounds to no machine: one machine of such a type
// (within_part lets a wider job through when the user holds none there), none of the others.
std::map<DeviceType, std::size_t> lent_parts(const std::map<DeviceType, std::size_t>& quota) {
  std::map<DeviceType, std::size_t> lent;
  for (const auto& [device, n] : quota) lent[device] = n == 0 ? 1 : 0;
  return lent;
}

// Whether a job of k units fits its user's part of `part` machines of a type where the user
// holds `used`: used + k <= part, or, for a job wider than the part, when the user holds nothing
// there (otherwise it could never run).
bool within_part(std::size_t used, const QueuedJob& q, std::size_t part) {
  const auto units = static_cast<std::size_t>(q.job->units);
  return part > 0 && (used + units <= part || used == 0);
}

class EqualSharePolicy : public SchedulingPolicy {
 public:
  explicit EqualSharePolicy(EsPick pick) : pick_(pick) {}
  std::string name() const override { return "es"; }

  Expected<Decision> decide(const ClusterState& state) override {
    auto quota = quotas(state);
    auto used = machines_in_use(state);
    std::map<std::string, std::vector<std::size_t>> queues;  // user -> queue indices
    std::map<std::string, double> oldest;                    // user -> earliest queued_since
    for (std::size_t i = 0; i < state.queue.size(); ++i) {
      const std::string& user = state.queue[i].job->user;
      queues[user].push_back(i);
      auto [it, fresh] = oldest.try_emplace(user, state.queue[i].queued_since);
      if (!fresh) it->second = std::min(it->second, state.queue[i].queued_since);
    }
    // Users take their free machines longest-waiting first; this matters only when machines
    // outside every job's part (profiling runs in the simulator) leave fewer idle than free.
    std::vector<std::string> users;
    for (const auto& [user, jobs] : queues) users.push_back(user);
    std::stable_sort(users.begin(), users.end(), [&](const std::string& a, const std::string& b) {
      return oldest.at(a) < oldest.at(b);
    });

    IdleMachines idle(state);
    Decision decision;
    // Every user in its part first, then the lent machines of parts that round to none.
    for (bool lent : {false, true}) {
      for (const std::string& user : users) {
        const std::map<DeviceType, std::size_t> part =
            lent ? lent_parts(quota[user]) : quota[user];
        if (pick_ == EsPick::kHeadOnFastest) {
          start_heads(state, queues[user], part, used[user], idle, decision);
        } else {
          start_shortest_pairs(state, queues[user], part, used[user], idle, decision);
        }
      }
    }
    return decision;
  }

 private:
  // The paper's rule for one user: its shortest (job, device) pair over device types with a free
  // machine in its part, again while one is left; ties to the earlier-queued job, then id.
  // Started jobs leave `jobs`.
  static void start_shortest_pairs(const ClusterState& state, std::vector<std::size_t>& jobs,
                                   const std::map<DeviceType, std::size_t>& part,
                                   std::map<DeviceType, std::size_t>& used, IdleMachines& idle,
                                   Decision& decision) {
    for (;;) {
      std::optional<std::tuple<double, double, std::string, std::size_t, DeviceType>> best;
      for (std::size_t k = 0; k < jobs.size(); ++k) {
        const QueuedJob& q = state.queue[jobs[k]];
        for (const auto& [device, n] : part) {
          if (!idle.fits(device, q.job->units) || !within_part(used[device], q, n)) continue;
          std::optional<double> t = queued_time_on(q, device);
          if (!t) continue;
          auto candidate = std::make_tuple(*t, q.queued_since, q.job->id, k, device);
          if (!best || candidate < *best) best = candidate;
        }
      }
      if (!best) return;
      const auto& [t, since, id, k, device] = *best;
      const int units = state.queue[jobs[k]].job->units;
      decision.start.push_back({id, *idle.take(device, units)});
      used[device] += static_cast<std::size_t>(units);
      jobs.erase(jobs.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }

 private:
  // kHeadOnFastest for one user: its jobs shortest on their fastest device type first (ties to
  // the earlier-queued job, then id), each on that type while the user's part has one free
  // there; the first that finds none stops the user. Started jobs leave `jobs`.
  static void start_heads(const ClusterState& state, std::vector<std::size_t>& jobs,
                          const std::map<DeviceType, std::size_t>& quota,
                          std::map<DeviceType, std::size_t>& used, IdleMachines& idle,
                          Decision& decision) {
    std::vector<std::tuple<double, double, std::string, DeviceType>> order;
    for (std::size_t i : jobs) {
      const QueuedJob& q = state.queue[i];
      std::optional<std::pair<double, DeviceType>> fastest;  // over the cluster's types
      for (const auto& [device, n] : quota) {
        auto t = queued_time_on(q, device);
        if (t && (!fastest || *t < fastest->first)) fastest = {*t, device};
      }
      if (fastest) order.emplace_back(fastest->first, q.queued_since, q.job->id, fastest->second);
    }
    std::sort(order.begin(), order.end());
    std::map<std::string, const QueuedJob*> by_id;
    for (std::size_t i : jobs) by_id[state.queue[i].job->id] = &state.queue[i];
    std::set<std::string> started;
    for (const auto& [time, since, id, device] : order) {
      const QueuedJob& q = *by_id.at(id);
      if (!idle.fits(device, q.job->units) || !within_part(used[device], q, quota.at(device))) {
        break;
      }
      decision.start.push_back({id, *idle.take(device, q.job->units)});
      used[device] += static_cast<std::size_t>(q.job->units);
      started.insert(id);
    }
    std::erase_if(jobs, [&](std::size_t i) { return started.contains(state.queue[i].job->id); });
  }

  EsPick pick_;
};

class EqualShareFastestPolicy : public SchedulingPolicy {
 public:
  std::string name() const override { return "es-fastest"; }

  Expected<Decision> decide(const ClusterState& state) override {
    auto quota = quotas(state);
    auto used = machines_in_use(state);

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
    std::vector<bool> started(state.queue.size(), false);
    // Every job in its user's part first, then the lent machines of parts that round to none.
    for (bool lent : {false, true}) {
      for (const auto& [shortest, i] : order) {
        if (!idle.any()) break;
        if (started[i]) continue;
        const QueuedJob& q = state.queue[i];
        const std::string& user = q.job->user;
        std::optional<std::pair<DeviceType, double>> best;
        for (const auto& [device, n] : counts) {
          const std::size_t part = quota[user][device];
          if (!idle.fits(device, q.job->units) ||
              !within_part(used[user][device], q, lent ? (part == 0 ? 1 : 0) : part)) {
            continue;
          }
          auto t = queued_time_on(q, device);
          if (t && (!best || *t < best->second)) best = {device, *t};
        }
        if (!best) continue;
        decision.start.push_back({q.job->id, *idle.take(best->first, q.job->units)});
        used[user][best->first] += static_cast<std::size_t>(q.job->units);
        started[i] = true;
      }
    }
    return decision;
  }
};

}  // namespace

std::unique_ptr<SchedulingPolicy> make_equal_share_policy(EsPick pick) {
  return std::make_unique<EqualSharePolicy>(pick);
}
std::unique_ptr<SchedulingPolicy> make_equal_share_fastest_policy() {
  return std::make_unique<EqualShareFastestPolicy>();
}

}  // namespace allox
