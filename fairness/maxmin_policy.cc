// maxmin: Gavel-style heterogeneity-aware max-min fairness (Narayanan et al., OSDI 2020), solved
// as a linear program with GLPK at each decision and rounded into placements.
//
// A job's normalised rate on device type d is k_j · p_fast / p(j, d): the fraction of its best
// speed, times the k_j devices (Job::units) it holds, so a user's rate counts devices' worth of
// useful work and a 4-GPU job at full speed weighs as four 1-GPU jobs (Gavel weighs allocations by
// scale factor the same way). Running jobs contribute their rate as a constant c_u to their user.
// Over the idle machines the LP chooses x[j][d] in [0, 1], the share of time job j runs on k_j
// idle devices of type d:
//   maximise   t + eps * sum_j,d rate(j,d) x[j][d]
//   subject to sum_d x[j][d] <= 1                      (a job runs in one place at a time)
//              sum_j k_j x[j][d] <= idle_d             (idle devices of each type)
//              t <= (c_u + sum_{j in u,d} rate(j,d) x[j][d]) / w_u   for each user with queued jobs
// The eps term picks, among max-min optimal allocations, an efficient one (Gavel water-fills for
// the same reason). Each user offers at most idle-machine-count jobs, oldest first, which bounds
// the LP at U * idle * D variables.
//
// Rounding: (job, type) pairs by decreasing x take idle machines (k_j units of one node, best
// fit: fairness/cluster_view.h; a pair whose job fits no node's idle units is skipped, since the
// LP counts devices, not nodes); machines still idle then go,
// one at a time, to the user with the lowest normalised rate so far (its oldest queued job, on
// the idle type that runs it fastest), so the policy is work-conserving.
#include <glpk.h>

#include <algorithm>
#include <limits>
#include <set>
#include <tuple>

#include "fairness/cluster_view.h"
#include "fairness/policies.h"
#include "matcher/glpk_thread.h"

namespace allox {
namespace {

struct Candidate {
  std::size_t queue_index;
  DeviceType device;
  double rate;
  int column = 0;  // GLPK column of x[j][d]
};

class MaxMinPolicy : public SchedulingPolicy {
 public:
  std::string name() const override { return "maxmin"; }

  Expected<Decision> decide(const ClusterState& state) override {
    IdleMachines idle(state);
    Decision decision;
    if (!idle.any() || state.queue.empty()) return decision;
    std::map<DeviceType, std::size_t> counts = device_counts(state);

    // Constant rate per user from running jobs, weighted later.
    std::map<std::string, double> rate_of_user;
    for (const RunningJob& r : state.running) {
      auto fast = fastest_present(*r.job, counts);
      auto actual = r.job->time_on(state.machines[r.machine].device);
      if (fast && actual && *actual > 0) {
        rate_of_user[r.job->user] += r.job->units * fast->second / *actual;
      }
    }

    // Each user's oldest queued jobs, at most as many as there are idle machines.
    std::size_t idle_total = 0;
    for (const auto& [device, n] : counts) idle_total += idle.count(device);
    std::map<std::string, std::vector<std::size_t>> offered;
    std::vector<std::size_t> by_age(state.queue.size());
    for (std::size_t i = 0; i < by_age.size(); ++i) by_age[i] = i;
    std::stable_sort(by_age.begin(), by_age.end(), [&](std::size_t a, std::size_t b) {
      return std::tie(state.queue[a].queued_since, state.queue[a].job->id) <
             std::tie(state.queue[b].queued_since, state.queue[b].job->id);
    });
    std::vector<Candidate> candidates;
    for (std::size_t i : by_age) {
      const QueuedJob& q = state.queue[i];
      auto fast = fastest_present(*q.job, counts);
      if (!fast) continue;
      auto& mine = offered[q.job->user];
      if (mine.size() >= idle_total) continue;
      mine.push_back(i);
      for (const auto& [device, n] : counts) {
        auto t = q.job->time_on(device);
        if (idle.fits(device, q.job->units) && t && *t > 0) {
          candidates.push_back({i, device, q.job->units * fast->second / *t});
        }
      }
    }

    std::vector<double> x = solve(state, idle, rate_of_user, offered, candidates);
    std::vector<std::size_t> ranked(candidates.size());
    for (std::size_t c = 0; c < ranked.size(); ++c) ranked[c] = c;
    std::stable_sort(ranked.begin(), ranked.end(), [&](std::size_t a, std::size_t b) {
      return std::tie(x[a], candidates[a].rate) > std::tie(x[b], candidates[b].rate);
    });
    std::set<std::size_t> started;
    auto start = [&](std::size_t queue_index, const DeviceType& device, double rate) {
      const QueuedJob& q = state.queue[queue_index];
      decision.start.push_back({q.job->id, *idle.take(device, q.job->units)});
      started.insert(queue_index);
      rate_of_user[state.queue[queue_index].job->user] += rate;
    };
    constexpr double kPlaced = 1e-6;
    for (std::size_t c : ranked) {
      const Candidate& cand = candidates[c];
      if (x[c] < kPlaced) break;
      if (started.contains(cand.queue_index) ||
          !idle.fits(cand.device, state.queue[cand.queue_index].job->units)) {
        continue;
      }
      start(cand.queue_index, cand.device, cand.rate);
    }

    // Work-conserving fill: the user with the lowest weighted rate takes the next idle machine.
    while (idle.any()) {
      std::optional<std::size_t> pick;
      std::pair<DeviceType, double> where;
      double lowest = std::numeric_limits<double>::infinity();
      for (const auto& [user, jobs] : offered) {
        double r = rate_of_user[user] / weight_of(state, user);
        if (r >= lowest) continue;
        for (std::size_t i : jobs) {
          if (started.contains(i)) continue;
          if (auto best = idle.best_for(state.queue[i])) {
            pick = i;
            where = *best;
            lowest = r;
            break;
          }
        }
      }
      if (!pick) break;
      auto fast = fastest_present(*state.queue[*pick].job, counts);
      start(*pick, where.first, state.queue[*pick].job->units * fast->second / where.second);
    }
    return decision;
  }

 private:
  // The LP's x per candidate (all zero if GLPK fails, leaving the fill step to place jobs).
  static std::vector<double> solve(const ClusterState& state, const IdleMachines& idle,
                                   const std::map<std::string, double>& rate_of_user,
                                   const std::map<std::string, std::vector<std::size_t>>& offered,
                                   std::vector<Candidate>& candidates) {
    std::vector<double> x(candidates.size(), 0.0);
    if (candidates.empty()) return x;
    matcher::glpk_env_ends_with_thread();
    glp_term_out(GLP_OFF);
    glp_prob* lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MAX);

    // Columns: t, then one per candidate.
    const double eps = 1e-3 / static_cast<double>(candidates.size());
    glp_add_cols(lp, static_cast<int>(candidates.size()) + 1);
    glp_set_col_bnds(lp, 1, GLP_LO, 0, 0);
    glp_set_obj_coef(lp, 1, 1);
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      candidates[c].column = static_cast<int>(c) + 2;
      glp_set_col_bnds(lp, candidates[c].column, GLP_DB, 0, 1);
      glp_set_obj_coef(lp, candidates[c].column, eps * candidates[c].rate);
    }

    std::vector<int> rows{0}, cols{0};
    std::vector<double> values{0};
    auto add_row = [&](int type, double bound) {
      int row = glp_add_rows(lp, 1);
      glp_set_row_bnds(lp, row, type, type == GLP_UP ? 0 : bound, bound);
      return row;
    };
    auto entry = [&](int row, int col, double value) {
      rows.push_back(row);
      cols.push_back(col);
      values.push_back(value);
    };
    std::map<std::size_t, int> job_row;
    std::map<DeviceType, int> device_row;
    std::map<std::string, int> user_row;
    for (const auto& [user, jobs] : offered) {
      double w = weight_of(state, user);
      auto base = rate_of_user.find(user);
      // t - sum rate x / w <= c_u / w
      int row = add_row(GLP_UP, base == rate_of_user.end() ? 0 : base->second / w);
      user_row[user] = row;
      entry(row, 1, 1);
    }
    for (const Candidate& cand : candidates) {
      if (!job_row.contains(cand.queue_index)) job_row[cand.queue_index] = add_row(GLP_UP, 1);
      if (!device_row.contains(cand.device)) {
        device_row[cand.device] = add_row(GLP_UP, static_cast<double>(idle.count(cand.device)));
      }
      const std::string& user = state.queue[cand.queue_index].job->user;
      entry(job_row[cand.queue_index], cand.column, 1);
      entry(device_row[cand.device], cand.column, state.queue[cand.queue_index].job->units);
      entry(user_row[user], cand.column, -cand.rate / weight_of(state, user));
    }
    glp_load_matrix(lp, static_cast<int>(rows.size()) - 1, rows.data(), cols.data(), values.data());
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    if (glp_simplex(lp, &parm) == 0 && glp_get_status(lp) == GLP_OPT) {
      for (std::size_t c = 0; c < candidates.size(); ++c) {
        x[c] = glp_get_col_prim(lp, candidates[c].column);
      }
    }
    glp_delete_prob(lp);
    return x;
  }
};

}  // namespace

std::unique_ptr<SchedulingPolicy> make_maxmin_policy() {
  return std::make_unique<MaxMinPolicy>();
}

}  // namespace allox
