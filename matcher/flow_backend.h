// The three min-cost flow solvers behind one call (internal).
//
// Each returns an optimal SlotFlow, or feasible = false when the network cannot carry every job
// (too few levels), or an Error when the solver itself fails. They are independent
// implementations so that tests can hold each one against the others.
#pragma once

#include "core/result.h"
#include "matcher/matcher.h"
#include "matcher/slot_network.h"

namespace allox::matcher {

// LEMON NetworkSimplex (block search pivots), fills SlotFlow::slot_price. With a price hint
// (estimated slot prices, any common offset) it first solves over each job's few most promising
// arcs and adds arcs back by pricing until none has a negative reduced cost: the same optimum,
// reached on a far smaller spanning-tree problem when the hint is good.
Expected<SlotFlow> solve_with_lemon(const SlotNetwork& network,
                                    const PriceHint* price_hint = nullptr);
// Boost Graph successive shortest paths (Dijkstra with potentials): J augmentations,
// O(J·E log V).
Expected<SlotFlow> solve_with_boost(const SlotNetwork& network);
// GLPK primal simplex on the LP of the network (totally unimodular, so the basic optimum is
// integral). Never calls glp_mincost_relax4, which aborts the process in GLPK 5.0.
Expected<SlotFlow> solve_with_glpk(const SlotNetwork& network);

// Successive shortest paths over the slot side of the transportation problem (transport_flow.cc):
// Dijkstra over the S slots and the sink only (O(S²) per augmentation, jobs implicit in per
// slot-pair heaps), started from the hinted prices, so the work is proportional to how far the
// hint is from the optimum. Fills SlotFlow::slot_price and proves each answer optimal by its
// dual prices before returning it. Meant for grouped networks (few slots); O(J·S) memory.
Expected<SlotFlow> solve_with_transport(const SlotNetwork& network,
                                        const PriceHint* price_hint = nullptr);

// price_hint is used by LEMON and transport.
Expected<SlotFlow> solve_flow(const SlotNetwork& network, Backend backend,
                              const PriceHint* price_hint = nullptr);

}  // namespace allox::matcher
