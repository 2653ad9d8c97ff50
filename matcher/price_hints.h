// Estimated slot prices for LEMON's column generation (internal; see lemon_flow.cc).
//
// A slot's price is what a job pays, beyond its own arc cost, to take it: the dual value of the
// slot in the optimal flow. A good estimate lets LEMON start from each job's few most promising
// arcs. Estimates only change speed, never the answer. Sources:
//   carry_prices   the exact prices of an earlier round with the same device types;
//   recall_prices  the exact prices of an earlier solve (PriceMemory, by device type name);
//   greedy_prices  a list schedule (shortest job first, each to the machine where it finishes
//                  earliest) read as prices: on a machine whose queue, longest first, is
//                  p(1) >= p(2) >= ..., the price of level k is r + Σ_{i>=k} (p(i) + p(i+1)) / 2.
#pragma once

#include <cstdint>
#include <vector>

#include "matcher/prepared_problem.h"
#include "matcher/slot_network.h"

namespace allox::matcher {

PriceHint carry_prices(const SlotNetwork& network, const SlotNetwork& solved,
                       const std::vector<std::int64_t>& solved_prices);

// Replaces the prices of slots whose device type `memory` knows; keeps the seeds.
void recall_prices(const PreparedProblem& problem, const SlotNetwork& network,
                   const PriceMemory& memory, PriceHint& hint);
// Stores the solved prices of every device type of `network` in `memory`.
// With `outlet_flow`, each type's levels only down to one below its deepest used level.
void remember_prices(const PreparedProblem& problem, const SlotNetwork& network,
                     const std::vector<std::int64_t>& slot_price, PriceMemory& memory,
                     const std::vector<std::int64_t>* outlet_flow = nullptr);

// Also seeds every job with its slot in the list schedule, which makes the first model feasible.
// O(J·G log M) for G machine groups.
PriceHint greedy_prices(const PreparedProblem& problem, const SlotNetwork& network);

}  // namespace allox::matcher
