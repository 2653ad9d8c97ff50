#include "matcher/position_solver.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "matcher/slot_network.h"

namespace allox::matcher {
namespace {

using Wide = __int128;
constexpr std::int64_t kUnreached = std::numeric_limits<std::int64_t>::max();
constexpr std::size_t kNone = static_cast<std::size_t>(-1);

// Columns are machine positions. Position `level` of machine `machine` costs job j
// level · p(j, type) + residual; price is the column's dual (≤ 0; 0 while free).
struct Columns {
  std::vector<std::size_t> machine;
  std::vector<std::size_t> type;
  std::vector<std::int64_t> level;
  std::vector<std::int64_t> residual;
  std::vector<std::int64_t> price;
  std::vector<std::size_t> owner;  // job, or kNone for a machine's lowest free position

  std::size_t size() const { return machine.size(); }
  std::size_t add(std::size_t m, std::size_t t, std::int64_t k, std::int64_t r) {
    machine.push_back(m);
    type.push_back(t);
    level.push_back(k);
    residual.push_back(r);
    price.push_back(0);
    owner.push_back(kNone);
    return machine.size() - 1;
  }
};

class PositionSolver {
 public:
  explicit PositionSolver(const PreparedProblem& problem)
      : problem_(problem), types_(problem.types.size()), jobs_(problem.job_count) {
    for (std::size_t g = 0; g < problem.groups.size(); ++g) {
      for (std::size_t n = 0; n < problem.groups[g].machines.size(); ++n) {
        machine_group_.push_back(g);
        columns_.add(machine_group_.size() - 1, problem.groups[g].type, 1,
                     problem.groups[g].residual_ticks);
      }
    }
    frontier_.resize(columns_.size());
    std::iota(frontier_.begin(), frontier_.end(), std::size_t{0});
  }

  Status check_range() const {
    std::int64_t longest = 0;
    for (std::int64_t time : problem_.time_ticks) longest = std::max(longest, time);
    std::int64_t max_residual = 0;
    for (const MachineGroup& group : problem_.groups) {
      max_residual = std::max(max_residual, group.residual_ticks);
    }
    // A position is at most J deep; a path alternates at most J jobs and J + M columns.
    const Wide max_arc = Wide{longest} * Wide(jobs_) + Wide{max_residual};
    const Wide nodes = Wide(2 * jobs_ + frontier_.size() + 2);
    if (max_arc * nodes > Wide{kMaxPathTicks}) {
      return Error{"times too large for exact integer costs: a job's cost reaches " +
                   std::to_string(static_cast<long double>(max_arc) / kTicksPerSecond) +
                   " s across " + std::to_string(static_cast<long long>(nodes)) +
                   " nodes, beyond 2^60 ms; shorten the times or the queue"};
    }
    return OkStatus();
  }

  Status solve() {
    job_column_.assign(jobs_, kNone);
    for (std::size_t j : longest_first()) {
      if (Status s = add_job(j); !s.ok()) return s;
    }
    return check_optimal();
  }

  Expected<LevelSolution> answer() const;

 private:
  std::int64_t cost(std::size_t j, std::size_t c) const {
    const std::int64_t time = problem_.time(j, columns_.type[c]);
    return time == kCannotRun ? kUnreached : columns_.level[c] * time + columns_.residual[c];
  }

  // Long jobs first: a shorter job then mostly takes a machine's lowest free position (it runs
  // before the jobs already there) without moving them, so paths stay short.
  std::vector<std::size_t> longest_first() const {
    std::vector<std::int64_t> size(jobs_, std::numeric_limits<std::int64_t>::max());
    for (std::size_t j = 0; j < jobs_; ++j) {
      for (std::size_t t = 0; t < types_; ++t) {
        const std::int64_t time = problem_.time(j, t);
        if (time != kCannotRun) size[j] = std::min(size[j], time);
      }
    }
    std::vector<std::size_t> order(jobs_);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return size[a] > size[b]; });
    return order;
  }

  // Relaxes every unsettled column from job j, reached at reduced distance `base` (its column's
  // distance minus its own reduced cost there), and returns the unsettled column nearest now,
  // a free one on ties.
  std::size_t relax_from(std::size_t j, std::int64_t base) {
    std::size_t best = kNone;
    const std::size_t count = columns_.size();
    for (std::size_t c = 0; c < count; ++c) {
      if (settled_[c]) continue;
      const std::int64_t a = cost(j, c);
      if (a != kUnreached) {
        const std::int64_t d = base + a - columns_.price[c];
        if (d < dist_[c]) dist_[c] = d, pred_[c] = j;
      }
      if (dist_[c] == kUnreached) continue;
      if (best == kNone || dist_[c] < dist_[best] ||
          (dist_[c] == dist_[best] && columns_.owner[c] == kNone &&
           columns_.owner[best] != kNone)) {
        best = c;
      }
    }
    return best;
  }

  // One shortest augmenting path from job j to a free column (Jonker–Volgenant).
  Status add_job(std::size_t j) {
    const std::size_t count = columns_.size();
    dist_.assign(count, kUnreached);
    pred_.assign(count, kNone);
    settled_.assign(count, 0);
    touched_.clear();
    std::size_t next = relax_from(j, 0);
    while (next != kNone && columns_.owner[next] != kNone) {
      settled_[next] = 1;
      touched_.push_back(next);
      const std::size_t holder = columns_.owner[next];
      // holder's reduced cost in its own column is 0 (prices are tight on taken columns).
      const std::int64_t base = dist_[next] - (cost(holder, next) - columns_.price[next]);
      next = relax_from(holder, base);
    }
    if (next == kNone) return Error{"assignment backend: a job has no column (a bug)"};
    const std::int64_t reach = dist_[next];
    for (std::size_t c : touched_) columns_.price[c] += dist_[c] - reach;
    // Move the jobs along the path, from the free column back to j.
    const std::size_t free_column = next;
    for (std::size_t c = free_column;;) {
      const std::size_t job = pred_[c];
      const std::size_t previous = job_column_[job];
      columns_.owner[c] = job;
      job_column_[job] = c;
      if (job == j) break;
      c = previous;
    }
    // The machine's next position becomes its free column (price 0, like every untouched one).
    const std::size_t m = columns_.machine[free_column];
    if (frontier_[m] == free_column) {
      frontier_[m] = columns_.add(m, columns_.type[free_column], columns_.level[free_column] + 1,
                                  columns_.residual[free_column]);
    }
    return OkStatus();
  }

  // LP duality for the assignment problem with every position of every machine: column prices
  // ≤ 0 and 0 on free columns, each job in a column of least reduced cost. Positions beyond a
  // machine's free column cost at least as much at the same price 0, so they need no check.
  Status check_optimal() const {
    const auto fail = [](const std::string& what) {
      return Error{"assignment backend: optimality check failed (" + what + "; a bug)"};
    };
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      if (columns_.price[c] > 0) return fail("a positive column price");
      if (columns_.owner[c] == kNone && columns_.price[c] != 0) return fail("a priced free column");
    }
    for (std::size_t j = 0; j < jobs_; ++j) {
      const std::size_t mine = job_column_[j];
      if (mine == kNone || columns_.owner[mine] != j) return fail("a job without its column");
      const std::int64_t reduced = cost(j, mine) - columns_.price[mine];
      for (std::size_t c = 0; c < columns_.size(); ++c) {
        const std::int64_t a = cost(j, c);
        if (a != kUnreached && a - columns_.price[c] < reduced) {
          return fail("a job has a cheaper column");
        }
      }
    }
    return OkStatus();
  }

  const PreparedProblem& problem_;
  const std::size_t types_;
  const std::size_t jobs_;
  Columns columns_;
  std::vector<std::size_t> machine_group_;  // per machine (numbered here, group by group)
  std::vector<std::size_t> frontier_;       // per machine: its lowest free position's column
  std::vector<std::size_t> job_column_;
  std::vector<std::int64_t> dist_;
  std::vector<std::size_t> pred_;  // the job through which a column was reached
  std::vector<char> settled_;
  std::vector<std::size_t> touched_;  // settled columns of this augmentation
};

Expected<LevelSolution> PositionSolver::answer() const {
  // Levels per type: the deepest position any machine of the type took.
  std::vector<std::size_t> levels(types_, 0);
  for (std::size_t m = 0; m < frontier_.size(); ++m) {
    const auto used = static_cast<std::size_t>(columns_.level[frontier_[m]] - 1);
    std::size_t& deepest = levels[columns_.type[frontier_[m]]];
    deepest = std::max(deepest, used);
  }
  Expected<SlotNetwork> built = build_level_network(problem_, levels, /*implicit_arcs=*/true);
  if (!built.ok()) return built.error();
  LevelSolution out;
  out.network = std::move(*built);
  const SlotNetwork& network = out.network;
  std::vector<std::size_t> first_slot(types_, 0);
  for (std::size_t t = 1; t < types_; ++t) first_slot[t] = first_slot[t - 1] + levels[t - 1];
  // Outlet of group g at a slot: the slot's outlets list the type's groups in ascending order.
  std::vector<std::size_t> rank_in_type(problem_.groups.size(), 0);
  std::vector<std::size_t> groups_seen(types_, 0);
  for (std::size_t g = 0; g < problem_.groups.size(); ++g) {
    rank_in_type[g] = groups_seen[problem_.groups[g].type]++;
  }
  SlotFlow& flow = out.flow;
  flow.feasible = true;
  flow.job_slot.resize(jobs_);
  flow.outlet_flow.assign(network.outlets.size(), 0);
  for (std::size_t j = 0; j < jobs_; ++j) {
    const std::size_t c = job_column_[j];
    const std::size_t slot =
        first_slot[columns_.type[c]] + static_cast<std::size_t>(columns_.level[c]) - 1;
    flow.job_slot[j] = slot;
    const std::size_t g = machine_group_[columns_.machine[c]];
    ++flow.outlet_flow[network.slot_outlet_begin[slot] + rank_in_type[g]];
    flow.cost += cost(j, c);
  }
  flow.model_arcs = jobs_ * columns_.size();
  out.stats = {1, jobs_ + columns_.size() + 1, network.arc_count(), flow.model_arcs};
  return out;
}

}  // namespace

Expected<LevelSolution> solve_by_positions(const PreparedProblem& problem) {
  PositionSolver solver(problem);
  if (Status s = solver.check_range(); !s.ok()) return s.error();
  if (Status s = solver.solve(); !s.ok()) return s.error();
  return solver.answer();
}

}  // namespace allox::matcher
