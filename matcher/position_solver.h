// Exact matching by shortest augmenting paths on jobs × (machine, position) (internal; the
// `assignment` backend; the model is in matcher.h).
//
// The assignment problem behind the flow: job j in the k-th-from-last position of machine m costs
// k·p(j,m) + r_m. Jobs are added one at a time, longest first, each by one shortest augmenting
// path (Dijkstra on reduced costs, column prices kept between jobs: the Hungarian method in its
// Jonker–Volgenant form). Because k·p(j,m) grows with k, a machine's free positions are never
// worth more than its lowest free one, whose price is still 0: only that one position per
// machine is a column, beside the positions already taken. So there are at most J + M columns,
// whatever the depth, and no level guessing; each augmentation costs O(settled jobs · (J + M)).
// This suits many distinct machines (where the grouped network has many slots and the transport
// solver's dense Dijkstra over slots is slow); grouping does not help it, so it ignores groups.
//
// Exactness: before returning, the answer is proved optimal by its duals (every column price
// ≤ 0, free columns 0, no job cheaper in another column at those prices): O(J · (J + M)).
// A failure is an Error, never a plan.
#pragma once

#include "core/result.h"
#include "matcher/level_solver.h"
#include "matcher/prepared_problem.h"

namespace allox::matcher {

// The optimal assignment as a flow on the grouped level network (implicit job arcs) with as
// many levels per type as the deepest machine of that type uses, so that matcher.cc decodes and
// checks it like any backend's. Precondition as solve_levels(). Error when costs could overflow.
Expected<LevelSolution> solve_by_positions(const PreparedProblem& problem);

}  // namespace allox::matcher
