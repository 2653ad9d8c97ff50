// DRF-family baselines: progressive filling by the least-share user. Weights divide shares.
// Ties between users with equal shares go to the user whose oldest queued job has waited
// longest, then by name.
//
// drf (the reference AlloX simulator's DRF): a user's share is its dominant share over a stated
//   vector (drf_share.h): by default device types are distinct resources, max over types of
//   (its machines of that type / machines of that type); with PolicyOptions::drf_capacity, the
//   resources jobs hold (the reference's cores, memory, GPUs, GPU memory; `allox simulate
//   --drf-vector reference`). On the reference's workload the two give equal shares: a CPU job
//   holds a whole node (32 of 32 cores, at most 16 GB of memory) and a GPU job one GPU (2 GB of
//   GPU memory), so with c CPU and g GPU jobs on N nodes and N GPUs the user's cores share is
//   c/N, its GPUs share g/N, its memory share at most 16c/(N × node memory) <= c/N and its GPU
//   memory share 2g/(N × GPU memory) <= g/N whenever a job fits its node or GPU. (Not so if a
//   GPU job also held host memory; the reference's description does not say so.)
//   Each user's queued jobs are served shortest first (on the job's fastest device type), and
//   the head job may only run on its fastest type. When that type has no idle machine the round stops (head-of-line
//   blocking, the classic DRF behaviour that the reference measures).
// drf-ext (AlloX, EuroSys 2020, section 6.1, "DRFExt"): GPUs are converted to CPUs with one
//   average speed-up rate beta over the workload, ignoring per-job speed-ups: a user's share is
//   its machines in CPU units (a GPU counts beta) over the cluster's capacity in CPU units. The
//   least-share user's job that is shortest on GPU takes a free GPU; otherwise its job shortest
//   on CPU takes a free CPU node. beta is the mean of p(cpu) / p(gpu) over every job the policy
//   has seen (by its estimates). With other device types, each type d gets beta_d relative to
//   the slowest type on average, and free types are tried fastest (largest beta) first.
// drffifo (AlloX, EuroSys 2020, section 6.1, "DRFFIFO", the baseline of the paper's "up to 95%"):
//   DRF with no profiling (uses_estimates() is false, so the simulator skips profiling runs),
//   FIFO within each user, every job on its GPU variant: its `gpu` time; on a cluster of GPU
//   models (device types other than `cpu`), the model its stated times make fastest, as a user
//   submitting a GPU job would pick it; a job with no GPU variant runs on its fastest other type.
//   Only types the cluster has, with a node that holds the job's units, are candidates, so a job
//   runs wherever one of its types exists. Dominant share as drf; head-of-line blocking as drf.
// drf-ext-fastest (allox's earlier variant, kept for comparison): a user's share is AlloX's L
//   (fairness/share.h), the head job (shortest on its fastest type) takes whichever idle device
//   type runs it fastest, and a user whose head job fits no idle machine sits out this round.
#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "fairness/cluster_view.h"
#include "fairness/drf_share.h"
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

// Earliest queued_since per user with queued jobs.
std::map<std::string, double> oldest_waiting(const ClusterState& state) {
  std::map<std::string, double> oldest;
  for (const QueuedJob& q : state.queue) {
    auto [it, fresh] = oldest.try_emplace(q.job->user, q.queued_since);
    if (!fresh) it->second = std::min(it->second, q.queued_since);
  }
  return oldest;
}

// The user with the lowest share among those with jobs left (ties: the longest-waiting oldest
// job, then name).
std::string least_share_user(const std::map<std::string, std::vector<std::size_t>>& queues,
                             const std::map<std::string, std::size_t>& next,
                             const std::map<std::string, double>& share,
                             const std::map<std::string, double>& oldest) {
  std::string best;
  std::tuple<double, double> best_key{std::numeric_limits<double>::infinity(), 0};
  for (const auto& [user, jobs] : queues) {
    if (next.at(user) >= jobs.size()) continue;
    double s = share.contains(user) ? share.at(user) : 0.0;
    std::tuple<double, double> key{s, oldest.contains(user) ? oldest.at(user) : 0.0};
    if (best.empty() || key < best_key) {
      best = user;
      best_key = key;
    }
  }
  return best;
}


// DRF's progressive filling (drf, drffifo): the user with the least dominant share (over the
// vector `capacity` states, drf_share.h; weighted) runs its next queued job on
// `device_for(job)`; when no machine of that type is idle the round stops (head-of-line
// blocking). device_for answers nullopt for a job that can never run on this cluster: it is
// passed over.
Decision fill_by_dominant_share(
    const ClusterState& state, const MachineCapacity& capacity,
    const std::map<std::string, std::vector<std::size_t>>& queues,
    const std::function<std::optional<DeviceType>(const QueuedJob&)>& device_for) {
  const std::map<DeviceType, std::size_t> counts = device_counts(state);
  std::map<std::string, DrfHoldings> used;
  auto holdings = [&](const std::string& user) -> DrfHoldings& {
    return used.try_emplace(user, capacity, counts).first->second;
  };
  for (const RunningJob& r : state.running) {
    holdings(r.job->user).add(*r.job, state.machines[r.machine].device);
  }
  std::map<std::string, std::size_t> next;
  std::map<std::string, double> share;
  for (const auto& [user, jobs] : queues) {
    next[user] = 0;
    share[user] = holdings(user).dominant_share() / weight_of(state, user);
  }
  const std::map<std::string, double> oldest = oldest_waiting(state);
  IdleMachines idle(state);
  Decision decision;
  while (idle.any()) {
    std::string user = least_share_user(queues, next, share, oldest);
    if (user.empty()) break;
    const QueuedJob& head = state.queue[queues.at(user)[next[user]]];
    const std::optional<DeviceType> device = device_for(head);
    if (!device) {
      ++next[user];
      continue;
    }
    std::optional<std::size_t> machine = idle.take(*device, head.job->units);
    if (!machine) break;  // head-of-line blocking
    decision.start.push_back({head.job->id, *machine});
    holdings(user).add(*head.job, *device);
    ++next[user];
    share[user] = holdings(user).dominant_share() / weight_of(state, user);
  }
  return decision;
}

class DrfPolicy : public SchedulingPolicy {
 public:
  explicit DrfPolicy(MachineCapacity capacity) : capacity_(std::move(capacity)) {}
  std::string name() const override { return "drf"; }

  // Shortest first, each job on its fastest type present with a node that can hold it
  // (per_user_queues keeps only jobs that have one type present).
  Expected<Decision> decide(const ClusterState& state) override {
    const std::map<DeviceType, int> largest = largest_nodes(state);
    return fill_by_dominant_share(state, capacity_, per_user_queues(state),
                                  [&](const QueuedJob& job) -> std::optional<DeviceType> {
                                    std::optional<DeviceType> device;
                                    double fastest = std::numeric_limits<double>::infinity();
                                    for (const auto& [d, n] : largest) {
                                      if (n < job.job->units) continue;
                                      auto t = queued_time_on(job, d);
                                      if (t && *t < fastest) {
                                        fastest = *t;
                                        device = d;
                                      }
                                    }
                                    return device;
                                  });
  }

 private:
  MachineCapacity capacity_;
};

class DrfExtFastestPolicy : public SchedulingPolicy {
 public:
  std::string name() const override { return "drf-ext-fastest"; }

  Expected<Decision> decide(const ClusterState& state) override {
    std::map<DeviceType, std::size_t> counts = device_counts(state);
    std::map<std::string, double> share = current_shares(state);
    const std::map<std::string, double> oldest = oldest_waiting(state);
    auto queues = per_user_queues(state);
    std::map<std::string, std::size_t> next;
    for (const auto& [user, jobs] : queues) next[user] = 0;
    IdleMachines idle(state);
    Decision decision;
    while (idle.any()) {
      std::string user = least_share_user(queues, next, share, oldest);
      if (user.empty()) break;
      const QueuedJob& head = state.queue[queues[user][next[user]]];
      auto best = idle.best_for(head);
      if (!best) {
        next[user] = queues[user].size();  // sits out this round
        continue;
      }
      decision.start.push_back({head.job->id, *idle.take(best->first, head.job->units)});
      ++next[user];
      share[user] += running_job_share(*head.job, best->first, counts) / weight_of(state, user);
    }
    return decision;
  }
};

// drf-ext by the paper: one speed-up per device type, learnt over every job seen.
class DrfExtPolicy : public SchedulingPolicy {
 public:
  std::string name() const override { return "drf-ext"; }

  Expected<Decision> decide(const ClusterState& state) override {
    for (const QueuedJob& q : state.queue) observe(*q.job);
    for (const RunningJob& r : state.running) observe(*r.job);
    const std::map<DeviceType, std::size_t> counts = device_counts(state);
    const std::map<DeviceType, double> beta = speedups(counts);
    double capacity = 0;  // in units of the slowest type
    for (const auto& [device, n] : counts) capacity += static_cast<double>(n) * beta.at(device);
    std::vector<DeviceType> fastest_first;
    for (const auto& [device, n] : counts) fastest_first.push_back(device);
    std::stable_sort(
        fastest_first.begin(), fastest_first.end(),
        [&](const DeviceType& a, const DeviceType& b) { return beta.at(a) > beta.at(b); });

    std::map<std::string, double> share;
    for (const RunningJob& r : state.running) {
      share[r.job->user] += beta.at(state.machines[r.machine].device) * r.job->units / capacity /
                            weight_of(state, r.job->user);
    }
    std::map<std::string, std::vector<std::size_t>> queues;
    for (std::size_t i = 0; i < state.queue.size(); ++i) {
      queues[state.queue[i].job->user].push_back(i);
    }
    std::map<std::string, std::size_t> left;  // the least_share_user interface: 0 = sits out
    for (const auto& [user, jobs] : queues) left[user] = 0;
    const std::map<std::string, double> oldest = oldest_waiting(state);

    IdleMachines idle(state);
    Decision decision;
    while (idle.any()) {
      std::string user = least_share_user(queues, left, share, oldest);
      if (user.empty()) break;
      std::vector<std::size_t>& jobs = queues[user];
      std::optional<std::pair<std::size_t, DeviceType>> pick;  // (position in jobs, device)
      for (const DeviceType& device : fastest_first) {
        if (idle.count(device) == 0) continue;
        std::optional<std::tuple<double, double, std::string>> best;
        for (std::size_t k = 0; k < jobs.size(); ++k) {
          const QueuedJob& q = state.queue[jobs[k]];
          std::optional<double> t = queued_time_on(q, device);
          if (!t || !idle.fits(device, q.job->units)) continue;
          auto key = std::make_tuple(*t, q.queued_since, q.job->id);
          if (!best || key < *best) {
            best = key;
            pick = {k, device};
          }
        }
        if (pick) break;
      }
      if (!pick) {
        left[user] = jobs.size();  // nothing of this user's fits a free machine: sits out
        continue;
      }
      const auto& [k, device] = *pick;
      const int units = state.queue[jobs[k]].job->units;
      decision.start.push_back({state.queue[jobs[k]].job->id, *idle.take(device, units)});
      share[user] += beta.at(device) * units / capacity / weight_of(state, user);
      jobs.erase(jobs.begin() + static_cast<std::ptrdiff_t>(k));
    }
    return decision;
  }

  // beta per device type present: mean over seen jobs of p(slowest type) / p(d), the slowest
  // type being the one with the largest mean estimate. 1 for types without a comparable job.
  std::map<DeviceType, double> speedups(const std::map<DeviceType, std::size_t>& counts) const {
    std::map<DeviceType, double> beta;
    DeviceType slowest;
    double slowest_mean = -1;
    for (const auto& [device, n] : counts) {
      beta[device] = 1;
      auto it = time_sum_.find(device);
      if (it == time_sum_.end()) continue;
      const double mean = it->second.first / static_cast<double>(it->second.second);
      if (mean > slowest_mean) {
        slowest_mean = mean;
        slowest = device;
      }
    }
    if (slowest_mean < 0) return beta;
    for (const auto& [device, n] : counts) {
      auto it = ratio_sum_.find({slowest, device});
      if (device != slowest && it != ratio_sum_.end()) {
        beta[device] = it->second.first / static_cast<double>(it->second.second);
      }
    }
    return beta;
  }

 private:
  // Each job counts once, with its estimates when first seen.
  void observe(const Job& job) {
    if (!seen_.insert(job.id).second) return;
    for (const auto& [a, ta] : job.time) {
      auto& [sum, n] = time_sum_[a];
      sum += ta;
      ++n;
      for (const auto& [b, tb] : job.time) {
        if (a == b || !(tb > 0)) continue;
        auto& [rsum, rn] = ratio_sum_[{a, b}];
        rsum += ta / tb;
        ++rn;
      }
    }
  }

  std::set<std::string> seen_;
  std::map<DeviceType, std::pair<double, std::size_t>> time_sum_;  // (sum, count) of estimates
  // (a, b) -> (sum, count) of p(a) / p(b) over jobs with both
  std::map<std::pair<DeviceType, DeviceType>, std::pair<double, std::size_t>> ratio_sum_;
};

// drffifo: DRF on GPU variants in arrival order, no estimates used.
class DrfFifoPolicy : public SchedulingPolicy {
 public:
  explicit DrfFifoPolicy(MachineCapacity capacity) : capacity_(std::move(capacity)) {}
  std::string name() const override { return "drffifo"; }
  bool uses_estimates() const override { return false; }

  // FIFO within each user, each job on its variant; a job none of whose types the cluster can
  // hold never runs.
  Expected<Decision> decide(const ClusterState& state) override {
    const std::map<DeviceType, int> largest = largest_nodes(state);
    std::map<std::string, std::vector<std::size_t>> queues;
    for (std::size_t i = 0; i < state.queue.size(); ++i) {
      if (variant(*state.queue[i].job, largest)) queues[state.queue[i].job->user].push_back(i);
    }
    for (auto& [user, jobs] : queues) {
      std::stable_sort(jobs.begin(), jobs.end(), [&](std::size_t a, std::size_t b) {
        return std::tie(state.queue[a].queued_since, state.queue[a].job->id) <
               std::tie(state.queue[b].queued_since, state.queue[b].job->id);
      });
    }
    return fill_by_dominant_share(state, capacity_, queues,
                                  [&](const QueuedJob& job) { return variant(*job.job, largest); });
  }

 private:
  MachineCapacity capacity_;

  // `gpu` when the job has it; else its fastest type other than `cpu` (ties: the alphabetically
  // first); else its fastest type. Over the types of `largest` (the cluster's largest node per
  // type) whose node holds the job's units.
  static std::optional<DeviceType> variant(const Job& job,
                                           const std::map<DeviceType, int>& largest) {
    std::optional<std::tuple<int, double, DeviceType>> best;  // (rank, time, type), least first
    for (const auto& [device, time] : job.time) {
      auto n = largest.find(device);
      if (n == largest.end() || n->second < job.units) continue;
      const int rank = device == "gpu" ? 0 : device != "cpu" ? 1 : 2;
      auto key = std::make_tuple(rank, time, device);
      if (!best || key < *best) best = key;
    }
    if (!best) return std::nullopt;
    return std::get<2>(*best);
  }
};

}  // namespace

std::unique_ptr<SchedulingPolicy> make_drf_policy(const PolicyOptions& options) {
  return std::make_unique<DrfPolicy>(options.drf_capacity);
}
std::unique_ptr<SchedulingPolicy> make_drf_ext_policy() {
  return std::make_unique<DrfExtPolicy>();
}
std::unique_ptr<SchedulingPolicy> make_drf_ext_fastest_policy() {
  return std::make_unique<DrfExtFastestPolicy>();
}
std::unique_ptr<SchedulingPolicy> make_drffifo_policy(const PolicyOptions& options) {
  return std::make_unique<DrfFifoPolicy>(options.drf_capacity);
}

}  // namespace allox
