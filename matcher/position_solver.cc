#include "matcher/position_solver.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "matcher/slot_network.h"

namespace allox::matcher {
namespace {

using Wide = __int128;
constexpr std::int64_t kUnreached = std::numeric_limits<std::int64_t>::max();
constexpr std::uint32_t kNoJob = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint32_t kNoMachine = std::numeric_limits<std::uint32_t>::max();
// Beyond any reduced distance (those stay within ±2^60, check_range()), and safe to add to one.
constexpr std::int64_t kNeverEnters = std::int64_t{1} << 62;

// One machine's positions, index i for position i + 1 (i + 1 from last). Positions [0, taken)
// hold jobs; position `taken` is the lowest free one, the machine's only free column.
struct MachineQueue {
  std::size_t type = 0;
  std::int64_t residual = 0;
  std::vector<std::int64_t> price;   // column duals, ≤ 0; price[taken] == 0
  std::vector<std::uint32_t> owner;  // the job in each taken position
  // Per search: settled when stamp == the search's number; then dist and pred are its distance
  // and the job it was reached from.
  std::vector<std::uint32_t> stamp;
  std::vector<std::int64_t> dist;
  std::vector<std::uint32_t> pred;
  std::int64_t free_dist = kUnreached;  // the free column's tentative distance
  std::uint32_t free_pred = kNoJob;

  std::size_t taken() const { return owner.size(); }
  std::int64_t cost(std::int64_t time, std::size_t i) const {
    return static_cast<std::int64_t>(i + 1) * time + residual;
  }
  // The taken position where position·time − price is least. Prices that are tight on the
  // jobs in place and dual feasible are concave in the position (between positions i and i+1,
  // the jobs there bound price[i+1] − price[i] from above by the one in i and from below by the
  // one in i+1, which is no longer), so position·time − price is convex: binary search on its
  // steps. Precondition: taken() > 0.
  std::size_t best_taken(std::int64_t time) const {
    std::size_t lo = 0;
    std::size_t hi = taken() - 1;
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (price[mid + 1] - price[mid] <= time) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return lo;
  }
};

// A job's next taken column on one machine in order of reduced distance: position·time − price
// is convex, so from its least position `lo` walks down and `hi` up; `at` is the nearer of
// the two (the one in the heap).
struct Candidate {
  std::int64_t dist = 0;
  std::uint32_t job = 0;
  std::uint32_t machine = 0;
  std::int32_t lo = 0;
  std::int32_t hi = 0;
  std::int32_t at = 0;
};

// The heap's order (a function object, so that the heap operations inline it).
struct Farther {
  bool operator()(const Candidate& a, const Candidate& b) const { return a.dist > b.dist; }
};

// One machine in a job's floor heap: no more than the least cost − price of any of the machine's
// positions for the job (see PositionSolver::entry_floors_).
struct Floor {
  std::int64_t value = 0;
  std::uint32_t machine = 0;
};

class PositionSolver {
 public:
  explicit PositionSolver(const PreparedProblem& problem)
      : problem_(problem), types_(problem.types.size()), jobs_(problem.job_count) {
    for (std::size_t g = 0; g < problem.groups.size(); ++g) {
      for (std::size_t n = 0; n < problem.groups[g].machines.size(); ++n) {
        machine_group_.push_back(g);
        MachineQueue queue;
        queue.type = problem.groups[g].type;
        queue.residual = problem.groups[g].residual_ticks;
        machines_.push_back(std::move(queue));
        add_free_position(machines_.back());
      }
    }
  }

  Status check_range() const {
    const std::size_t pairs = jobs_ * machines_.size();
    if (pairs > kMaxPositionPairs) {
      return Error{"assignment backend: " + std::to_string(jobs_) + " jobs x " +
                   std::to_string(machines_.size()) + " machines are " + std::to_string(pairs) +
                   " job-machine pairs, above its limit of " + std::to_string(kMaxPositionPairs) +
                   "; use the auto or lemon backend"};
    }
    std::int64_t longest = 0;
    for (std::int64_t time : problem_.time_ticks) longest = std::max(longest, time);
    std::int64_t max_residual = 0;
    for (const MachineGroup& group : problem_.groups) {
      max_residual = std::max(max_residual, group.residual_ticks);
    }
    // A position is at most J deep; a path alternates at most J jobs and J + M columns.
    const Wide max_arc = Wide{longest} * Wide(jobs_) + Wide{max_residual};
    const Wide nodes = 2 * Wide(jobs_) + Wide(machines_.size()) + 2;
    if (max_arc * nodes > Wide{kMaxPathTicks}) {
      return Error{"times too large for exact integer costs: a job's cost reaches " +
                   std::to_string(static_cast<long double>(max_arc) / kTicksPerSecond) +
                   " s across " + std::to_string(static_cast<long long>(nodes)) +
                   " nodes, beyond 2^60 ms; shorten the times or the queue"};
    }
    return OkStatus();
  }

  Status solve() {
    job_machine_.assign(jobs_, 0);
    job_position_.assign(jobs_, 0);
    job_base_.assign(jobs_, 0);
    // Every machine's first position at price 0, cheapest first.
    const std::size_t machine_count = machines_.size();
    entry_floors_.resize(jobs_ * machine_count);
    for (std::uint32_t j = 0; j < jobs_; ++j) {
      Floor* row = &entry_floors_[j * machine_count];
      for (std::uint32_t m = 0; m < machine_count; ++m) {
        const std::int64_t time = this->time(j, machines_[m]);
        row[m] = {time == kCannotRun ? kNeverEnters : machines_[m].cost(time, 0), m};
      }
      std::make_heap(row, row + machine_count,
                     [](const Floor& a, const Floor& b) { return a.value > b.value; });
    }
    for (std::size_t j : longest_first()) {
      if (Status s = search_from(static_cast<std::uint32_t>(j)); !s.ok()) return s;
    }
    return check_optimal();
  }

  Expected<LevelSolution> answer() const;

 private:
  static void add_free_position(MachineQueue& queue) {
    queue.price.push_back(0);
    queue.stamp.push_back(0);
    queue.dist.push_back(kUnreached);
    queue.pred.push_back(kNoJob);
  }

  std::int64_t time(std::uint32_t job, const MachineQueue& queue) const {
    return problem_.time(job, queue.type);
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

  bool settled(const MachineQueue& queue, std::int32_t i) const {
    return queue.stamp[static_cast<std::size_t>(i)] == search_;
  }

  // Queues job's nearest unsettled taken column on machine m at lo (walking down) or hi (walking
  // up), unless it is no nearer than the best free column already found. A walk ends at the first
  // settled column it reaches (below), so a search costs a heap operation per column it settles.
  void push_candidate(std::uint32_t job, std::uint32_t m, std::int32_t lo, std::int32_t hi) {
    if (const std::optional<Candidate> c = candidate(job, m, lo, hi)) {
      heap_.push_back(*c);
      std::push_heap(heap_.begin(), heap_.end(), Farther{});
    }
  }

  // The same candidate, or none when it is no nearer than the best free column already found.
  //
  // A walk ends at the first settled column i it reaches; i's holder h covers the positions
  // beyond. Below the job's cheapest position its reduced cost falls toward it, so p(job) ≤
  // price[i+1] − price[i], and h's own dual feasibility caps that step at p(h): p(job) ≤ p(h)
  // (above the cheapest position, p(job) ≥ p(h) likewise). Past i the job's reduced cost then
  // grows at least as fast as h's, by |k − i|·|p(job) − p(h)| more, and h, settled through i at
  // no more than the job's distance there, walks on from i itself: h reaches every column beyond
  // i no farther than the job would. So a search costs a heap operation per column it settles, not
  // a step per settled position passed (about a third of the queue per search on two machines),
  // and finds the same distances; check_optimal() proves the answer either way. The argument
  // holds from the position next to the job's cheapest on, so enter() starts below that one when
  // it is settled.
  std::optional<Candidate> candidate(std::uint32_t job, std::uint32_t m, std::int32_t lo,
                                     std::int32_t hi) const {
    const MachineQueue& queue = machines_[m];
    const auto taken = static_cast<std::int32_t>(queue.taken());
    if (lo >= 0 && settled(queue, lo)) lo = -1;
    if (hi < taken && settled(queue, hi)) hi = taken;
    const std::int64_t time = this->time(job, queue);
    const std::int64_t base = job_base_[job];
    const auto reach = [&](std::int32_t i) {
      const auto at = static_cast<std::size_t>(i);
      return base + queue.cost(time, at) - queue.price[at];
    };
    const std::int64_t down = lo >= 0 ? reach(lo) : kUnreached;
    const std::int64_t up = hi < taken ? reach(hi) : kUnreached;
    const std::int64_t nearest = std::min(down, up);
    if (nearest >= bound_) return std::nullopt;
    return Candidate{nearest, job, m, lo, hi, down <= up ? lo : hi};
  }

  // Replaces the heap's nearest entry by `c` (one sift down instead of a pop and a push).
  void replace_nearest(const Candidate& c) {
    const std::size_t size = heap_.size();
    std::size_t hole = 0;
    for (;;) {
      std::size_t child = 2 * hole + 1;
      if (child >= size) break;
      if (child + 1 < size && heap_[child + 1].dist < heap_[child].dist) ++child;
      if (heap_[child].dist >= c.dist) break;
      heap_[hole] = heap_[child];
      hole = child;
    }
    heap_[hole] = c;
  }

  // Settles `job` at reduced distance `base` (its column's distance minus its reduced cost
  // there): offers every machine's free column and queues its best taken one.
  void relax_from(std::uint32_t job, std::int64_t base) {
    job_base_[job] = base;
    const std::size_t machine_count = machines_.size();
    Floor* row = &entry_floors_[job * machine_count];
    // bound_ is finite once a job is settled (every job can run somewhere), and then the
    // difference stays inside int64 (check_range()).
    std::int64_t limit = bound_ == kUnreached ? kNeverEnters : bound_ - base;
    // The row is a min-heap: the floors below the limit form a subtree at the root. Collect it
    // level by level (ascending indices), enter those still below the shrinking limit, then
    // sift the raised ones down, deepest first.
    below_.clear();
    if (row[0].value < limit) below_.push_back(0);
    for (std::size_t k = 0; k < below_.size(); ++k) {
      for (std::size_t child = 2 * below_[k] + 1; child <= 2 * below_[k] + 2; ++child) {
        if (child < machine_count && row[child].value < limit) below_.push_back(child);
      }
    }
    for (std::size_t n : below_) {
      if (row[n].value >= limit) continue;
      const std::uint32_t m = row[n].machine;
      row[n].value = m == own_machine_ ? enter_own(job, base, m) : enter(job, base, m);
      limit = bound_ - base;
    }
    for (std::size_t k = below_.size(); k-- > 0;) sift_down(row, machine_count, below_[k]);
  }

  static void sift_down(Floor* heap, std::size_t size, std::size_t hole) {
    const Floor raised = heap[hole];
    for (;;) {
      std::size_t child = 2 * hole + 1;
      if (child >= size) break;
      if (child + 1 < size && heap[child + 1].value < heap[child].value) ++child;
      if (heap[child].value >= raised.value) break;
      heap[hole] = heap[child];
      hole = child;
    }
    heap[hole] = raised;
  }

  // enter() for the machine of the settled job's own column `own_position_`, its cheapest
  // (it is tight there): no search, its neighbours are next.
  std::int64_t enter_own(std::uint32_t job, std::int64_t base, std::uint32_t m) {
    MachineQueue& queue = machines_[m];
    const std::int64_t time = this->time(job, queue);
    offer_free(job, base, m, queue.cost(time, queue.taken()));
    const auto at = static_cast<std::int32_t>(own_position_);
    push_candidate(job, m, at - 1, at + 1);
    return queue.cost(time, own_position_) - queue.price[own_position_];
  }

  void offer_free(std::uint32_t job, std::int64_t base, std::uint32_t m, std::int64_t free) {
    MachineQueue& queue = machines_[m];
    if (base + free < queue.free_dist) {
      queue.free_dist = base + free;
      queue.free_pred = job;
      if (base + free < bound_) bound_ = base + free, bound_machine_ = m;
    }
  }

  // Offers job's columns on machine m, from reduced distance `base`: the free one directly,
  // the nearest taken one to the heap. Returns the least cost − price over them.
  std::int64_t enter(std::uint32_t job, std::int64_t base, std::uint32_t m) {
    MachineQueue& queue = machines_[m];
    const std::int64_t time = this->time(job, queue);
    const std::size_t taken = queue.taken();
    const std::int64_t free = queue.cost(time, taken);  // price 0
    offer_free(job, base, m, free);
    if (taken == 0) return free;
    const std::size_t best = queue.best_taken(time);
    // Down from the least position, or from the one below it when it is settled (candidate()).
    const auto first = static_cast<std::int32_t>(best);
    push_candidate(job, m, settled(queue, first) ? first - 1 : first, first + 1);
    return std::min(free, queue.cost(time, best) - queue.price[best]);
  }

  // Puts job in position i of machine m (the free one, which grows the queue, or a taken one
  // whose holder the caller moves next).
  void place(std::uint32_t job, std::uint32_t m, std::size_t i) {
    MachineQueue& queue = machines_[m];
    if (i == queue.taken()) {
      queue.owner.push_back(kNoJob);
      add_free_position(queue);
    }
    queue.owner[i] = job;
    job_machine_[job] = m;
    job_position_[job] = i;
  }

  // One shortest augmenting path from job `start`, the only one without a column, to a free
  // column (Jonker–Volgenant), Dijkstra over the taken columns with each settled job's columns
  // generated lazily, nearest first; it stops when no taken column is nearer than the nearest
  // free one (free columns win ties).
  Status search_from(std::uint32_t start) {
    ++search_;
    heap_.clear();
    touched_.clear();
    bound_ = kUnreached;
    for (MachineQueue& queue : machines_) queue.free_dist = kUnreached;
    own_machine_ = kNoMachine;
    relax_from(start, 0);
    while (!heap_.empty() && heap_.front().dist < bound_) {
      const Candidate next = heap_.front();
      MachineQueue& queue = machines_[next.machine];
      // The job's following column on this machine, in order, takes its place.
      const std::optional<Candidate> following =
          next.at == next.lo ? candidate(next.job, next.machine, next.lo - 1, next.hi)
                             : candidate(next.job, next.machine, next.lo, next.hi + 1);
      if (following) {
        replace_nearest(*following);
      } else {
        std::pop_heap(heap_.begin(), heap_.end(), Farther{});
        heap_.pop_back();
      }
      if (settled(queue, next.at)) continue;
      const auto i = static_cast<std::size_t>(next.at);
      queue.stamp[i] = search_;
      queue.dist[i] = next.dist;
      queue.pred[i] = next.job;
      touched_.push_back({next.machine, i});
      const std::uint32_t holder = queue.owner[i];
      // holder's reduced cost in its own column is 0 (prices are tight on taken columns).
      own_machine_ = next.machine;
      own_position_ = i;
      relax_from(holder, next.dist - (queue.cost(time(holder, queue), i) - queue.price[i]));
    }
    if (bound_ == kUnreached) return Error{"assignment backend: a job has no column (a bug)"};
    const std::int64_t reach = bound_;
    for (const auto& [m, i] : touched_) {
      machines_[m].price[i] += machines_[m].dist[i] - reach;
    }
    // Move the jobs along the path, from the free column back to `start`.
    std::uint32_t m = bound_machine_;
    std::size_t i = machines_[m].taken();
    std::uint32_t job = machines_[m].free_pred;
    for (;;) {
      const std::uint32_t previous_machine = job_machine_[job];
      const std::size_t previous_position = job_position_[job];
      place(job, m, i);
      if (job == start) break;
      m = previous_machine;
      i = previous_position;
      job = machines_[m].pred[i];
    }
    return OkStatus();
  }

  // LP duality for the assignment problem with every position of every machine, checked on
  // every column without the convexity the search relies on: column prices ≤ 0 and 0 on free
  // columns, each job in a column of least reduced cost. Positions beyond a machine's free
  // column cost at least as much at the same price 0, so they need no check.
  Status check_optimal() const {
    const auto fail = [](const std::string& what) {
      return Error{"assignment backend: optimality check failed (" + what + "; a bug)"};
    };
    std::size_t placed = 0;
    for (std::size_t m = 0; m < machines_.size(); ++m) {
      const MachineQueue& queue = machines_[m];
      if (queue.price.size() != queue.taken() + 1 || queue.price.back() != 0) {
        return fail("a priced free column");
      }
      for (std::size_t i = 0; i < queue.taken(); ++i) {
        if (queue.price[i] > 0) return fail("a positive column price");
        const std::uint32_t job = queue.owner[i];
        if (job >= jobs_ || job_machine_[job] != m || job_position_[job] != i) {
          return fail("a column without its job");
        }
        ++placed;
      }
    }
    if (placed != jobs_) return fail("a job without a column");
    for (std::uint32_t j = 0; j < jobs_; ++j) {
      const MachineQueue& mine = machines_[job_machine_[j]];
      const std::size_t at = job_position_[j];
      const std::int64_t reduced = mine.cost(time(j, mine), at) - mine.price[at];
      for (const MachineQueue& queue : machines_) {
        const std::int64_t time = this->time(j, queue);
        if (time == kCannotRun) continue;
        for (std::size_t i = 0; i < queue.price.size(); ++i) {
          if (queue.cost(time, i) - queue.price[i] < reduced) {
            return fail("a job has a cheaper column");
          }
        }
      }
    }
    return OkStatus();
  }

  const PreparedProblem& problem_;
  const std::size_t types_;
  const std::size_t jobs_;
  std::vector<MachineQueue> machines_;      // numbered group by group
  std::vector<std::size_t> machine_group_;  // per machine
  std::vector<std::uint32_t> job_machine_;
  std::vector<std::size_t> job_position_;
  std::vector<std::int64_t> job_base_;
  // Per job, a min-heap of its machines by floor. Prices only fall and queues only grow, so the
  // least cost − price of a job on a machine only rises and a floor once exact stays a floor:
  // a settled job enters only the machines whose floor is below the nearest free column.
  std::vector<Floor> entry_floors_;
  std::vector<std::size_t> below_;  // relax_from(): the heap entries below its limit  // per
                                    // search: a settled job's reduced distance
  std::uint32_t search_ = 0;
  std::vector<Candidate> heap_;
  std::vector<std::pair<std::uint32_t, std::size_t>> touched_;  // settled columns of a search
  std::int64_t bound_ = kUnreached;  // the nearest free column's distance
  std::uint32_t own_machine_ = 0;    // the column through which relax_from()'s job was reached
  std::size_t own_position_ = 0;
  std::uint32_t bound_machine_ = 0;
};

Expected<LevelSolution> PositionSolver::answer() const {
  // Levels per type: the deepest position any machine of the type took.
  std::vector<std::size_t> levels(types_, 0);
  for (const MachineQueue& queue : machines_) {
    levels[queue.type] = std::max(levels[queue.type], queue.taken());
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
  std::size_t columns = 0;
  for (const MachineQueue& queue : machines_) columns += queue.price.size();
  for (std::uint32_t j = 0; j < jobs_; ++j) {
    const MachineQueue& queue = machines_[job_machine_[j]];
    const std::size_t i = job_position_[j];
    const std::size_t slot = first_slot[queue.type] + i;
    flow.job_slot[j] = slot;
    const std::size_t g = machine_group_[job_machine_[j]];
    ++flow.outlet_flow[network.slot_outlet_begin[slot] + rank_in_type[g]];
    flow.cost += queue.cost(time(j, queue), i);
  }
  flow.model_arcs = jobs_ * columns;
  out.stats = {1, jobs_ + columns + 1, network.arc_count(), flow.model_arcs};
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
