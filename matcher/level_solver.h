// The lazy-level loop: solve the grouped network with a few position levels per device type and
// add levels until no group fills its top level (internal; the argument is in matcher.h).
//
// LEMON gets price hints (price_hints.h; lemon_flow.cc then starts from each job's few most
// promising arcs and prices the rest in): the first round from a list schedule, later rounds
// from the previous round's exact prices. Hints change speed, never the answer.
#pragma once

#include "core/result.h"
#include "matcher/matcher.h"
#include "matcher/prepared_problem.h"
#include "matcher/slot_network.h"

namespace allox::matcher {

struct LevelSolution {
  SlotNetwork network;
  SlotFlow flow;
  SolveStats stats;
};

// What Backend::kAuto runs: the transport solver when the grouped network starts with few slots
// (its Dijkstra is dense over them), or with somewhat more when `memory` (may be null) remembers
// every device type (a warm re-plan: the solver starts at the previous solve's prices); otherwise
// the assignment solver (position_solver.h) when the cluster has several device types, its
// machines nearly all of distinct ones (at most a quarter of them in types of 3 or more
// machines), and it fits kMaxPositionPairs, else LEMON. All are exact; this only picks the
// fastest measured.
Backend choose_backend(const PreparedProblem& problem, const PriceMemory* memory = nullptr);

// Optimal flow of the grouped network (levels grown as needed), or of the naive network.
// Precondition: problem.job_count > 0 and every job can run on some machine (prepare()).
// `memory` (may be null) hints the first round and receives the final prices (LEMON only).
Expected<LevelSolution> solve_levels(const PreparedProblem& problem, Backend backend,
                                     bool naive_graph, PriceMemory* memory);

}  // namespace allox::matcher
