// The min-cost flow network the backends solve (internal; see matcher.h for the model).
//
//   job j (supply 1) ──cost──▶ slot s ──outlet: capacity, cost──▶ sink (demand J)
//
// A slot is one position level k of a device type (grouped network) or of one machine (naive
// network); its outlets lead to the machine groups that offer that level. Job arcs are stored
// per job (CSR) so a backend can report which arc each job took. Every cost is a non-negative
// int64 and no path through the network costs more than kMaxPathTicks, which keeps node
// potentials of every backend inside int64.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/result.h"
#include "matcher/prepared_problem.h"

namespace allox::matcher {

inline constexpr std::int64_t kMaxPathTicks = std::int64_t{1} << 60;

// Most job arcs a network stores (16 bytes each, before a backend's own copy): past it, building
// one is an error rather than an allocation that fails or exhausts the machine.
inline constexpr std::size_t kMaxExplicitArcs = std::size_t{1} << 26;

struct Outlet {
  std::size_t slot = 0;
  std::size_t group = 0;  // index into PreparedProblem::groups
  std::int64_t capacity = 0;
  std::int64_t cost = 0;  // the group's residual time
};

struct SlotNetwork {
  std::size_t job_count = 0;
  std::vector<std::size_t> slot_type;   // device type of slot s
  std::vector<std::size_t> slot_level;  // position from the end, 1-based
  std::size_t slot_count = 0;
  std::vector<std::size_t> job_begin;  // arcs of job j: [job_begin[j], job_begin[j + 1])
  std::vector<std::size_t> arc_slot;
  std::vector<std::int64_t> arc_cost;
  std::vector<Outlet> outlets;                 // ordered by slot
  std::vector<std::size_t> slot_outlet_begin;  // outlets of slot s: [begin[s], begin[s + 1])
  // Implicit job arcs (grouped networks built for the transport backend): job j has an arc to
  // every slot of every type it can run on, costing slot_level × its time there, and job_begin,
  // arc_slot and arc_cost stay empty. Points at the problem the network was built from.
  const PreparedProblem* implicit = nullptr;
  std::size_t implicit_arc_count = 0;

  std::size_t node_count() const { return job_count + slot_count + 1; }
  std::size_t arc_count() const {
    return (implicit ? implicit_arc_count : arc_slot.size()) + outlets.size();
  }
};

// A backend's answer. When feasible, job_arc[j] is the arc job j takes and outlet_flow[o] the
// flow through outlet o; cost is the total. Backends that report duals (LEMON) also fill
// slot_price[s] = π(sink) − π(s): what a job must pay, beyond its arc cost, to take slot s.
struct SlotFlow {
  bool feasible = false;
  std::vector<std::size_t> job_slot;  // the slot each job took
  std::vector<std::size_t> job_arc;   // and by which arc (empty for implicit arcs)
  std::vector<std::int64_t> outlet_flow;
  std::int64_t cost = 0;
  std::vector<std::int64_t> slot_price;
  std::size_t model_arcs = 0;  // arcs the backend's model held; all of them unless LEMON priced
};

// Estimated slot prices (any common offset) for LEMON's column generation, and optionally a
// slot per job that together form a feasible assignment (kNoSlot where unknown): with those
// seeded, the first restricted model is feasible.
struct PriceHint {
  static constexpr std::size_t kNoSlot = static_cast<std::size_t>(-1);
  std::vector<std::int64_t> slot_price;
  std::vector<std::size_t> seed_slot;
};

// Grouped network with levels[t] position levels for device type t. Error if costs could
// overflow. O(J·Σ levels), or O(J·T + Σ levels · groups) with implicit job arcs (the network
// then refers to `problem`, which must outlive it).
Expected<SlotNetwork> build_level_network(const PreparedProblem& problem,
                                          const std::vector<std::size_t>& levels,
                                          bool implicit_arcs = false);

// Naive network: every group (one machine each when prepared without grouping) gets its own
// slots for all positions 1..(jobs runnable on its type).
Expected<SlotNetwork> build_naive_network(const PreparedProblem& problem);

}  // namespace allox::matcher
