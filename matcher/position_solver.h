// Exact matching by shortest augmenting paths on jobs × (machine, position) (internal; the
// `assignment` backend; the model is in matcher.h).
//
// The assignment problem behind the flow: job j in the k-th-from-last position of machine m costs
// k·p(j,m) + r_m. Jobs are added one at a time, longest first, each by one shortest augmenting
// path (Dijkstra on reduced costs, column prices kept between jobs: the Hungarian method in its
// Jonker–Volgenant form). Because k·p(j,m) grows with k, a machine's free positions are never
// worth more than its lowest free one, whose price is still 0: only that one position per
// machine is a column, beside the positions already taken. So there are at most J + M columns,
// whatever the depth, and no level guessing.
//
// Two facts keep each search small. (1) Prices that are dual feasible and tight on the jobs in
// place are concave along a machine's positions, so a job's reduced cost k·p − price is convex
// in k: its cheapest position on a machine is a binary search away, and its others follow in
// order walking down and up from there, so the Dijkstra generates a settled job's columns
// lazily, nearest first. (2) Prices only fall and queues only grow, so the least cost − price
// of a job on a machine only rises: a bound kept per job and machine, in a min-heap per job,
// lets a settled job enter only the few machines that can still beat the nearest free column. On
// 100 distinct machines a search settles about 300 jobs and enters ~2.4 machines for each. (3)
// On few machines with long queues a search settles long runs of each queue (about a third of
// it on 2 machines). A job's walk along a machine ends at the first settled position: by the
// same concavity the holder there is at least as cheap as the job at every position beyond, and
// no farther, so a search costs a heap operation per column it settles. This suits distinct
// machines (where the grouped network has many slots and the transport solver's dense Dijkstra
// over slots is slow); grouping does not help it, so it ignores groups, and identical machines
// (whose positions tie) make its searches long.
//
// Exactness: before returning, the answer is proved optimal by its duals over every column,
// without the convexity the search relies on (every column price ≤ 0, free columns 0, no job
// cheaper in another column at those prices): O(J · (J + M)). A failure is an Error, never a
// plan.
#pragma once

#include <cstddef>

#include "core/result.h"
#include "matcher/level_solver.h"
#include "matcher/prepared_problem.h"

namespace allox::matcher {

// The bounds of (2) take 16 bytes per job and machine: above this many pairs (128 MiB) the
// backend refuses the problem (auto then runs LEMON).
inline constexpr std::size_t kMaxPositionPairs = std::size_t{1} << 23;

// The optimal assignment as a flow on the grouped level network (implicit job arcs) with as
// many levels per type as the deepest machine of that type uses, so that matcher.cc decodes and
// checks it like any backend's. Precondition as solve_levels(). Error when costs could overflow
// or the problem has more than kMaxPositionPairs jobs × machines.
Expected<LevelSolution> solve_by_positions(const PreparedProblem& problem);

}  // namespace allox::matcher
