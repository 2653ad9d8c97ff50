// Transportation solver over the slot side: successive shortest paths between the few slot
// nodes, with the jobs kept implicit (see flow_backend.h for the contract).
//
// The network jobs → slots → sink is a transportation problem with a convex cost per slot (its
// outlets, cheapest first). Dual prices p(s) per slot and p(sink) make every residual arc's
// reduced cost non-negative:
//   job j in slot s → slot s'   c(j,s') − c(j,s) + p(s') − p(s)   (j moves from s to s')
//   slot s → sink               r_next(s) − p(s) + p(sink)        (s's next unused outlet unit)
//   sink → slot s               p(s) − p(sink) − r_last(s)        (s's last used outlet unit)
// Start: every job takes its cheapest slot at the hinted prices, and every slot sends to the sink
// what its price says it should (all outlet units dearer than its price unused, all cheaper ones
// used); the result is a pseudo-flow whose imbalances (a slot holding more jobs than it sends on,
// or fewer) are small when the prices are good. Then, while some node has an excess, a phase:
// Dijkstra on reduced costs from every excess node over the S slots and the sink (dense, O(S²))
// until it has settled every deficit node, prices move by the distances, and each deficit,
// nearest first, pulls units along its shortest path (moving the jobs on it) while that path
// stays tight. A phase fixes at least one unit of imbalance, and on the simulator's re-plans
// about four: successive shortest paths with one Dijkstra per phase rather than per unit.
//
// An arc s → s' costs the cheapest move min_j c(j,s') − c(j,s) over the jobs in s (the lower job
// among equals). It is found on first use by a pass over s's members gathered into one
// contiguous row (within a device type, the row's shortest or longest job: the move costs time ×
// level change), and kept current as jobs join s; once its job leaves s it is found again, by a
// new pass when s holds few jobs, else from a heap of all of s's moves to s' (O(log J) per join).
// The passes over every job (start, check) ask, per job and device type, for the slot minimising
// level·time + price: the lower convex hull of the type's (level, price) points answers that by
// binary search (level_hull.h), so they cost O(J·T·log S), not O(J·S). Dijkstra picks its next
// node in the same pass that relaxes the arcs of the last one. Every one of these returns exactly
// what a scan of every job and slot would (the lowest among equals), so the solver's path, and
// which optimal plan it returns among several, do not depend on them.
//
// Exactness: at the end, every job must sit in a cheapest slot at the final prices and every
// slot's price must lie between its last used and next unused outlet costs: LP duality then
// proves the flow optimal. The check runs on every answer (O(J·T·log S)); a failure is an Error,
// never a plan.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "matcher/flow_backend.h"
#include "matcher/level_hull.h"

namespace allox::matcher {
namespace {

constexpr std::int64_t kNoArc = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kUnreached = std::numeric_limits<std::int64_t>::max();
// Prices stay well inside int64 so that cost + price − price never overflows (costs are below
// kMaxPathTicks = 2^60, slot_network.h).
constexpr std::int64_t kPriceLimit = std::int64_t{1} << 61;
constexpr std::size_t kNone = static_cast<std::size_t>(-1);

// A job of slot s as a way to reach slot s': key = c(j,s') − c(j,s). Stale once the job moved
// (its version changed).
struct Move {
  std::int64_t key;
  std::uint32_t job;
  std::uint32_t version;
};
// A stale pair of a slot with at most this many member entries is scanned again, not heaped.
constexpr std::size_t kRescanMembers = 64;
constexpr std::uint32_t kNoJob = std::numeric_limits<std::uint32_t>::max();
struct Cheaper {  // min-heap order, job as tie-break for determinism
  bool operator()(const Move& a, const Move& b) const {
    return a.key != b.key ? a.key > b.key : a.job > b.job;
  }
};

// The per-slot-pair heaps and best moves and the per-slot member lists, kept per thread between
// solves: their capacity is reused, so a simulator or planner that solves thousands of times a
// second neither allocates nor clears them each time (measured: a third of the solve on the paper
// workload when allocated, a tenth when cleared). A pair's entries are read only once this solve
// has written them (Transport::built_ says which), so nothing is cleared but the member lists.
// A thread keeps the capacity of its largest solve.
struct Workspace {
  std::vector<std::vector<Move>> moves;    // [s * S + t]: jobs of s as moves to t
  std::vector<Move> best;                  // [s * S + t]: the cheapest of them, or kNoJob
  std::vector<std::vector<Move>> members;  // jobs per slot (key unused), stale ones skipped

  void reset(std::size_t pairs, std::size_t slots) {
    if (moves.size() < pairs) moves.resize(pairs);
    if (best.size() < pairs) best.resize(pairs);
    if (members.size() < slots) members.resize(slots);
    for (std::size_t i = 0; i < slots; ++i) members[i].clear();
  }
};

Workspace& thread_workspace() {
  thread_local Workspace workspace;
  return workspace;
}

class Transport {
 public:
  Transport(const SlotNetwork& network, const PriceHint* hint)
      : moves_(thread_workspace().moves),
        best_(thread_workspace().best),
        members_(thread_workspace().members),
        net_(network),
        slots_(network.slot_count),
        jobs_(network.job_count),
        sink_(network.slot_count) {
    if (net_.implicit == nullptr) {
      cost_.assign(jobs_ * slots_, kNoArc);
      for (std::size_t j = 0; j < jobs_; ++j) {
        for (std::size_t a = net_.job_begin[j]; a < net_.job_begin[j + 1]; ++a) {
          cost_[j * slots_ + net_.arc_slot[a]] = net_.arc_cost[a];
        }
      }
    }
    for (std::size_t level : net_.slot_level) level_.push_back(static_cast<std::int64_t>(level));
    for (std::size_t s = 0; s < slots_; ++s) {
      if (runs_.empty() || runs_.back().type != net_.slot_type[s]) {
        runs_.push_back({net_.slot_type[s], s, s});
      }
      runs_.back().end = s + 1;
    }
    run_of_.resize(slots_);
    levels_ascend_ = net_.implicit != nullptr;
    for (std::size_t r = 0; r < runs_.size(); ++r) {
      for (std::size_t s = runs_[r].first; s < runs_[r].end; ++s) {
        run_of_[s] = r;
        if (s > runs_[r].first && level_[s] <= level_[s - 1]) levels_ascend_ = false;
      }
    }
    price_.assign(slots_ + 1, 0);
    if (hint != nullptr && hint->slot_price.size() == slots_) {
      std::copy(hint->slot_price.begin(), hint->slot_price.end(), price_.begin());
    }
    // Outlets of each slot, cheapest first: the order in which a slot's flow fills them.
    // One flat array ranged like net_.outlets, each slot's range sorted stably by an insertion
    // sort: a slot's outlets usually come cheapest first already, and nothing is allocated.
    outlets_.resize(net_.outlets.size());
    capacity_.assign(slots_, 0);
    for (std::size_t s = 0; s < slots_; ++s) {
      const std::size_t first = net_.slot_outlet_begin[s];
      for (std::size_t o = first; o < net_.slot_outlet_begin[s + 1]; ++o) {
        capacity_[s] += net_.outlets[o].capacity;
        std::size_t k = o;
        for (; k > first && net_.outlets[outlets_[k - 1]].cost > net_.outlets[o].cost; --k) {
          outlets_[k] = outlets_[k - 1];
        }
        outlets_[k] = o;
      }
    }
  }

  Expected<SlotFlow> solve() {
    if (Status s = start(); !s.ok()) return s.error();
    for (;;) {
      if (excess_nodes_ == 0) break;
      Expected<bool> augmented = augment();
      if (!augmented.ok()) return augmented.error();
      if (!*augmented) return SlotFlow{};  // no deficit reachable: too few levels
    }
    if (Status s = check_optimal(); !s.ok()) return s.error();
    return answer();
  }

  std::size_t augmentations() const { return augmentations_; }

 private:
  std::int64_t cost(std::size_t j, std::size_t s) const {
    if (net_.implicit == nullptr) return cost_[j * slots_ + s];
    const std::int64_t time = net_.implicit->time(j, net_.slot_type[s]);
    return time == kCannotRun ? kNoArc : time * level_[s];
  }
  // Visits job j's arcs as visit(slot, cost), slots ascending. Implicit networks keep a type's
  // slots contiguous: the job's time is read once per type and the cost of each level is one
  // multiplication, which is what makes the O(J·S) passes (start, check) cheap.
  template <typename Visit>
  void for_each_arc(std::size_t j, Visit visit) const {
    if (net_.implicit == nullptr) {
      const std::int64_t* row = &cost_[j * slots_];
      for (std::size_t s = 0; s < slots_; ++s) {
        if (row[s] != kNoArc) visit(s, row[s]);
      }
      return;
    }
    for (const TypeRun& run : runs_) {
      const std::int64_t time = net_.implicit->time(j, run.type);
      if (time == kCannotRun) continue;
      for (std::size_t s = run.first; s < run.end; ++s) visit(s, time * level_[s]);
    }
  }

  // Each type run's slots as a LevelHull at the current prices; empty when the network has
  // explicit arcs or a run's levels do not ascend with its slots (then the passes scan every arc).
  void build_hulls() {
    hulls_.clear();
    if (net_.implicit == nullptr) return;
    hulls_.resize(runs_.size());
    for (std::size_t r = 0; r < runs_.size(); ++r) {
      for (std::size_t s = runs_[r].first; s < runs_[r].end; ++s) {
        if (s > runs_[r].first && level_[s] <= level_[s - 1]) {
          hulls_.clear();
          return;
        }
        hulls_[r].add(level_[s], price_[s], s);
      }
    }
  }
  // Job j's cheapest slot at the current prices (the lowest among equals) and its cost plus
  // price, or kNone; the same answer as a scan of every arc.
  std::pair<std::size_t, std::int64_t> cheapest_slot(std::size_t j) const {
    std::size_t best = kNone;
    std::int64_t best_value = 0;
    if (hulls_.empty()) {
      for_each_arc(j, [&](std::size_t s, std::int64_t c) {
        const std::int64_t value = c + price_[s];
        if (best == kNone || value < best_value) best = s, best_value = value;
      });
      return {best, best_value};
    }
    for (std::size_t r = 0; r < runs_.size(); ++r) {
      const std::int64_t time = net_.implicit->time(j, runs_[r].type);
      if (time == kCannotRun) continue;
      const LevelHull::Cheapest c = hulls_[r].cheapest(time);
      if (best == kNone || c.cost < best_value) best = c.slot, best_value = c.cost;
    }
    return {best, best_value};
  }

  // Outflow bookkeeping of slot s: out_[s] units fill its outlets cheapest first; cursor_[s] is
  // the outlet the next unit goes to and fill_[s] how many units it already carries.
  // Slot s's k-th outlet, cheapest first, and how many it has.
  const Outlet& outlet(std::size_t s, std::size_t k) const {
    return net_.outlets[outlets_[net_.slot_outlet_begin[s] + k]];
  }
  std::size_t outlet_count(std::size_t s) const {
    return net_.slot_outlet_begin[s + 1] - net_.slot_outlet_begin[s];
  }
  std::int64_t next_cost(std::size_t s) const {
    return cursor_[s] < outlet_count(s) ? outlet(s, cursor_[s]).cost : kNoArc;
  }
  std::int64_t last_cost(std::size_t s) const {  // precondition: out_[s] > 0
    const std::size_t k = fill_[s] > 0 ? cursor_[s] : cursor_[s] - 1;
    return outlet(s, k).cost;
  }
  void send_one(std::size_t s) {
    ++out_[s];
    if (++fill_[s] == outlet(s, cursor_[s]).capacity) ++cursor_[s], fill_[s] = 0;
  }
  void take_back_one(std::size_t s) {
    --out_[s];
    if (fill_[s] == 0) {
      --cursor_[s];
      fill_[s] = outlet(s, cursor_[s]).capacity;
    }
    --fill_[s];
  }
  // Jobs held minus units sent on (slots), units received minus jobs (sink).
  std::int64_t excess(std::size_t v) const {
    if (v == sink_) return total_out_ - static_cast<std::int64_t>(jobs_);
    return held_[v] - out_[v];
  }

  // Records job j as a member of its slot, and as a move in every heap of that slot built so far.
  void join_slot(std::size_t j) {
    const std::size_t s = slot_of_[j];
    ++stamp_[s];
    members_[s].push_back({0, static_cast<std::uint32_t>(j), version_[j]});
    const std::int64_t here = cost(j, s);
    const auto job = static_cast<std::uint32_t>(j);
    const std::uint32_t version = version_[j];
    // Locals and raw pointers: this runs over every slot for every moved job, and stores into
    // best_ could otherwise alias the fields the loop reads.
    char* const built = built_.data() + s * slots_;
    Move* const best = best_.data() + s * slots_;
    const std::int64_t* const times =
        net_.implicit != nullptr ? &net_.implicit->time_ticks[j * net_.implicit->types.size()]
                                 : nullptr;
    const std::size_t* const slot_type = net_.slot_type.data();
    const std::int64_t* const level = level_.data();
    for (std::size_t t = 0, end = slots_; t < end; ++t) {
      if (built[t] == kUnread || t == s) continue;
      std::int64_t there = kNoArc;
      if (times == nullptr) {
        there = cost(j, t);
      } else if (const std::int64_t time = times[slot_type[t]]; time != kCannotRun) {
        there = time * level[t];  // cost(j, t)
      }
      if (there == kNoArc) continue;
      const Move move{there - here, job, version};
      if (built[t] == kScanned || built[t] == kStale) {
        // A stale best is still a bound on every live move: one that beats it is the cheapest.
        if (best[t].job == kNoJob || Cheaper{}(best[t], move)) {
          best[t] = move;
          built[t] = kScanned;
        }
        continue;
      }
      auto& heap = moves_[s * slots_ + t];
      heap.push_back(move);
      std::push_heap(heap.begin(), heap.end(), Cheaper{});
    }
  }
  // Job j leaves slot s: the scanned bests it was become stale. O(S) per moved job, so that
  // reading a scanned best (S times per settled slot) needs no check that its job is still there.
  void leave_slot(std::size_t j, std::size_t s) {
    ++stamp_[s];
    char* const built = built_.data() + s * slots_;
    const Move* const best = best_.data() + s * slots_;
    for (std::size_t t = 0, end = slots_; t < end; ++t) {
      if (built[t] == kScanned && best[t].job == j) built[t] = kStale;
    }
  }
  bool live(const Move& entry, std::size_t s) const {
    return version_[entry.job] == entry.version && slot_of_[entry.job] == s;
  }
  // The cheapest live move from s to t by one pass over s's members (kScanned): with good
  // prices most pairs are read once per solve, and a pass costs far less than building a heap.
  void scan(std::size_t s, std::size_t t) {
    const std::size_t pair = s * slots_ + t;
    built_[pair] = kScanned;
    best_[pair] = {0, kNoJob, 0};
    if (net_.implicit != nullptr) {
      load_row(s);
      const std::size_t types = net_.implicit->types.size();
      const std::size_t type = net_.slot_type[t];
      const std::int64_t level = level_[t];
      Move& best = best_[pair];
      if (type == net_.slot_type[s]) {
        // Within the type a move costs time·(level − level of s): the shortest job's is the
        // cheapest to a deeper level, the longest job's to a shallower one.
        if (row_.job.empty()) return;
        const std::size_t i = level > level_[s] ? row_.shortest : row_.longest;
        best = {row_.time[i * types + type] * level - row_.here[i], row_.job[i], row_.version[i]};
        return;
      }
      for (std::size_t i = 0; i < row_.job.size(); ++i) {
        const std::int64_t time = row_.time[i * types + type];
        if (time == kCannotRun) continue;
        const Move move{time * level - row_.here[i], row_.job[i], row_.version[i]};
        if (best.job == kNoJob || Cheaper{}(best, move)) best = move;
      }
      return;
    }
    for (const Move& m : members_[s]) {
      if (!live(m, s)) continue;
      const std::int64_t there = cost(m.job, t);
      if (there == kNoArc) continue;
      const Move move{there - cost(m.job, s), m.job, m.version};
      if (best_[pair].job == kNoJob || Cheaper{}(best_[pair], move)) best_[pair] = move;
    }
  }
  // What scan(s, t) gives, for every unread pair (s, t) with t in run r at once, where r is
  // another device type than s's and its levels ascend. A member's move to a slot of level L
  // costs L·p − c (p its time on r's type, c its cost in s): a line in L, so over s's members the
  // cheapest move at each level lies on the lower envelope of those lines. Taken as points
  // (p, −c) and queried at L, that is the lower convex hull of the points (as level_hull.h, with
  // the roles of level and time swapped): built in O(n log n) for n members, then each level in
  // ascending order moves one pointer toward lower p, O(n + levels) for the run where one scan
  // per pair costs O(n · levels). Ties: points on a hull edge are kept, so every member that
  // reaches the minimum at L is on the hull and those members are consecutive there; the walk
  // over them takes the lower job, as scan() does, and equal points keep their lowest job. An
  // early scan gives what a later one would: joins keep a scanned best current and a leave makes
  // it stale (join_slot, leave_slot).
  void scan_run(std::size_t s, std::size_t r) {
    load_row(s);
    const std::size_t types = net_.implicit->types.size();
    const std::size_t type = runs_[r].type;
    hull_.clear();
    for (std::size_t i = 0; i < row_.job.size(); ++i) {
      const std::int64_t time = row_.time[i * types + type];
      if (time != kCannotRun) hull_.push_back({time, -row_.here[i], i});
    }
    std::sort(hull_.begin(), hull_.end(), [&](const HullPoint& a, const HullPoint& b) {
      if (a.p != b.p) return a.p < b.p;
      if (a.y != b.y) return a.y < b.y;
      return row_.job[a.member] < row_.job[b.member];
    });
    std::size_t n = 0;  // the hull so far: hull_[0, n)
    for (std::size_t k = 0; k < hull_.size(); ++k) {
      const HullPoint point = hull_[k];
      if (n > 0 && hull_[n - 1].p == point.p) continue;  // same p, no cheaper: never better
      while (n >= 2) {
        const HullPoint& o = hull_[n - 2];
        const HullPoint& a = hull_[n - 1];
        const __int128 turn = static_cast<__int128>(a.p - o.p) * (point.y - o.y) -
                              static_cast<__int128>(a.y - o.y) * (point.p - o.p);
        if (turn >= 0) break;
        --n;
      }
      hull_[n++] = point;
    }
    // value(k) at level L: L·p + y. step(k) = value(k + 1) − value(k), rising in k.
    std::size_t first = n == 0 ? 0 : n - 1;  // the first minimum, falls as L rises
    for (std::size_t t = runs_[r].first; t < runs_[r].end; ++t) {
      const std::size_t pair = s * slots_ + t;
      if (built_[pair] != kUnread) continue;
      built_[pair] = kScanned;
      Move& best = best_[pair];
      best = {0, kNoJob, 0};
      if (n == 0) continue;
      const std::int64_t level = level_[t];
      const auto step = [&](std::size_t k) {
        return level * (hull_[k + 1].p - hull_[k].p) + (hull_[k + 1].y - hull_[k].y);
      };
      while (first > 0 && step(first - 1) >= 0) --first;
      std::size_t pick = hull_[first].member;
      for (std::size_t k = first; k + 1 < n && step(k) == 0; ++k) {
        if (row_.job[hull_[k + 1].member] < row_.job[pick]) pick = hull_[k + 1].member;
      }
      const std::int64_t time = row_.time[pick * types + type];
      best = {time * level - row_.here[pick], row_.job[pick], row_.version[pick]};
    }
  }
  // Gathers slot s's live members and their times per device type into row_, unless row_ holds
  // them already (no job joined or left s since): the scans of one settled slot then read one
  // contiguous array, not the problem's time table job by job. Implicit networks only.
  void load_row(std::size_t s) {
    if (row_.slot == s && row_.stamp == stamp_[s]) return;
    const PreparedProblem& problem = *net_.implicit;
    const std::size_t types = problem.types.size();
    row_.slot = s;
    row_.stamp = stamp_[s];
    row_.job.clear();
    row_.version.clear();
    row_.here.clear();
    row_.time.clear();
    const std::size_t own = net_.slot_type[s];
    for (const Move& m : members_[s]) {
      if (!live(m, s)) continue;
      const std::size_t i = row_.job.size();
      row_.job.push_back(m.job);
      row_.version.push_back(m.version);
      row_.here.push_back(cost(m.job, s));
      for (std::size_t type = 0; type < types; ++type)
        row_.time.push_back(problem.time(m.job, type));
      // Shortest and longest on s's own type, the lower job among equals.
      const auto time = [&](std::size_t k) { return row_.time[k * types + own]; };
      if (i == 0 || time(i) < time(row_.shortest) ||
          (time(i) == time(row_.shortest) && m.job < row_.job[row_.shortest])) {
        row_.shortest = i;
      }
      if (i == 0 || time(i) > time(row_.longest) ||
          (time(i) == time(row_.longest) && m.job < row_.job[row_.longest])) {
        row_.longest = i;
      }
    }
  }
  // Heaps are built on second use, once a pair's scanned best has moved away.
  void build_heap(std::size_t s, std::size_t t) {
    built_[s * slots_ + t] = kHeap;
    auto& heap = moves_[s * slots_ + t];
    heap.clear();  // left from an earlier solve
    auto& members = members_[s];
    std::erase_if(members, [&](const Move& m) { return !live(m, s); });
    heap.reserve(members.size());
    for (const Move& m : members) {
      const std::int64_t there = cost(m.job, t);
      if (there != kNoArc) heap.push_back({there - cost(m.job, s), m.job, m.version});
    }
    std::make_heap(heap.begin(), heap.end(), Cheaper{});
  }
  // The cheapest live move from s to t, or null.
  const Move* best_move(std::size_t s, std::size_t t) {
    const std::size_t pair = s * slots_ + t;
    if (built_[pair] == kUnread) {
      if (levels_ascend_ && net_.slot_type[t] != net_.slot_type[s]) {
        scan_run(s, run_of_[t]);
      } else {
        scan(s, t);
      }
    }
    if (built_[pair] == kScanned) return best_[pair].job == kNoJob ? nullptr : &best_[pair];
    if (built_[pair] == kStale) {
      // A few members are scanned again (contiguous, no heap upkeep on later joins); many get a
      // heap. Both give the cheapest live move, the lower job among equals.
      if (net_.implicit != nullptr && members_[s].size() <= kRescanMembers) {
        scan(s, t);
        return best_[pair].job == kNoJob ? nullptr : &best_[pair];
      }
      build_heap(s, t);
    }
    auto& heap = moves_[pair];
    while (!heap.empty()) {
      const Move& top = heap.front();
      if (live(top, s)) return &top;
      std::pop_heap(heap.begin(), heap.end(), Cheaper{});
      heap.pop_back();
    }
    return nullptr;
  }

  Status start() {
    if (jobs_ >= std::numeric_limits<std::uint32_t>::max()) {
      return Error{"transport backend: too many jobs"};
    }
    slot_of_.assign(jobs_, kNone);
    version_.assign(jobs_, 0);
    held_.assign(slots_, 0);
    build_hulls();
    for (std::size_t j = 0; j < jobs_; ++j) {
      const std::size_t best = cheapest_slot(j).first;
      if (best == kNone) return Error{"transport backend: a job has no slot (a bug)"};
      slot_of_[j] = best;
      ++held_[best];
    }
    // Outflows: every unit cheaper than the slot's price is used, dearer ones are not, units at
    // exactly the price as far as the slot holds jobs.
    out_.assign(slots_, 0);
    cursor_.assign(slots_, 0);
    fill_.assign(slots_, 0);
    total_out_ = 0;
    for (std::size_t s = 0; s < slots_; ++s) {
      const std::int64_t price = price_[s] - price_[sink_];
      while (cursor_[s] < outlet_count(s)) {
        const Outlet& unit = outlet(s, cursor_[s]);
        std::int64_t take = 0;
        if (unit.cost < price) {
          take = unit.capacity;
        } else if (unit.cost == price) {
          take = std::clamp<std::int64_t>(held_[s] - out_[s], 0, unit.capacity);
        }
        out_[s] += take;
        if (take < unit.capacity) {
          fill_[s] = take;
          break;
        }
        ++cursor_[s];
      }
      total_out_ += out_[s];
    }
    thread_workspace().reset(slots_ * slots_, slots_);
    built_.assign(slots_ * slots_, kUnread);
    stamp_.assign(slots_, 0);
    row_.slot = kNone;
    for (std::size_t s = 0; s < slots_; ++s) members_[s].reserve(held_[s]);
    for (std::size_t j = 0; j < jobs_; ++j) {
      members_[slot_of_[j]].push_back({0, static_cast<std::uint32_t>(j), 0});
    }
    count_excess_nodes();
    return OkStatus();
  }

  void count_excess_nodes() {
    excess_nodes_ = 0;
    for (std::size_t v = 0; v <= slots_; ++v) excess_nodes_ += excess(v) > 0 ? 1 : 0;
  }

  // One phase: Dijkstra on reduced costs from every excess node over the S slots and the sink
  // (dense: O(S) per settled node), until every deficit node is settled or no more can be. Prices
  // then fall by the distances, capped at the last settled one: every reduced cost stays
  // non-negative and each settled deficit's path from an excess node (pred_) becomes tight. Each
  // settled deficit, nearest first, then pulls units along its path while every arc of it is still
  // tight and open and its source still has excess (an earlier unit may have taken the job or the
  // outlet unit at that cost); what is left waits for the next phase. The first deficit's path
  // always carries a unit, so each phase fixes at least one unit of imbalance, usually several: one
  // Dijkstra serves every deficit it reaches where successive shortest paths ran one per unit.
  // false when no deficit is reachable (the network cannot carry every job).
  Expected<bool> augment() {
    const std::size_t nodes = slots_ + 1;
    dist_.assign(nodes, kUnreached);
    settled_.assign(nodes, 0);
    pred_.assign(nodes, kNone);
    reached_.clear();
    std::size_t deficits = 0;
    for (std::size_t v = 0; v < nodes; ++v) {
      if (excess(v) > 0) dist_[v] = 0;
      if (excess(v) < 0) ++deficits;
    }
    // The unsettled reached node of least distance, the lowest index among equals: a full scan
    // the first time and after the sink settles, else found while relaxing (below).
    auto nearest = [&] {
      std::size_t v = kNone;
      for (std::size_t u = 0; u < nodes; ++u) {
        if (!settled_[u] && dist_[u] != kUnreached && (v == kNone || dist_[u] < dist_[v])) v = u;
      }
      return v;
    };
    std::int64_t reach = 0;
    std::size_t next = nearest();
    while (next != kNone) {
      const std::size_t v = next;
      settled_[v] = 1;
      reach = dist_[v];
      if (excess(v) < 0) {
        reached_.push_back(v);
        if (reached_.size() == deficits) break;
      }
      auto relax = [&](std::size_t to, std::int64_t reduced) {
        const std::int64_t d = dist_[v] + reduced;
        if (!settled_[to] && d < dist_[to]) dist_[to] = d, pred_[to] = v;
      };
      if (v == sink_) {
        for (std::size_t s = 0; s < slots_; ++s) {
          if (out_[s] > 0) relax(s, price_[s] - price_[sink_] - last_cost(s));
        }
        next = nearest();
        continue;
      }
      if (out_[v] < capacity_[v]) relax(sink_, next_cost(v) - price_[v] + price_[sink_]);
      // Every unsettled slot is visited here (v is settled), in ascending order, then the sink
      // (the highest index): the same choice as nearest().
      // The loop every settled slot runs over every slot reads raw pointers and locals: a store
      // through dist or pred could alias the solver's own fields, which the compiler would then
      // reload on every step. best_move() writes only built_, best_ and heaps, never resizes.
      next = kNone;
      std::int64_t next_dist = kUnreached;
      const std::int64_t base = dist_[v] - price_[v];
      const std::size_t row = v * slots_;
      const char* const built = built_.data() + row;
      const Move* const best = best_.data() + row;
      const std::int64_t* const price = price_.data();
      const char* const settled = settled_.data();
      std::int64_t* const dist = dist_.data();
      std::size_t* const pred = pred_.data();
      for (std::size_t t = 0, end = slots_; t < end; ++t) {
        if (t == v || settled[t]) continue;
        const Move* move = nullptr;
        if (built[t] == kScanned) {
          if (best[t].job != kNoJob) move = &best[t];
        } else {
          move = best_move(v, t);
        }
        if (move != nullptr) {
          const std::int64_t d = base + move->key + price[t];
          if (d < dist[t]) dist[t] = d, pred[t] = v;
        }
        if (dist[t] < next_dist) next = t, next_dist = dist[t];
      }
      if (!settled_[sink_] && dist_[sink_] < next_dist) next = sink_;
    }
    if (reached_.empty()) return false;
    for (std::size_t v = 0; v < nodes; ++v) {
      price_[v] -= std::min(dist_[v], reach);
      if (price_[v] > kPriceLimit || price_[v] < -kPriceLimit) {
        return Error{"transport backend: prices beyond 2^61 ms; shorten the times or the queue"};
      }
    }
    for (std::size_t t : reached_) {
      while (excess(t) < 0 && tight_path_to(t)) {
        ++augmentations_;
        if (Status s = pull_along(t); !s.ok()) return s.error();
      }
    }
    count_excess_nodes();
    return true;
  }
  // Whether arc v -> w is tight and open now.
  bool tight_arc(std::size_t v, std::size_t w) {
    if (w == sink_) return out_[v] < capacity_[v] && next_cost(v) - price_[v] + price_[sink_] == 0;
    if (v == sink_) return out_[w] > 0 && price_[w] - price_[sink_] - last_cost(w) == 0;
    const Move* move = best_move(v, w);
    return move != nullptr && move->key + price_[w] - price_[v] == 0;
  }
  // One unit over arc v -> w (tight_arc holds).
  void push_arc(std::size_t v, std::size_t w) {
    if (w == sink_) {
      send_one(v);
      ++total_out_;
    } else if (v == sink_) {
      take_back_one(w);
      --total_out_;
    } else {
      const std::size_t j = best_move(v, w)->job;
      --held_[v];
      ++held_[w];
      leave_slot(j, v);
      slot_of_[j] = w;
      ++version_[j];
      join_slot(j);
    }
  }
  // Whether deficit t's path (pred_) is tight and open over every arc and starts at a node that
  // still has excess.
  bool tight_path_to(std::size_t t) {
    std::size_t v = t;
    for (; pred_[v] != kNone; v = pred_[v]) {
      if (!tight_arc(pred_[v], v)) return false;
    }
    return excess(v) > 0;
  }
  // Moves one unit along t's path, last arc first. Pushing an arc changes only its two ends'
  // members or outflow, which no earlier arc of the path reads, so every arc stays tight.
  Status pull_along(std::size_t t) {
    for (std::size_t v = t; pred_[v] != kNone; v = pred_[v]) {
      if (!tight_arc(pred_[v], v)) {
        return Error{"transport backend: a tight path lost an arc (a bug)"};
      }
      push_arc(pred_[v], v);
    }
    return OkStatus();
  }
  Status check_optimal() {
    const auto fail = [](const std::string& what) {
      return Error{"transport backend: optimality check failed (" + what + "; a bug)"};
    };
    for (std::size_t v = 0; v <= slots_; ++v) {
      if (excess(v) != 0) return fail("unbalanced node");
    }
    build_hulls();
    for (std::size_t j = 0; j < jobs_; ++j) {
      const std::int64_t mine = cost(j, slot_of_[j]) + price_[slot_of_[j]];
      if (cheapest_slot(j).second < mine) return fail("a job has a cheaper slot");
    }
    for (std::size_t s = 0; s < slots_; ++s) {
      const std::int64_t price = price_[s] - price_[sink_];
      if (out_[s] > 0 && last_cost(s) > price) return fail("a slot's used outlet costs too much");
      if (out_[s] < capacity_[s] && next_cost(s) < price) {
        return fail("a slot leaves a cheap outlet unused");
      }
    }
    return OkStatus();
  }

  SlotFlow answer() const {
    SlotFlow flow;
    flow.feasible = true;
    flow.job_slot = slot_of_;
    for (std::size_t j = 0; j < jobs_; ++j) flow.cost += cost(j, slot_of_[j]);
    if (net_.implicit == nullptr) {
      flow.job_arc.assign(jobs_, 0);
      for (std::size_t j = 0; j < jobs_; ++j) {
        for (std::size_t a = net_.job_begin[j]; a < net_.job_begin[j + 1]; ++a) {
          if (net_.arc_slot[a] == slot_of_[j]) flow.job_arc[j] = a;
        }
      }
    }
    flow.outlet_flow.assign(net_.outlets.size(), 0);
    for (std::size_t s = 0; s < slots_; ++s) {
      std::int64_t left = out_[s];
      for (std::size_t k = 0; k < outlet_count(s); ++k) {
        const std::size_t o = outlets_[net_.slot_outlet_begin[s] + k];
        const std::int64_t take = std::min(left, net_.outlets[o].capacity);
        flow.outlet_flow[o] = take;
        flow.cost += take * net_.outlets[o].cost;
        left -= take;
      }
    }
    flow.slot_price.resize(slots_);
    for (std::size_t s = 0; s < slots_; ++s) flow.slot_price[s] = price_[s] - price_[sink_];
    flow.model_arcs = net_.arc_count();
    return flow;
  }

  // Declared first: the workspace outlives this solve (see Workspace).
  std::vector<std::vector<Move>>& moves_;    // [s * S + t]: jobs of s as moves to t
  std::vector<Move>& best_;                  // [s * S + t]: the cheapest of them (kScanned)
  std::vector<std::vector<Move>>& members_;  // jobs per slot (key unused), stale ones skipped
  const SlotNetwork& net_;
  const std::size_t slots_;
  const std::size_t jobs_;
  const std::size_t sink_;           // node id; slots are 0..S−1
  std::vector<std::int64_t> cost_;   // explicit arcs: job-major, kNoArc where the job has none
  std::vector<std::int64_t> level_;  // per slot
  // Maximal runs of consecutive slots of one device type, ascending.
  struct TypeRun {
    std::size_t type, first, end;
  };
  std::vector<TypeRun> runs_;
  std::vector<std::size_t> run_of_;  // per slot, its run
  bool levels_ascend_ = false;       // implicit arcs, each run's levels ascending: scan_run()
  // scan_run()'s members as points (time on the run's type, minus cost in s), then its hull.
  struct HullPoint {
    std::int64_t p, y;
    std::size_t member;  // index into row_
  };
  std::vector<HullPoint> hull_;
  std::vector<LevelHull> hulls_;      // per run; see build_hulls()
  std::vector<std::int64_t> price_;   // per slot, then the sink
  std::vector<std::size_t> outlets_;  // outlet ids, each slot's range cheapest first (stable)
  std::vector<std::int64_t> capacity_;
  std::vector<std::size_t> slot_of_;
  std::vector<std::uint32_t> version_;
  std::vector<std::int64_t> held_;
  std::vector<std::int64_t> out_;
  std::vector<std::size_t> cursor_;
  std::vector<std::int64_t> fill_;
  std::int64_t total_out_ = 0;
  // [s * S + t]: how the moves from s to t are known: not yet, by their best alone (best_; joins
  // keep it current), by a best whose job has left s since (a heap is built on the next read), or
  // all of them in the heap moves_.
  static constexpr char kUnread = 0, kScanned = 1, kHeap = 2, kStale = 3;
  std::vector<char> built_;
  // The live members of one slot with their times (load_row), and per slot a count of the jobs
  // that joined or left it, which says whether row_ is still current.
  struct Row {
    std::size_t slot = kNone;
    std::uint64_t stamp = 0;
    std::vector<std::uint32_t> job;
    std::vector<std::uint32_t> version;
    std::vector<std::int64_t> here;  // the job's cost in the slot
    std::vector<std::int64_t> time;  // [i * types + type]
    std::size_t shortest = 0;        // the member of least time on the slot's type
    std::size_t longest = 0;         // and of most
  };
  Row row_;
  std::vector<std::uint64_t> stamp_;
  std::size_t excess_nodes_ = 0;
  std::size_t augmentations_ = 0;
  std::vector<std::int64_t> dist_;
  std::vector<char> settled_;
  std::vector<std::size_t> pred_;
  std::vector<std::size_t> reached_;  // deficit nodes in the order a phase settled them
};

}  // namespace

Expected<SlotFlow> solve_with_transport(const SlotNetwork& network, const PriceHint* price_hint) {
  Transport transport(network, price_hint);
  return transport.solve();
}

}  // namespace allox::matcher
