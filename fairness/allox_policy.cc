// allox: AlloX's fairness rounds over the exact matcher (docs/design.md, "Matcher" and
// "Fairness"; AlloX, EuroSys 2020, section 4.3).
//
// Per decision, on a working copy of the machines:
//   1. Starvation guard (allox's extension, off by default): jobs queued longer than the bound
//      start first, oldest first, each on the idle machine that runs it fastest.
//   2. Rounds: fairness_round() (fairness_round.h) picks the ceil(alpha * U) users with the lowest
//      current share L (and any starved job still waiting); the matcher plans their jobs exactly
//      over all machines (busy ones at their residual time). As in the paper and its reference
//      simulator, ONE job the plan puts first on an idle machine starts (the one with the shortest
//      estimated time there; ties to the lower machine index), then users are re-ranked by their
//      updated shares and the matcher solves again at the base alpha. PolicyOptions::batch_rounds
//      starts every such job of a round at once instead (fewer solves, the same jobs' users).
//      A round that starts nothing doubles alpha (work-conserving), up to 1.
//   3. The decision ends when no machine is idle, no job is left, or a round at alpha = 1
//      starts nothing (the matcher prefers every remaining job to wait for a busy, faster
//      machine). That last round planned every queued job, so its estimated starts are returned;
//      PolicyOptions::estimate_starts asks for them in the other cases too.
//
// Multi-unit jobs (Job::units > 1): a round whose entering jobs include one plans with
// matcher::decide_gangs_online() (matcher/multi_unit.h: a feasible plan, a lower bound and its
// gap, not exact); rounds of one-unit jobs use the exact matcher. A started job holds
// the lowest idle units of the node the plan names (fairness/policy.h, Placement); the starvation
// guard puts a starved multi-unit job on the fastest type with a node that fits it, best fit.
// plan_quality() sums every multi-unit solve's cost and bound.
//
// How this calls the matcher: one matcher::decide_online() per round, over the entering users'
// waiting jobs and every machine (busy ones at busy_until, machines started in this decision
// included), with one PriceMemory kept for the policy's life, so consecutive solves of nearly the
// same queue start warm. Solves per decision: at most (starts + 1) * (1 + log2(1 / alpha)) with
// one start per round; batch rounds divide the starts by the jobs each round starts.
#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <tuple>

#include "fairness/cluster_view.h"
#include "fairness/fairness_round.h"
#include "fairness/policies.h"
#include "fairness/share.h"
#include "matcher/multi_unit.h"
#include "matcher/online.h"

namespace allox {
namespace {

class AlloxPolicy : public SchedulingPolicy {
 public:
  AlloxPolicy(const PolicyOptions& options, matcher::Backend backend)
      : options_(options), backend_(backend) {}

  std::string name() const override { return "allox"; }

  Expected<Decision> decide(const ClusterState& state) override {
    Decision decision;
    if (state.queue.empty()) {
      decision.shares = current_shares(state);
      return decision;
    }
    Round r(state);
    decision.shares = starting_shares(state, r);

    // Jobs the cluster cannot run at all would make every matcher solve fail; they wait.
    // The first read of each job's time map in this decision: its nodes are fetched ahead.
    constexpr std::size_t kAhead = 8;
    for (std::size_t i = 0; i < state.queue.size(); ++i) {
      if (i + kAhead < state.queue.size() && !r.times[i + kAhead]->empty()) {
        __builtin_prefetch(&*r.times[i + kAhead]->begin());
      }
      if (runs_on_some(*r.times[i], r.counts)) r.wait(i);
    }

    // Starved jobs, oldest first, each on the idle machine that runs it fastest, ties to the
    // lower machine index. Machines of one device type run a job equally fast, so the only
    // candidates are each device type's lowest idle machine: O(starved · D + M). (A scan of every
    // machine per starved job was 47,000 × 50,000 map lookups, ~40 s per decision, in alloxd at
    // 5,000 nodes once its backlog had waited past the bound.)
    const std::vector<std::size_t> starved = starved_jobs(state, options_.starvation_bound);
    if (!starved.empty()) {
      std::map<DeviceType, std::deque<std::size_t>> idle_of_device;  // machine indices ascending
      for (std::size_t m = 0; m < r.machines.size(); ++m) {
        if (r.idle[m]) idle_of_device[r.machines[m].device].push_back(m);
      }
      for (std::size_t i : starved) {
        if (!r.is_waiting(i)) continue;
        if (r.jobs[i]->units > 1) {
          if (auto machine = r.fastest_fit(i)) r.start(i, *machine, decision);
          continue;
        }
        std::deque<std::size_t>* best = nullptr;
        double best_time = 0;
        for (const auto& [device, t] : *r.times[i]) {
          auto it = idle_of_device.find(device);
          if (it == idle_of_device.end()) continue;
          std::deque<std::size_t>& idle = it->second;
          // Units taken by a multi-unit start above are no longer idle.
          while (!idle.empty() && !r.idle[idle.front()]) idle.pop_front();
          if (idle.empty()) continue;
          if (best == nullptr || t < best_time ||
              (t == best_time && idle.front() < best->front())) {
            best = &idle;
            best_time = t;
          }
        }
        if (best == nullptr) continue;
        const std::size_t machine = best->front();
        best->pop_front();
        r.start(i, machine, decision);
      }
    }

    bool planned_all = false;
    double alpha = options_.alpha;
    while (r.any_idle() && r.waiting_count > 0) {
      const std::vector<std::size_t> waiting = r.waiting_jobs();
      const std::vector<std::size_t> entering =
          fairness_round(state, r.users, waiting, r.shares, alpha, options_.starvation_bound).jobs;
      Expected<matcher::OnlineDecision> online = plan(state, r, entering);
      if (!online.ok()) return Error{"allox round: " + online.message()};
      if (!online->start_now.empty()) {
        if (options_.batch_rounds) {
          for (const matcher::StartNow& s : online->start_now) {
            r.start(entering[s.job], s.machine, decision);
          }
        } else {
          const matcher::StartNow& s = first_to_start(r, entering, online->start_now);
          r.start(entering[s.job], s.machine, decision);
        }
        alpha = options_.alpha;
        continue;
      }
      if (alpha >= 1) {
        planned_all = true;
        for (std::size_t k = 0; k < entering.size(); ++k) {
          decision.estimated_start[state.queue[entering[k]].job->id] = online->estimated_start[k];
        }
        break;
      }
      alpha = std::min(1.0, 2 * alpha);
    }
    if (options_.estimate_starts && !planned_all && r.waiting_count > 0) {
      const std::vector<std::size_t> all = r.waiting_jobs();
      Expected<matcher::OnlineDecision> online = plan(state, r, all);
      if (!online.ok()) return Error{"allox estimated starts: " + online.message()};
      for (std::size_t k = 0; k < all.size(); ++k) {
        decision.estimated_start[state.queue[all[k]].job->id] = online->estimated_start[k];
      }
    }
    return decision;
  }

 private:
  struct Round;
  // current_shares(state) from the round's shares of the queue's users (the same sums in the same
  // order) and a pass over the running jobs of users with nothing queued: no map keyed by name
  // over the whole queue.
  static std::map<std::string, double> starting_shares(const ClusterState& state, const Round& r);

  // The decision under construction: machines as they will be once its starts are applied.
  struct Round {
    explicit Round(const ClusterState& state)
        : now(state.now),
          machines(state.machines),
          idle(state.idle),
          node_of(node_ids(state.machines)),
          first_of_node(first_machines(node_of)),
          counts(device_counts(state)),
          users(queue_users(state)),
          shares(queue_user_shares(state, users, counts)),
          weights(users.names.size(), 1.0) {
      idle.resize(machines.size(), false);
      // The last entry of a user listed twice wins, as when weights were kept by name.
      for (const User& u : state.users) {
        auto it = std::lower_bound(users.names.begin(), users.names.end(), u.name);
        if (it != users.names.end() && *it == u.name) weights[it - users.names.begin()] = u.weight;
      }
      times.reserve(state.queue.size());
      for (const QueuedJob& q : state.queue) {
        if (q.remaining.empty()) {
          times.push_back(&q.job->time);  // no copy: a decision sees the whole queue
        } else {
          std::map<DeviceType, double>& t = overlaid.emplace_back(q.job->time);
          for (const auto& [device, left] : q.remaining) t[device] = left;
          times.push_back(&t);
        }
        jobs.push_back(q.job);
      }
      waiting.assign(state.queue.size(), 0);
    }

    bool any_idle() const { return std::find(idle.begin(), idle.end(), true) != idle.end(); }

    void wait(std::size_t i) {
      waiting[i] = 1;
      ++waiting_count;
    }
    bool is_waiting(std::size_t i) const { return waiting[i] != 0; }
    // Queue indices neither started nor unrunnable, ascending.
    std::vector<std::size_t> waiting_jobs() const {
      std::vector<std::size_t> out;
      out.reserve(waiting_count);
      for (std::size_t i = 0; i < waiting.size(); ++i) {
        if (waiting[i] != 0) out.push_back(i);
      }
      return out;
    }

    // Callers pass a machine whose node has the job's units idle.
    void start(std::size_t i, std::size_t machine, Decision& decision) {
      const DeviceType& device = machines[machine].device;
      decision.start.push_back({jobs[i]->id, machine});
      std::optional<std::vector<std::size_t>> units = gang_units(
          machines, idle, node_of, machine, jobs[i]->units, first_of_node[node_of[machine]]);
      for (std::size_t m : units.value_or(std::vector<std::size_t>{machine})) {
        idle[m] = false;
        machines[m].busy_until = now + times[i]->at(device);
      }
      waiting[i] = 0;
      --waiting_count;
      const std::size_t user = users.user_of[i];
      shares[user] += running_job_share(*jobs[i], device, counts) / weights[user];
    }

    // The lowest machine of the best-fitting node (fewest idle units that hold the job) on the
    // job's fastest type with such a node; nullopt if no node fits it now.
    std::optional<std::size_t> fastest_fit(std::size_t i) const {
      std::map<std::size_t, std::pair<std::size_t, std::size_t>> free;  // node -> (idle, first)
      for (std::size_t m = machines.size(); m-- > 0;) {
        if (!idle[m]) continue;
        auto& [count, first] = free[node_of[m]];
        ++count;
        first = m;
      }
      std::optional<std::tuple<double, std::size_t, std::size_t>> best;  // (time, idle, first)
      for (const auto& [node, entry] : free) {
        const auto& [count, first] = entry;
        if (count < static_cast<std::size_t>(jobs[i]->units)) continue;
        auto t = times[i]->find(machines[first].device);
        if (t == times[i]->end()) continue;
        auto key = std::make_tuple(t->second, count, first);
        if (!best || key < *best) best = key;
      }
      if (!best) return std::nullopt;
      return std::get<2>(*best);
    }

    double now;
    std::vector<Machine> machines;
    std::vector<bool> idle;
    std::vector<std::size_t> node_of;        // node_ids(machines)
    std::vector<std::size_t> first_of_node;  // first_machines(node_of)
    std::map<DeviceType, std::size_t> counts;
    QueueUsers users;             // the queue's users as indices
    std::vector<double> shares;   // current L per user index, updated as the decision starts jobs
    std::vector<double> weights;  // per user index
    std::deque<std::map<DeviceType, double>> overlaid;  // jobs with a remaining estimate
    // Per queue index: the job's times, or its remaining ones from `overlaid`.
    std::vector<const std::map<DeviceType, double>*> times;
    std::vector<const Job*> jobs;
    // Per queue index: neither started nor unrunnable. A flag per job rather than an ordered
    // set: a decision over thousands of queued jobs built and freed the set's nodes each time.
    std::vector<char> waiting;
    std::size_t waiting_count = 0;
  };

  // Whether `times` names a device type present in `counts` (both sorted by name: one merge walk).
  static bool runs_on_some(const std::map<DeviceType, double>& times,
                           const std::map<DeviceType, std::size_t>& counts) {
    auto count = counts.begin();
    for (const auto& entry : times) {
      int order = 1;
      while (count != counts.end() && (order = count->first.compare(entry.first)) < 0) ++count;
      if (count == counts.end()) return false;
      if (order == 0) return true;
    }
    return false;
  }

  // The job of a round's start_now that starts when only one does: shortest estimated time on
  // its machine, ties to the lower machine index (start_now is ordered by machine).
  static const matcher::StartNow& first_to_start(const Round& r,
                                                 const std::vector<std::size_t>& entering,
                                                 const std::vector<matcher::StartNow>& start_now) {
    const matcher::StartNow* best = &start_now.front();
    auto time = [&](const matcher::StartNow& s) {
      return r.times[entering[s.job]]->at(r.machines[s.machine].device);
    };
    for (const matcher::StartNow& s : start_now) {
      if (time(s) < time(*best)) best = &s;
    }
    return *best;
  }

  Expected<matcher::OnlineDecision> plan(const ClusterState& state, const Round& r,
                                         const std::vector<std::size_t>& entering) {
    const bool gangs = std::any_of(entering.begin(), entering.end(),
                                   [&](std::size_t i) { return r.jobs[i]->units > 1; });
    if (gangs) {
      std::vector<matcher::GangJob> jobs;
      for (std::size_t i : entering) {
        jobs.push_back({&state.queue[i].job->id, r.times[i], r.jobs[i]->units});
      }
      matcher::GangProblem problem;
      problem.now = r.now;
      problem.machines = r.machines;
      problem.jobs = jobs;
      problem.idle = r.idle;
      Expected<matcher::GangOnline> online =
          matcher::decide_gangs_online(problem, {.backend = backend_, .memory = &memory_});
      if (!online.ok()) return online.error();
      ++quality_.solves;
      quality_.cost += online->plan.objective;
      quality_.bound += online->plan.lower_bound;
      quality_.worst_gap = std::max(quality_.worst_gap, online->plan.gap());
      matcher::OnlineDecision out;
      for (const matcher::GangStart& s : online->start_now)
        out.start_now.push_back({s.job, s.machine});
      out.estimated_start = online->estimated_start;
      out.objective = online->plan.objective;
      return out;
    }
    std::vector<matcher::PendingJob> pending;
    for (std::size_t i : entering) pending.push_back({&state.queue[i].job->id, r.times[i]});
    matcher::MatchingProblem problem;
    problem.now = r.now;
    problem.machines = r.machines;
    problem.jobs = pending;
    problem.idle = r.idle;
    return matcher::decide_online(problem, {.backend = backend_, .memory = &memory_});
  }

  std::optional<PlanQuality> plan_quality() const override {
    if (quality_.solves == 0) return std::nullopt;
    return quality_;
  }

  PolicyOptions options_;
  PlanQuality quality_;
  matcher::Backend backend_;
  matcher::PriceMemory memory_;  // warm starts across this policy's solves; a hint only
};

std::map<std::string, double> AlloxPolicy::starting_shares(const ClusterState& state,
                                                           const Round& r) {
  std::map<std::string, double> shares;
  for (std::size_t u = 0; u < r.users.names.size(); ++u)
    shares.emplace(r.users.names[u], r.shares[u]);
  std::map<std::string, double> idle_users;  // running jobs, nothing queued
  for (const RunningJob& job : state.running) {
    const std::string& user = job.job->user;
    if (std::binary_search(r.users.names.begin(), r.users.names.end(), user)) continue;
    idle_users[user] += running_job_share(*job.job, state.machines[job.machine].device, r.counts);
  }
  for (auto& [user, share] : idle_users) shares.emplace(user, share / weight_of(state, user));
  return shares;
}

}  // namespace

std::unique_ptr<SchedulingPolicy> make_allox_policy(const PolicyOptions& options) {
  Expected<matcher::Backend> backend = matcher::parse_backend(options.matcher_backend);
  return std::make_unique<AlloxPolicy>(options, backend.ok() ? *backend : matcher::Backend::kAuto);
}

}  // namespace allox
