// Estimated slot prices for LEMON's column generation (internal; see lemon_flow.cc).
//
// A slot's price is what a job pays, beyond its own arc cost, to take it: the dual value of the
// slot in the optimal flow. A good estimate lets LEMON start from each job's few most promising
// arcs. Estimates only change speed, never the answer. Three sources, best first:
//   carry_prices   the exact prices of an earlier solve with the same device types;
//   sample_of      a sample (every 8th job on every 8th machine of each group) keeps each
//                  machine's queue, hence the level prices, about the same when groups are large;
//   greedy_prices  a list schedule (shortest job first, each to the machine where it finishes
//                  earliest) read as prices: on a machine whose queue, longest first, is
//                  p(1) >= p(2) >= ..., the price of level k is r + Σ_{i>=k} (p(i) + p(i+1)) / 2.
#pragma once

#include <cstdint>
#include <vector>

#include "matcher/prepared_problem.h"
#include "matcher/slot_network.h"

namespace allox::matcher {

std::vector<std::int64_t> carry_prices(const SlotNetwork& network, const SlotNetwork& solved,
                                       const std::vector<std::int64_t>& solved_prices);

PreparedProblem sample_of(const PreparedProblem& problem);
// True when every device type lost about the share of machines the queue lost of jobs.
bool sample_keeps_queue_per_machine(const PreparedProblem& problem, const PreparedProblem& sampled);

// O(J·G log M) for G machine groups.
std::vector<std::int64_t> greedy_prices(const PreparedProblem& problem, const SlotNetwork& network);

}  // namespace allox::matcher
